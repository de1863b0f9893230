package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantErr checks that err is a bad-input error with the given cause whose
// message contains every fragment.
func wantErr(t *testing.T, what string, err, cause error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	if !errors.Is(err, ErrBadInput) {
		t.Errorf("%s: %v is not ErrBadInput", what, err)
	}
	if cause != nil && !errors.Is(err, cause) {
		t.Errorf("%s: %v is not %v", what, err, cause)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("%s: error %q does not mention %q", what, err, f)
		}
	}
}

func TestVocabErrors(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty.txt", "")
	_, err := FromVocabFile(empty, Options{})
	wantErr(t, "empty vocab", err, ErrEmptyVocab, empty)

	for _, missing := range []string{"[UNK]", "[CLS]", "[SEP]"} {
		var kept []string
		for _, tok := range []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"} {
			if tok != missing {
				kept = append(kept, tok)
			}
		}
		path := writeFile(t, dir, "vocab.txt", strings.Join(kept, "\n")+"\n")
		_, err := FromVocabFile(path, Options{})
		wantErr(t, "vocab without "+missing, err, ErrMissingToken, path, missing)
	}

	bad := writeFile(t, dir, "bad.txt", "[UNK]\n[CLS]\n[SEP]\nhel\xfflo\n")
	_, err = FromVocabFile(bad, Options{})
	wantErr(t, "invalid UTF-8 vocab", err, ErrMalformed, bad, "line 4")

	_, err = FromVocabFile(filepath.Join(dir, "absent.txt"), Options{})
	wantErr(t, "absent vocab", err, os.ErrNotExist, "absent.txt")

	// CRLF line endings and a missing final newline are fine; [PAD] is
	// optional (padding then uses id 0).
	crlf := writeFile(t, dir, "crlf.txt", "[UNK]\r\n[CLS]\r\n[SEP]\r\nhello")
	tok, err := FromVocabFile(crlf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode("hello").InputIDs; !slices.Equal(got, []int64{1, 3, 2}) {
		t.Errorf("CRLF vocab: %v", got)
	}
	if tok.VocabSize() != 4 || tok.PadID() != 0 {
		t.Errorf("CRLF vocab: VocabSize %d PadID %d", tok.VocabSize(), tok.PadID())
	}
}

// editJSON loads testdata/tokenizer.json, applies edit, and writes the
// result to a temporary file.
func editJSON(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	data, err := os.ReadFile("testdata/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, t.TempDir(), "tokenizer.json", string(out))
}

func obj(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

func TestTokenizerJSONMatchesVocab(t *testing.T) {
	// The test tokenizer.json must describe exactly testdata/vocab.txt.
	data, err := os.ReadFile("testdata/vocab.txt")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromTokenizerJSON("testdata/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	for id, s := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if got, ok := tok.ID(s); !ok || got != id {
			t.Errorf("tokenizer.json: ID(%q) = %d, %v; vocab.txt has %d", s, got, ok, id)
		}
	}
}

func TestTokenizerJSONErrors(t *testing.T) {
	cases := []struct {
		name      string
		edit      func(m map[string]any)
		cause     error
		fragments []string
	}{
		{"other model", func(m map[string]any) { obj(m, "model")["type"] = "Chars" }, ErrUnsupported, []string{"model.type", "Chars", "WordPiece"}},
		{"BPE dropout", func(m map[string]any) {
			m["model"] = map[string]any{"type": "BPE", "dropout": 0.1, "vocab": map[string]any{"a": 0}, "merges": []any{}}
		}, ErrUnsupported, []string{"model.dropout"}},
		{"bad merge", func(m map[string]any) {
			m["model"] = map[string]any{"type": "BPE", "vocab": map[string]any{"a": 0, "b": 1}, "merges": []any{"a b c"}}
		}, ErrMalformed, []string{"model.merges[0]", "a b c"}},
		{"merge outside the vocabulary", func(m map[string]any) {
			m["model"] = map[string]any{"type": "BPE", "vocab": map[string]any{"a": 0, "b": 1}, "merges": []any{[]any{"a", "b"}}}
		}, ErrMalformed, []string{"model.merges", `"ab"`}},
		{"Unigram without unk_id", func(m map[string]any) {
			m["model"] = map[string]any{"type": "Unigram", "vocab": []any{[]any{"a", -1.0}}}
		}, ErrUnsupported, []string{"model.unk_id"}},
		{"no model", func(m map[string]any) { delete(m, "model") }, ErrMalformed, []string{"model"}},
		{"empty vocab", func(m map[string]any) { obj(m, "model")["vocab"] = map[string]any{} }, ErrEmptyVocab, []string{"model.vocab"}},
		{"unknown unk", func(m map[string]any) { obj(m, "model")["unk_token"] = "<unk>" }, ErrMissingToken, []string{"<unk>"}},
		{"negative id", func(m map[string]any) { obj(obj(m, "model"), "vocab")["hello"] = -3 }, ErrMalformed, []string{"hello", "-3"}},
		{"shared id", func(m map[string]any) { obj(obj(m, "model"), "vocab")["hello"] = 6 }, ErrMalformed, []string{"share id 6"}},
		{"other normalizer", func(m map[string]any) { m["normalizer"] = map[string]any{"type": "Nmt"} }, ErrUnsupported, []string{"normalizer.type", "Nmt"}},
		{"nested normalizer", func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "NFC"}, map[string]any{"type": "Nmt"}}}
		}, ErrUnsupported, []string{"normalizer.normalizers[1].type", "Nmt"}},
		{"look-ahead regex", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\s+(?!\S)`}, "behavior": "Isolated"}
		}, ErrUnsupported, []string{"pre_tokenizer.pattern"}},
		{"other pre-tokenizer", func(m map[string]any) { m["pre_tokenizer"] = map[string]any{"type": "UnicodeScripts"} }, ErrUnsupported, []string{"UnicodeScripts"}},
		{"bad charsmap", func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Precompiled", "precompiled_charsmap": "AAAA"}
		}, ErrMalformed, []string{"normalizer", "precompiled_charsmap"}},
		{"other post-processor", func(m map[string]any) { m["post_processor"] = map[string]any{"type": "Fancy"} }, ErrUnsupported, []string{"post_processor.type", "Fancy"}},
		{"bad RoBERTa post-processor", func(m map[string]any) { m["post_processor"] = map[string]any{"type": "RobertaProcessing"} }, ErrMalformed, []string{"post_processor.cls"}},
		{"template without A", func(m map[string]any) {
			obj(m, "post_processor")["single"] = []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}}}
		}, ErrMalformed, []string{"post_processor.single"}},
		{"template with unknown special", func(m map[string]any) {
			delete(obj(obj(m, "post_processor"), "special_tokens"), "[SEP]")
		}, ErrMalformed, []string{"[SEP]"}},
		{"other truncation", func(m map[string]any) {
			m["truncation"] = map[string]any{"max_length": 16, "strategy": "Middle"}
		}, ErrUnsupported, []string{"truncation.strategy", "Middle"}},
		{"truncation too short", func(m map[string]any) {
			m["truncation"] = map[string]any{"max_length": 2, "strategy": "LongestFirst"}
		}, ErrBadOption, []string{"max_length"}},
		{"not JSON", nil, ErrMalformed, nil},
	}
	for _, c := range cases {
		var path string
		if c.edit == nil {
			path = writeFile(t, t.TempDir(), "tokenizer.json", `{"model": `)
		} else {
			path = editJSON(t, c.edit)
		}
		_, err := FromTokenizerJSON(path)
		wantErr(t, c.name, err, c.cause, append(c.fragments, path)...)
	}
	_, err := FromTokenizerJSON(filepath.Join(t.TempDir(), "absent.json"))
	wantErr(t, "absent tokenizer.json", err, os.ErrNotExist, "absent.json")
}

func TestTokenizerJSONVariants(t *testing.T) {
	// BertProcessing gives the same template.
	path := editJSON(t, func(m map[string]any) {
		m["post_processor"] = map[string]any{"type": "BertProcessing", "sep": []any{"[SEP]", 3}, "cls": []any{"[CLS]", 2}}
	})
	tok, err := FromTokenizerJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, "BertProcessing pair", tok.EncodePair("hello", "world"),
		Encoding{[]int64{idCLS, idHello, idSEP, idWorld, idSEP}, []int64{1, 1, 1, 1, 1}, []int64{0, 0, 0, 1, 1}, nil, nil, nil})

	// A cased normalizer without CJK handling, truncation, a padding id,
	// and added tokens: "<Raw>" matched as written, "Playful" matched after
	// normalisation; "hello中文" is one word. Their ids are the library's:
	// after the 54 tokens of the vocabulary, whatever the file says.
	path = editJSON(t, func(m map[string]any) {
		m["normalizer"] = map[string]any{"type": "BertNormalizer", "lowercase": false, "handle_chinese_chars": false}
		m["truncation"] = map[string]any{"max_length": 6, "strategy": "LongestFirst", "direction": "Right", "stride": 0}
		m["padding"] = map[string]any{"pad_id": 4}
		m["added_tokens"] = append(m["added_tokens"].([]any),
			map[string]any{"id": 60, "content": "<Raw>", "normalized": false},
			map[string]any{"id": 61, "content": "Playful", "normalized": true})
	})
	tok, err = FromTokenizerJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Tokenize("Hello<Raw>hello中文 Playful"), []string{"Hello", "<Raw>", "[UNK]", "Playful"}; !slices.Equal(got, want) {
		t.Errorf("cased with added tokens: %q, want %q", got, want)
	}
	if got, want := tok.Tokenize("<raw>"), []string{"[UNK]", "[UNK]", "[UNK]"}; !slices.Equal(got, want) {
		t.Errorf("raw added token is case sensitive: %q, want %q", got, want)
	}
	if tok.VocabSize() != 56 || tok.MaxLength() != 6 || tok.PadID() != 4 {
		t.Errorf("VocabSize %d MaxLength %d PadID %d, want 56, 6, 4", tok.VocabSize(), tok.MaxLength(), tok.PadID())
	}
	if id, ok := tok.ID("<Raw>"); !ok || id != 54 {
		t.Errorf("ID(<Raw>) = %d, %v", id, ok)
	}
	uncased := editJSON(t, func(m map[string]any) {
		m["added_tokens"] = append(m["added_tokens"].([]any), map[string]any{"id": 61, "content": "Playful", "normalized": true})
	})
	tok, err = FromTokenizerJSON(uncased)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Tokenize("PLAYFUL play"), []string{"Playful", "play"}; !slices.Equal(got, want) {
		t.Errorf("normalised added token: %q, want %q", got, want)
	}
}

func TestLoad(t *testing.T) {
	vocab, err := os.ReadFile("testdata/vocab.txt")
	if err != nil {
		t.Fatal(err)
	}
	tokJSON, err := os.ReadFile("testdata/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}

	// vocab.txt alone: uncased, as BertTokenizer defaults to.
	dir := t.TempDir()
	writeFile(t, dir, "vocab.txt", string(vocab))
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Tokenize("HELLO"); !slices.Equal(got, []string{"hello"}) {
		t.Errorf("Load vocab.txt: %q", got)
	}

	// tokenizer_config.json turns lowercasing off and sets the length.
	writeFile(t, dir, "tokenizer_config.json", `{"do_lower_case": false, "model_max_length": 16, "cls_token": {"content": "[CLS]"}}`)
	tok, err = Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Tokenize("Hello hello"); !slices.Equal(got, []string{"Hello", "hello"}) {
		t.Errorf("Load cased: %q", got)
	}
	if tok.MaxLength() != 16 {
		t.Errorf("Load: MaxLength %d, want 16", tok.MaxLength())
	}

	// An unbounded model_max_length (transformers writes 1e30) keeps 512.
	writeFile(t, dir, "tokenizer_config.json", `{"model_max_length": 1000000000000000019884624838656}`)
	if tok, err = Load(dir); err != nil || tok.MaxLength() != DefaultMaxLength {
		t.Errorf("Load with unbounded model_max_length: %v", err)
	}

	// tokenizer.json wins over vocab.txt and the config's casing; the
	// config's length still applies.
	writeFile(t, dir, "tokenizer.json", string(tokJSON))
	writeFile(t, dir, "tokenizer_config.json", `{"do_lower_case": false, "model_max_length": 16}`)
	if tok, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	if got := tok.Tokenize("HELLO"); !slices.Equal(got, []string{"hello"}) || tok.MaxLength() != 16 {
		t.Errorf("Load tokenizer.json: %q, MaxLength %d", got, tok.MaxLength())
	}

	bad := writeFile(t, dir, "tokenizer_config.json", `{"do_lower_case": "yes"}`)
	_, err = Load(dir)
	wantErr(t, "malformed tokenizer_config.json", err, ErrMalformed, bad)

	_, err = Load(t.TempDir())
	wantErr(t, "empty directory", err, nil, "no tokenizer.json, vocab.txt, sentencepiece.bpe.model, spiece.model, spm.model or vocab.json with merges.txt")
}

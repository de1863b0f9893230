package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeSlowBPE writes the vocab.json and merges.txt of a byte-level BPE
// tokenizer.json (the oracle variant v) into dir as transformers'
// save_vocabulary does (indented JSON with sorted keys; "#version: 0.2",
// then one merge per line), plus the named extra files, and returns the
// variant's tokenizer.json, which the files must tokenize like.
func writeSlowBPE(t *testing.T, dir string, v oracleVariant, files map[string]string) string {
	t.Helper()
	file := variantFile(t, t.TempDir(), v)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Model struct {
			Vocab  map[string]int `json:"vocab"`
			Merges [][2]string    `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	vocab, err := json.MarshalIndent(m.Model.Vocab, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var merges strings.Builder
	merges.WriteString("#version: 0.2\n")
	for _, mg := range m.Model.Merges {
		merges.WriteString(mg[0] + " " + mg[1] + "\n")
	}
	writeTemp(t, dir, "vocab.json", append(vocab, '\n'))
	writeTemp(t, dir, "merges.txt", []byte(merges.String()))
	for name, content := range files {
		writeTemp(t, dir, name, []byte(content))
	}
	return file
}

// robertaSaved is tokenizer_config.json as transformers 4.4x saves
// RobertaTokenizer (roberta-base's, with the oracle vocabulary's <mask> id).
const robertaSaved = `{
  "add_prefix_space": false,
  "added_tokens_decoder": {
    "0": {"content": "<s>", "lstrip": false, "normalized": true, "rstrip": false, "single_word": false, "special": true},
    "1": {"content": "<pad>", "lstrip": false, "normalized": true, "rstrip": false, "single_word": false, "special": true},
    "2": {"content": "</s>", "lstrip": false, "normalized": true, "rstrip": false, "single_word": false, "special": true},
    "3": {"content": "<unk>", "lstrip": false, "normalized": true, "rstrip": false, "single_word": false, "special": true},
    "3260": {"content": "<mask>", "lstrip": true, "normalized": false, "rstrip": false, "single_word": false, "special": true}
  },
  "bos_token": "<s>", "clean_up_tokenization_spaces": true, "cls_token": "<s>", "eos_token": "</s>", "errors": "replace",
  "mask_token": "<mask>", "model_max_length": 512, "pad_token": "<pad>", "sep_token": "</s>",
  "tokenizer_class": "RobertaTokenizer", "trim_offsets": true, "unk_token": "<unk>"
}`

// TestByteLevelBPEFiles: vocab.json and merges.txt, in the layouts
// RoBERTa fine-tunes and DeBERTa v1 checkpoints ship, tokenize exactly as
// the tokenizer.json transformers converts them to (the oracle variants,
// which TestOracle checks against the tokenizers library): ids, token
// types and offsets on the oracle corpus, texts and pairs; and what
// ReadSource embeds rebuilds the same tokenizer.
func TestByteLevelBPEFiles(t *testing.T) {
	roberta := oracleVariant{name: "roberta-base", base: "roberta.json"}
	deberta := oracleVariant{name: "deberta-v1", base: "roberta.json", edit: debertaV1Edit}
	cases := []struct {
		name  string
		from  oracleVariant // the files' vocabulary and merges
		files map[string]string
		want  oracleVariant // what they must tokenize like
	}{
		{"roberta-base saved by transformers 4", roberta, map[string]string{"tokenizer_config.json": robertaSaved,
			"special_tokens_map.json": `{"bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>", "mask_token": {"content": "<mask>", "lstrip": true, "normalized": false, "rstrip": false, "single_word": false}, "pad_token": "<pad>", "sep_token": "</s>", "unk_token": "<unk>"}`},
			roberta},
		// Older fine-tunes: no tokenizer_config.json, config.json says roberta.
		{"roberta fine-tune with config.json only", roberta, map[string]string{"config.json": `{"model_type": "roberta"}`}, roberta},
		{"roberta add_prefix_space", roberta, map[string]string{"tokenizer_config.json": `{"tokenizer_class": "RobertaTokenizerFast", "add_prefix_space": true}`},
			oracleVariant{"roberta-prefix-space", "roberta.json", func(m map[string]any) {
				obj(m, "pre_tokenizer")["add_prefix_space"] = true
				obj(m, "post_processor")["add_prefix_space"] = true
			}}},
		{"roberta model_max_length", roberta, map[string]string{"tokenizer_config.json": `{"tokenizer_class": "RobertaTokenizer", "model_max_length": 24}`},
			oracleVariant{"roberta-24", "roberta.json", func(m map[string]any) {
				m["truncation"] = map[string]any{"max_length": 24, "strategy": "LongestFirst", "direction": "Right", "stride": 0}
			}}},
		// A token only added_tokens.json knows, with the next id.
		{"roberta added_tokens.json", roberta, map[string]string{"config.json": `{"model_type": "roberta"}`, "added_tokens.json": `{"<mask>": 3260, "fine": 3261}`},
			oracleVariant{"roberta-added", "roberta.json", func(m map[string]any) {
				m["added_tokens"] = append(m["added_tokens"].([]any), map[string]any{"id": 3261, "content": "fine", "single_word": false,
					"lstrip": false, "rstrip": false, "normalized": true, "special": false})
			}}},
		// microsoft/deberta-base: tokenizer_config.json without a class.
		{"deberta-base", deberta, map[string]string{"config.json": `{"model_type": "deberta"}`, "tokenizer_config.json": `{"do_lower_case": false, "vocab_type": "gpt2"}`}, deberta},
		{"deberta class", deberta, map[string]string{"tokenizer_config.json": `{"tokenizer_class": "DebertaTokenizer", "mask_token": {"content": "[MASK]", "lstrip": true, "rstrip": false, "normalized": true, "single_word": false}}`}, deberta},
	}
	items := oracleCorpus(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSlowBPE(t, dir, c.from, c.files)
			got, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			want, err := FromTokenizerJSON(variantFile(t, t.TempDir(), c.want))
			if err != nil {
				t.Fatal(err)
			}
			src, err := ReadSource(dir)
			if err != nil {
				t.Fatal(err)
			}
			if src.Kind != SourceByteLevelBPE || src.Name != "vocab.json" {
				t.Fatalf("ReadSource: kind %q name %q", src.Kind, src.Name)
			}
			rebuilt, err := FromSource(src)
			if err != nil {
				t.Fatal(err)
			}
			fromFile, err := LoadFile(filepath.Join(dir, "vocab.json"))
			if err != nil {
				t.Fatal(err)
			}
			if got.MaxLength() != want.MaxLength() || rebuilt.MaxLength() != want.MaxLength() {
				t.Errorf("MaxLength %d, rebuilt %d, want %d", got.MaxLength(), rebuilt.MaxLength(), want.MaxLength())
			}
			bad := 0
			for i, it := range items {
				w := encodeItemOffsets(want, it)
				for name, tok := range map[string]*Tokenizer{"Load": got, "FromSource": rebuilt, "LoadFile": fromFile} {
					if name != "Load" && i%8 != 0 {
						continue // the three are built from the same bytes: a sample shows it
					}
					e := encodeItemOffsets(tok, it)
					if slices.Equal(e.InputIDs, w.InputIDs) && slices.Equal(e.TokenTypeIDs, w.TokenTypeIDs) && slices.Equal(e.Offsets, w.Offsets) {
						continue
					}
					if bad++; bad <= 5 {
						t.Errorf("input %d %q (pair %v), %s:\n got %v types %v offsets %v\nwant %v types %v offsets %v", i, it.Text, it.TextPair, name,
							e.InputIDs, e.TokenTypeIDs, e.Offsets, w.InputIDs, w.TokenTypeIDs, w.Offsets)
					}
				}
			}
			t.Logf("%d inputs, %d differ", len(items), bad)
		})
	}
}

// TestByteLevelBPEMask: the mask token takes the space before it and
// [CLS]/<s> written in the text are the special tokens, in both forms.
func TestByteLevelBPEMask(t *testing.T) {
	for _, c := range []struct {
		v          oracleVariant
		config     string
		cls, mask  string
		pairTypeID int64
	}{
		{oracleVariant{name: "roberta", base: "roberta.json"}, `{"model_type": "roberta"}`, "<s>", "<mask>", 0},
		{oracleVariant{name: "deberta", base: "roberta.json", edit: debertaV1Edit}, `{"model_type": "deberta"}`, "[CLS]", "[MASK]", 1},
	} {
		dir := t.TempDir()
		writeSlowBPE(t, dir, c.v, map[string]string{"config.json": c.config})
		tok, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		cls, _ := tok.ID(c.cls)
		mask, _ := tok.ID(c.mask)
		e := tok.Encode(c.cls + "a film " + c.mask + ".")
		if e.InputIDs[1] != int64(cls) {
			t.Errorf("%s: %q in the text is not the special token: %v", c.v.name, c.cls, e.InputIDs)
		}
		if e.InputIDs[len(e.InputIDs)-3] != int64(mask) {
			t.Errorf("%s: %q after a space is not the mask token: %v", c.v.name, c.mask, e.InputIDs)
		}
		withSpace, withoutSpace := tok.Encode("film "+c.mask), tok.Encode("film"+c.mask)
		if !slices.Equal(withSpace.InputIDs, withoutSpace.InputIDs) {
			t.Errorf("%s: the mask token does not take the space before it: %v vs %v", c.v.name, withSpace.InputIDs, withoutSpace.InputIDs)
		}
		p := tok.EncodePair("a", "b")
		if last := p.TokenTypeIDs[len(p.TokenTypeIDs)-1]; last != c.pairTypeID {
			t.Errorf("%s: the second text's token type is %d, want %d", c.v.name, last, c.pairTypeID)
		}
	}
}

// TestByteLevelBPEBadInput: each broken or unsupported layout is a
// bad-input error naming the file and what is wrong in it.
func TestByteLevelBPEBadInput(t *testing.T) {
	roberta := oracleVariant{name: "roberta", base: "roberta.json"}
	robertaType := `{"model_type": "roberta"}`
	cases := []struct {
		name   string
		files  map[string]string // written after the good files; "" removes one
		cause  error
		file   string
		object string
		msg    string
	}{
		{"no merges.txt", map[string]string{"config.json": robertaType, "merges.txt": ""}, ErrMalformed, "merges.txt", "", "needs its merges.txt"},
		{"three tokens on a line", map[string]string{"config.json": robertaType, "merges.txt": "#version: 0.2\nĠ t\nĠ a x\n"}, ErrMalformed, "merges.txt", "line 3", "want two tokens, got 3"},
		{"merge of unknown tokens", map[string]string{"config.json": robertaType, "merges.txt": "#version: 0.2\nĠ t\nzz q\n"}, ErrMalformed, "merges.txt", "line 3", `"zz" is not in vocab.json`},
		{"vocab.json not an object", map[string]string{"config.json": robertaType, "vocab.json": `["a", "b"]`}, ErrMalformed, "vocab.json", "", "want an object of token ids"},
		{"negative id", map[string]string{"config.json": robertaType, "vocab.json": `{"a": -1}`}, ErrMalformed, "vocab.json", `"a"`, "id -1"},
		{"duplicate id", map[string]string{"config.json": robertaType, "vocab.json": `{"a": 0, "b": 0}`}, ErrMalformed, "vocab.json", `"b"`, `id 0 is "a"'s too`},
		{"empty vocab", map[string]string{"config.json": robertaType, "vocab.json": `{}`}, ErrEmptyVocab, "vocab.json", "", ""},
		{"GPT-2's class", map[string]string{"tokenizer_config.json": `{"tokenizer_class": "GPT2Tokenizer"}`}, ErrUnsupported, "tokenizer_config.json", "tokenizer_class", `"GPT2Tokenizer"`},
		{"nothing says whose", nil, ErrUnsupported, "vocab.json", "", "no tokenizer_class"},
		{"another model type", map[string]string{"config.json": `{"model_type": "gpt2"}`}, ErrUnsupported, "config.json", "model_type", `"gpt2"`},
		{"mask token outside the vocabulary", map[string]string{"config.json": robertaType, "tokenizer_config.json": `{"mask_token": "<MASK2>"}`},
			ErrMissingToken, "tokenizer_config.json", "mask_token", `"<MASK2>" is in neither vocab.json nor added_tokens.json`},
		{"special_tokens_map.json's token outside the vocabulary", map[string]string{"config.json": robertaType, "special_tokens_map.json": `{"cls_token": {"content": "[CLS]"}}`},
			ErrMissingToken, "special_tokens_map.json", "cls_token", `"[CLS]"`},
		{"added token id taken", map[string]string{"config.json": robertaType, "added_tokens.json": `{"<new>": 5}`}, ErrMalformed, "added_tokens.json", `"<new>"`, "which vocab.json gives"},
		{"added_tokens_decoder id differs", map[string]string{"config.json": robertaType, "tokenizer_config.json": `{"added_tokens_decoder": {"7": {"content": "<s>"}}}`},
			ErrMalformed, "tokenizer_config.json", "added_tokens_decoder.7", "has id 7 here and 0"},
		{"add_prefix_space not a bool", map[string]string{"tokenizer_config.json": `{"tokenizer_class": "RobertaTokenizer", "add_prefix_space": "yes"}`},
			ErrMalformed, "tokenizer_config.json", "add_prefix_space", "want true or false"},
		{"DeBERTa without [CLS]", map[string]string{"config.json": `{"model_type": "deberta"}`, "tokenizer_config.json": `{"cls_token": "<s>", "sep_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>", "bos_token": "<s>", "eos_token": "</s>"}`},
			ErrMissingToken, "vocab.json", "[CLS]", "DebertaTokenizer puts [CLS]"},
		{"merges.txt not UTF-8", map[string]string{"config.json": robertaType, "merges.txt": "#version: 0.2\n\xff \xfe\n"}, ErrMalformed, "merges.txt", "", "not UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSlowBPE(t, dir, roberta, nil)
			for name, content := range c.files {
				path := filepath.Join(dir, name)
				if content == "" {
					if err := os.Remove(path); err != nil {
						t.Fatal(err)
					}
					continue
				}
				writeTemp(t, dir, name, []byte(content))
			}
			for _, load := range []func() error{
				func() error { _, err := Load(dir); return err },
				func() error { _, err := LoadFile(filepath.Join(dir, "vocab.json")); return err },
			} {
				err := load()
				var ie *InputError
				if !errors.Is(err, ErrBadInput) || !errors.Is(err, c.cause) || !errors.As(err, &ie) {
					t.Fatalf("got %v, want a bad-input error caused by %v", err, c.cause)
				}
				if ie.File != filepath.Join(dir, c.file) || ie.Object != c.object || !strings.Contains(err.Error(), c.msg) {
					t.Errorf("got file %q object %q: %v\nwant file %s, object %q, message containing %q", ie.File, ie.Object, err, c.file, c.object, c.msg)
				}
			}
		})
	}
}

// FuzzByteLevelBPE: any vocab.json and merges.txt load or are refused as
// bad input, and what loads encodes within its invariants.
func FuzzByteLevelBPE(f *testing.F) {
	f.Add(`{"<s>": 0, "</s>": 1, "<pad>": 2, "<unk>": 3, "<mask>": 4, "a": 5, "b": 6, "ab": 7, "Ġ": 8, "Ġab": 9}`, "#version: 0.2\na b\nĠ ab\n")
	f.Add(`{"a": 0}`, "a a\n")
	f.Add(`{"a": 1e3}`, "")
	f.Fuzz(func(t *testing.T, vocab, merges string) {
		dir := t.TempDir()
		writeTemp(t, dir, "vocab.json", []byte(vocab))
		writeTemp(t, dir, "merges.txt", []byte(merges))
		writeTemp(t, dir, "config.json", []byte(`{"model_type": "roberta"}`))
		tok, err := Load(dir)
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("error is not bad input: %v", err)
			}
			return
		}
		cls, _ := tok.ID("<s>")
		sep, _ := tok.ID("</s>")
		for _, text := range []string{"ab ab", "<mask> b", fmt.Sprint(len(vocab))} {
			e := tok.EncodeWithOffsets(text)
			n := len(e.InputIDs)
			if n < 2 || e.InputIDs[0] != int64(cls) || e.InputIDs[n-1] != int64(sep) {
				t.Fatalf("%q: ids %v do not run from <s> %d to </s> %d", text, e.InputIDs, cls, sep)
			}
			for _, id := range e.InputIDs {
				if id < 0 || id >= int64(tok.VocabSize()) {
					t.Fatalf("%q: id %d out of range [0, %d)", text, id, tok.VocabSize())
				}
			}
			checkOffsets(t, tok, text, e)
		}
	})
}

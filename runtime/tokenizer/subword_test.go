package tokenizer

import (
	"strings"
	"testing"
)

// TestSubwordAccessors checks ContinuingSubwordPrefix and UnknownID for
// each kind of model: the prefix the file gives (WordPiece's "##" by
// default, a BPE model's only when set, none for Unigram and WordLevel)
// and the unknown token's id where the model has one.
func TestSubwordAccessors(t *testing.T) {
	specials := map[string]any{"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
	vocabWith := func(more map[string]any) map[string]any {
		v := map[string]any{}
		for k, id := range specials {
			v[k] = id
		}
		for k, id := range more {
			v[k] = id
		}
		return v
	}
	unigramVocab := []any{[]any{"[PAD]", 0.0}, []any{"[UNK]", 0.0}, []any{"[CLS]", 0.0}, []any{"[SEP]", 0.0}, []any{"[MASK]", 0.0}, []any{"▁a", -1.0}, []any{"<unk>", 0.0}}
	cases := []struct {
		name   string
		edit   func(m map[string]any) // nil: testdata/tokenizer.json as it is
		prefix string
		unk    int
		hasUnk bool
	}{
		{"WordPiece", nil, "##", 1, true},
		{"WordPiece without prefix field", func(m map[string]any) { delete(obj(m, "model"), "continuing_subword_prefix") }, "##", 1, true},
		{"WordPiece @@", func(m map[string]any) { obj(m, "model")["continuing_subword_prefix"] = "@@" }, "@@", 1, true},
		{"WordPiece other unk", func(m map[string]any) { obj(m, "model")["unk_token"] = "[MASK]" }, "##", 4, true},
		{"byte-level BPE", func(m map[string]any) {
			m["model"] = map[string]any{"type": "BPE", "vocab": vocabWith(map[string]any{"a": 5, "b": 6}), "merges": []any{}}
		}, "", 0, false},
		{"BPE with prefix and unk", func(m map[string]any) {
			m["model"] = map[string]any{"type": "BPE", "vocab": vocabWith(map[string]any{"a": 5, "##b": 6}), "merges": []any{}, "continuing_subword_prefix": "##", "unk_token": "[UNK]"}
		}, "##", 1, true},
		{"BPE empty prefix", func(m map[string]any) {
			m["model"] = map[string]any{"type": "BPE", "vocab": vocabWith(map[string]any{"a": 5}), "merges": []any{}, "continuing_subword_prefix": "", "unk_token": "[SEP]"}
		}, "", 3, true},
		{"Unigram", func(m map[string]any) {
			m["model"] = map[string]any{"type": "Unigram", "vocab": unigramVocab, "unk_id": 6}
		}, "", 6, true},
		{"WordLevel", func(m map[string]any) {
			m["model"] = map[string]any{"type": "WordLevel", "vocab": vocabWith(map[string]any{"a": 5}), "unk_token": "[UNK]"}
		}, "", 1, true},
	}
	for _, c := range cases {
		path := "testdata/tokenizer.json"
		if c.edit != nil {
			path = editJSON(t, c.edit)
		}
		tok, err := FromTokenizerJSON(path)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := tok.ContinuingSubwordPrefix(); got != c.prefix {
			t.Errorf("%s: ContinuingSubwordPrefix %q, want %q", c.name, got, c.prefix)
		}
		if id, ok := tok.UnknownID(); id != c.unk || ok != c.hasUnk {
			t.Errorf("%s: UnknownID %d, %v, want %d, %v", c.name, id, ok, c.unk, c.hasUnk)
		}
	}

	// vocab.txt: WordPiece with "##" and the unk_token option's id.
	vocab := "[PAD]\n[CLS]\n[SEP]\n<unk>\n[UNK]\nwolf\n##gang\n"
	for _, c := range []struct {
		unkToken string
		unk      int
	}{{"", 4}, {"<unk>", 3}} {
		tok, err := FromVocab(strings.NewReader(vocab), Options{UnkToken: c.unkToken})
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.ContinuingSubwordPrefix(); got != "##" {
			t.Errorf("vocab.txt: ContinuingSubwordPrefix %q, want ##", got)
		}
		if id, ok := tok.UnknownID(); id != c.unk || !ok {
			t.Errorf("vocab.txt, unk_token %q: UnknownID %d, %v, want %d, true", c.unkToken, id, ok, c.unk)
		}
		// A copy keeps them.
		wide, err := tok.WithMaxLength(64)
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := wide.UnknownID(); wide.ContinuingSubwordPrefix() != "##" || id != c.unk {
			t.Errorf("WithMaxLength copy: prefix %q, unk %d", wide.ContinuingSubwordPrefix(), id)
		}
	}
}

package tokenizer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The oracle tests compare this package with the HuggingFace tokenizers
// library (the Rust library, through its native npm build) on every input
// of oracleCorpus, for tokenizer.json files built by oracle/build.js and
// variants of them shaped like the published files.

// oracleVariant is a tokenizer.json under test: a file of
// testdata/oracle, edited.
type oracleVariant struct {
	name, base string
	edit       func(m map[string]any)
}

func oracleVariants() []oracleVariant {
	setTrunc := func(n int, strategy, direction string) func(map[string]any) {
		return func(m map[string]any) {
			m["truncation"] = map[string]any{"max_length": n, "strategy": strategy, "direction": direction, "stride": 0}
		}
	}
	return []oracleVariant{
		// all-MiniLM-L6-v2 / bge / e5: uncased BERT, truncation at 128 (MiniLM) or none.
		{"bert-uncased", "bert-uncased.json", nil},
		{"all-MiniLM-L6-v2", "bert-uncased.json", setTrunc(128, "LongestFirst", "Right")},
		{"bert-cased-bertprocessing", "bert-uncased.json", func(m map[string]any) {
			obj(m, "normalizer")["lowercase"] = false
			m["post_processor"] = map[string]any{"type": "BertProcessing", "sep": []any{"[SEP]", 3}, "cls": []any{"[CLS]", 2}}
		}},
		{"bert-nfd-sequence", "bert-uncased.json", func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
				map[string]any{"type": "NFD"}, map[string]any{"type": "Lowercase"}, map[string]any{"type": "StripAccents"},
				map[string]any{"type": "Strip", "strip_left": true, "strip_right": true}}}
			m["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "WhitespaceSplit"}, map[string]any{"type": "Punctuation", "behavior": "Isolated"},
				map[string]any{"type": "Digits", "individual_digits": true}}}
		}},
		{"bert-nfkc-whitespace-only-first", "bert-uncased.json", func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "NFKC"}, map[string]any{"type": "Lowercase"}}}
			m["pre_tokenizer"] = map[string]any{"type": "Whitespace"}
			setTrunc(40, "OnlyFirst", "Right")(m)
		}},
		{"bert-punctuation-behaviours", "bert-uncased.json", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "WhitespaceSplit"},
				map[string]any{"type": "Punctuation", "behavior": "MergedWithPrevious"},
				map[string]any{"type": "Split", "pattern": map[string]any{"String": "e"}, "behavior": "MergedWithNext", "invert": false},
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `[aeiou]+`}, "behavior": "Contiguous", "invert": true},
				map[string]any{"type": "Digits", "individual_digits": false}}}
		}},
		{"bert-added-token-options", "bert-uncased.json", func(m map[string]any) {
			m["added_tokens"] = append(m["added_tokens"].([]any),
				map[string]any{"id": 3005, "content": "hello world", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false},
				map[string]any{"id": 3006, "content": "the", "single_word": true, "lstrip": false, "rstrip": false, "normalized": false, "special": false},
				map[string]any{"id": 3007, "content": "film", "single_word": false, "lstrip": true, "rstrip": true, "normalized": false, "special": false},
				map[string]any{"id": 3008, "content": "CAFÉ", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false})
			m["post_processor"] = map[string]any{"type": "TemplateProcessing",
				"single": []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 1}}, map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}}},
				"pair": []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 1}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}},
					map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
				"special_tokens": map[string]any{"[CLS]": map[string]any{"id": "[CLS]", "ids": []any{2}, "tokens": []any{"[CLS]"}}, "[SEP]": map[string]any{"id": "[SEP]", "ids": []any{3}, "tokens": []any{"[SEP]"}}}}
		}},
		{"wordlevel", "bert-uncased.json", func(m map[string]any) {
			m["model"] = map[string]any{"type": "WordLevel", "vocab": obj(m, "model")["vocab"], "unk_token": "[UNK]"}
			m["normalizer"] = map[string]any{"type": "Lowercase"}
			m["pre_tokenizer"] = map[string]any{"type": "Whitespace"}
		}},
		// roberta-base: byte-level BPE, RobertaProcessing, <mask> lstrip.
		{"roberta-base", "roberta.json", nil},
		// DeBERTa v1 (deberta-base): the same byte-level BPE with [CLS] and
		// [SEP], as DebertaConverter makes of vocab.json and merges.txt.
		{"deberta-v1", "roberta.json", debertaV1Edit},
		{"roberta-legacy-merges", "roberta.json", func(m map[string]any) {
			mg := obj(m, "model")["merges"].([]any)
			for i, p := range mg {
				pair := p.([]any)
				mg[i] = pair[0].(string) + " " + pair[1].(string)
			}
		}},
		{"roberta-prefix-space-only-second-left", "roberta.json", func(m map[string]any) {
			obj(m, "pre_tokenizer")["add_prefix_space"] = true
			setTrunc(64, "OnlySecond", "Left")(m)
		}},
		{"gpt2-no-processor", "roberta.json", func(m map[string]any) {
			m["post_processor"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true}
		}},
		{"bpe-split-digits-ignore-merges", "roberta.json", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\p{N}{1,3}`}, "behavior": "Isolated", "invert": false},
				map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}}}
			obj(m, "model")["ignore_merges"] = true
		}},
		{"bpe-unknown-fused", "roberta.json", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Whitespace"}
			obj(m, "model")["unk_token"] = "<unk>"
			obj(m, "model")["fuse_unk"] = true
		}},
		{"bpe-unknown-unfused-suffix", "roberta.json", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "CharDelimiterSplit", "delimiter": " "}
			m["normalizer"] = map[string]any{"type": "Lowercase"}
			obj(m, "model")["unk_token"] = "<unk>"
			obj(m, "model")["byte_fallback"] = true
			obj(m, "model")["end_of_word_suffix"] = "</w>"
		}},
		{"bpe-bytelevel-normalizer", "roberta.json", func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "ByteLevel"}
			m["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"String": "Ġ"}, "behavior": "MergedWithNext", "invert": false}
		}},
		// xlm-roberta-base / multilingual-e5: Unigram, Precompiled + Metaspace.
		{"xlm-roberta-base", "xlmr.json", nil},
		{"multilingual-e5-legacy-metaspace", "xlmr.json", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁", "add_prefix_space": true}
			setTrunc(512, "LongestFirst", "Right")(m)
		}},
		{"xlmr-truncation-64", "xlmr.json", setTrunc(64, "LongestFirst", "Right")},
		{"unigram-byte-fallback", "unigram-bytes.json", nil},
		{"unigram-prepend-no-pretokenizer", "unigram-bytes.json", func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
				map[string]any{"type": "Prepend", "prepend": "▁"}, map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}}}
			m["pre_tokenizer"] = nil
		}},
		{"unigram-metaspace-no-split", "unigram-bytes.json", func(m map[string]any) {
			obj(m, "pre_tokenizer")["split"] = false
			obj(m, "pre_tokenizer")["prepend_scheme"] = "always"
		}},
		{"unigram-first-after-deletions", "unigram-bytes.json", func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
				map[string]any{"type": "Strip", "strip_left": true, "strip_right": false},
				map[string]any{"type": "Replace", "pattern": map[string]any{"String": "t"}, "content": ""}}}
		}},
		{"unigram-byte-fallback-nfkc", "unigram-bytes.json", func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
				map[string]any{"type": "NFKC"}, map[string]any{"type": "Replace", "pattern": map[string]any{"String": "``"}, "content": "\""}}}
			obj(m, "pre_tokenizer")["prepend_scheme"] = "never"
		}},
	}
}

// debertaV1Edit makes roberta.json DeBERTa v1's tokenizer.json: its
// special tokens renamed as microsoft/deberta-base's vocab.json has them
// and DebertaConverter's template, [CLS] A [SEP] B [SEP] with B's part of
// type 1.
func debertaV1Edit(m map[string]any) {
	names := map[string]string{"<s>": "[CLS]", "</s>": "[SEP]", "<pad>": "[PAD]", "<unk>": "[UNK]", "<mask>": "[MASK]"}
	vocab := obj(m, "model")["vocab"].(map[string]any)
	for from, to := range names {
		vocab[to] = vocab[from]
		delete(vocab, from)
	}
	for _, a := range m["added_tokens"].([]any) {
		tok := a.(map[string]any)
		tok["content"] = names[tok["content"].(string)]
	}
	special := func(id string, typeID int) any {
		return map[string]any{"SpecialToken": map[string]any{"id": id, "type_id": typeID}}
	}
	seq := func(id string, typeID int) any {
		return map[string]any{"Sequence": map[string]any{"id": id, "type_id": typeID}}
	}
	m["post_processor"] = map[string]any{"type": "TemplateProcessing",
		"single": []any{special("[CLS]", 0), seq("A", 0), special("[SEP]", 0)},
		"pair":   []any{special("[CLS]", 0), seq("A", 0), special("[SEP]", 0), seq("B", 1), special("[SEP]", 1)},
		"special_tokens": map[string]any{
			"[CLS]": map[string]any{"id": "[CLS]", "ids": []any{vocab["[CLS]"]}, "tokens": []any{"[CLS]"}},
			"[SEP]": map[string]any{"id": "[SEP]", "ids": []any{vocab["[SEP]"]}, "tokens": []any{"[SEP]"}},
		}}
}

// oracleDir is where oracle/ is, with its npm dependencies installed;
// the test skips without node or them.
func oracleDir(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipping: node is not installed (the oracle is the tokenizers library's npm build)")
	}
	dir, _ := filepath.Abs("oracle")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@anush008", "tokenizers")); err != nil {
		t.Skipf("skipping: the oracle's npm package is not installed; run npm ci in %s", dir)
	}
	return dir
}

type oracleOutput struct {
	IDs     []int64  `json:"ids"`
	TypeIDs []int64  `json:"type_ids"`
	Offsets [][2]int `json:"offsets"`   // in code points (the binding's unit)
	Words   []*int   `json:"words"`     // windows.js only; null for the template's tokens
	Seqs    []*int   `json:"sequences"` // windows.js only; null for the template's tokens
	Error   string   `json:"error"`
}

// runOracle encodes the corpus with the library.
func runOracle(t testing.TB, dir, tokFile, corpusFile string) []oracleOutput {
	t.Helper()
	out := filepath.Join(t.TempDir(), "oracle.jsonl")
	cmd := exec.Command("node", filepath.Join(dir, "encode.js"), tokFile, corpusFile, out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oracle on %s: %v\n%s", tokFile, err, msg)
	}
	return readJSONLines[oracleOutput](t, out)
}

// readJSONLines reads a file of one JSON value per line (the oracles'
// outputs).
func readJSONLines[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var res []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var o T
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatal(err)
		}
		res = append(res, o)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return res
}

// variantFile writes the variant's tokenizer.json into dir.
func variantFile(t testing.TB, dir string, v oracleVariant) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "oracle", v.base))
	if err != nil {
		t.Fatal(err)
	}
	if v.edit != nil {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		v.edit(m)
		if data, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
	}
	return writeTemp(t, dir, v.name+".json", data)
}

func writeCorpus(t testing.TB, dir string, items []corpusItem) string {
	t.Helper()
	var b strings.Builder
	for _, it := range items {
		line, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return writeTemp(t, dir, "corpus.jsonl", []byte(b.String()))
}

func encodeItem(tok *Tokenizer, it corpusItem) Encoding {
	if it.TextPair != nil {
		return tok.EncodePair(it.Text, *it.TextPair)
	}
	return tok.Encode(it.Text)
}

func TestOracle(t *testing.T) {
	dir := oracleDir(t)
	items := oracleCorpus(t)
	tmp := t.TempDir()
	corpus := writeCorpus(t, tmp, items)
	pairs := 0
	for _, it := range items {
		if it.TextPair != nil {
			pairs++
		}
	}
	for _, v := range oracleVariants() {
		t.Run(v.name, func(t *testing.T) {
			file := variantFile(t, tmp, v)
			want := runOracle(t, dir, file, corpus)
			if len(want) != len(items) {
				t.Fatalf("oracle gave %d encodings for %d inputs", len(want), len(items))
			}
			tok, err := FromTokenizerJSON(file)
			if err != nil {
				t.Fatal(err)
			}
			bad, refused, badOffsets := 0, 0, 0
			for i, it := range items {
				if want[i].Error != "" {
					// The library refuses the input (OnlyFirst/OnlySecond
					// cannot fit); this package falls back to LongestFirst.
					refused++
					continue
				}
				got := encodeItem(tok, it)
				withOffsets := encodeItemOffsets(tok, it)
				if !slices.Equal(withOffsets.InputIDs, got.InputIDs) || !slices.Equal(withOffsets.TokenTypeIDs, got.TokenTypeIDs) {
					t.Errorf("input %d %q: EncodeWithOffsets ids %v, Encode %v", i, it.Text, withOffsets.InputIDs, got.InputIDs)
				}
				if msg := offsetsDiff(tok, it, withOffsets, want[i]); msg != "" {
					if badOffsets++; badOffsets <= 5 {
						t.Errorf("input %d: offsets differ: %s", i, msg)
					}
				}
				if slices.Equal(got.InputIDs, want[i].IDs) && slices.Equal(got.TokenTypeIDs, want[i].TypeIDs) {
					continue
				}
				if bad++; bad <= 5 {
					pair := ""
					if it.TextPair != nil {
						pair = fmt.Sprintf(" + %q", *it.TextPair)
					}
					t.Errorf("input %d %q%s:\n got ids %v types %v\nwant ids %v types %v", i, it.Text, pair,
						got.InputIDs, got.TokenTypeIDs, want[i].IDs, want[i].TypeIDs)
				}
			}
			t.Logf("%s: %d of %d inputs (%d pairs) identical to the tokenizers library, offsets of %d, %d refused by it", v.name, len(items)-bad-refused, len(items)-refused, pairs, len(items)-badOffsets-refused, refused)
		})
	}
}

func encodeItemOffsets(tok *Tokenizer, it corpusItem) Encoding {
	if it.TextPair != nil {
		return tok.EncodePairWithOffsets(it.Text, *it.TextPair)
	}
	return tok.EncodeWithOffsets(it.Text)
}

// offsetsDiff compares e's offsets, in code points, with the library's;
// "" when they agree.
func offsetsDiff(tok *Tokenizer, it corpusItem, e Encoding, want oracleOutput) string {
	if len(e.Offsets) != len(e.InputIDs) {
		return fmt.Sprintf("%d offsets for %d tokens", len(e.Offsets), len(e.InputIDs))
	}
	got := charOffsetsOf(tok, it, e)
	for k := range got {
		if k >= len(want.Offsets) || got[k] != (Offset{want.Offsets[k][0], want.Offsets[k][1]}) {
			return fmt.Sprintf("%q pair %v: token %d (id %d): got %v want %v\n got %v\nwant %v", it.Text, it.TextPair, k, e.InputIDs[k], got[min(k, len(got)-1)], want.Offsets[min(k, len(want.Offsets)-1)], got, want.Offsets)
		}
	}
	if len(want.Offsets) != len(got) {
		return fmt.Sprintf("%d offsets, want %d", len(got), len(want.Offsets))
	}
	return ""
}

// charOffsetsOf converts e's byte offsets to code points, each token's in
// the text it came from: in a pair the template says which positions hold
// the second text's tokens.
func charOffsetsOf(tok *Tokenizer, it corpusItem, e Encoding) []Offset {
	if it.TextPair == nil {
		return CharOffsets(it.Text, e.Offsets)
	}
	ia, _, _, _ := tok.idsOffsets(it.Text)
	ib, _, _, _ := tok.idsOffsets(*it.TextPair)
	ka, kb := tok.truncatePair(ia, ib, tok.maxLen-tok.pair.numSpecial())
	out := make([]Offset, 0, len(e.Offsets))
	for _, item := range tok.pair {
		n, text := len(item.ids), it.Text
		switch item.seq {
		case 0:
			n = len(ka)
		case 1:
			n, text = len(kb), *it.TextPair
		}
		out = append(out, CharOffsets(text, e.Offsets[len(out):len(out)+n])...)
	}
	return out
}

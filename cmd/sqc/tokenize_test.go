package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// tokenizeLines parses sqc tokenize's output.
func tokenizeLines(t *testing.T, out string) []map[string][]int64 {
	t.Helper()
	var res []map[string][]int64
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m map[string][]int64
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		if len(m) != 3 || len(m["input_ids"]) != len(m["attention_mask"]) || len(m["input_ids"]) != len(m["token_type_ids"]) {
			t.Fatalf("output line %q: want input_ids, attention_mask, token_type_ids of one length", l)
		}
		res = append(res, m)
	}
	return res
}

func TestTokenize(t *testing.T) {
	oracle := filepath.Join("..", "..", "runtime", "tokenizer", "testdata", "oracle")
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("texts.txt", "Hello world!\n\n   \nCafé <mask> 中文 😀\r\n")
	jsonl := write("texts.jsonl", `{"text": "two\nlines\u0000 and a control"}`+"\n"+`{"text": "", "text_pair": "only the pair"}`+"\n"+`{"text": "a", "text_pair": null}`+"\n")
	tsv := write("pairs.tsv", "first\tsecond\n\tempty first\n")
	type input struct {
		a, b   string
		isPair bool
	}
	// A RoBERTa fine-tune's folder without tokenizer.json: vocab.json and
	// merges.txt (written from roberta.json's) tokenize as roberta.json.
	bpeDir := filepath.Join(dir, "roberta-finetune")
	writeSlowBPEFiles(t, filepath.Join(oracle, "roberta.json"), bpeDir)
	cases := []struct {
		name   string
		args   []string
		inputs []input
		want   string // the tokenizer file the output must match ("": the --tokenizer file)
	}{
		{"plain roberta", []string{"--tokenizer", filepath.Join(oracle, "roberta.json"), "--texts", plain},
			[]input{{a: "Hello world!"}, {a: ""}, {a: "   "}, {a: "Café <mask> 中文 😀"}}, ""},
		{"jsonl xlmr", []string{"--tokenizer", filepath.Join(oracle, "xlmr.json"), "--texts", jsonl},
			[]input{{a: "two\nlines\x00 and a control"}, {a: "", b: "only the pair", isPair: true}, {a: "a"}}, ""},
		{"pairs bert", []string{"--tokenizer", filepath.Join(oracle, "bert-uncased.json"), "--texts", tsv, "--pairs"},
			[]input{{a: "first", b: "second", isPair: true}, {a: "", b: "empty first", isPair: true}}, ""},
		{"sentencepiece model", []string{"--tokenizer", filepath.Join(oracle, "sentencepiece.bpe.model"), "--texts", plain},
			[]input{{a: "Hello world!"}, {a: ""}, {a: "   "}, {a: "Café <mask> 中文 😀"}}, ""},
		{"vocab.json and merges.txt beside the model", []string{"--model", bpeDir, "--texts", tsv, "--pairs"},
			[]input{{a: "first", b: "second", isPair: true}, {a: "", b: "empty first", isPair: true}}, filepath.Join(oracle, "roberta.json")},
	}
	for _, c := range cases {
		code, out, errs := runCLI(t, append([]string{"tokenize"}, c.args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, errs)
		}
		got := tokenizeLines(t, out)
		if len(got) != len(c.inputs) {
			t.Fatalf("%s: %d lines for %d inputs:\n%s", c.name, len(got), len(c.inputs), out)
		}
		var tok *tokenizer.Tokenizer
		var err error
		file := c.want
		if file == "" {
			file = c.args[1]
		}
		if strings.HasSuffix(file, ".model") {
			tok, err = tokenizer.FromSentencePieceFile(file)
		} else {
			tok, err = tokenizer.FromTokenizerJSON(file)
		}
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range c.inputs {
			want := tok.Encode(in.a)
			if in.isPair {
				want = tok.EncodePair(in.a, in.b)
			}
			if !slices.Equal(got[i]["input_ids"], want.InputIDs) || !slices.Equal(got[i]["token_type_ids"], want.TokenTypeIDs) {
				t.Errorf("%s: input %d: got %v, want %v", c.name, i, got[i], want)
			}
			for _, m := range got[i]["attention_mask"] {
				if m != 1 {
					t.Errorf("%s: input %d: attention mask %v: want no padding", c.name, i, got[i]["attention_mask"])
				}
			}
		}
	}

	bad := []struct {
		name string
		args []string
	}{
		{"no tokenizer", []string{"--texts", plain}},
		{"both", []string{"--model", dir, "--tokenizer", filepath.Join(oracle, "roberta.json"), "--texts", plain}},
		{"missing texts", []string{"--tokenizer", filepath.Join(oracle, "roberta.json"), "--texts", filepath.Join(dir, "absent.txt")}},
		{"bad jsonl", []string{"--tokenizer", filepath.Join(oracle, "roberta.json"), "--texts", write("bad.jsonl", `{"text": 3}`+"\n")}},
		{"jsonl without text", []string{"--tokenizer", filepath.Join(oracle, "roberta.json"), "--texts", write("none.jsonl", `{"txt": "a"}`+"\n")}},
		{"three columns", []string{"--tokenizer", filepath.Join(oracle, "roberta.json"), "--pairs", "--texts", write("three.tsv", "a\tb\tc\n")}},
		{"empty file", []string{"--tokenizer", filepath.Join(oracle, "roberta.json"), "--texts", write("empty.txt", "")}},
		{"bad tokenizer", []string{"--tokenizer", write("tokenizer.json", `{"model": {"type": "Chars"}}`), "--texts", plain}},
		{"model dir without tokenizer", []string{"--model", dir, "--texts", plain}},
	}
	for _, c := range bad {
		code, out, errs := runCLI(t, append([]string{"tokenize"}, c.args...)...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2, one line on stderr", c.name, code, out, errs)
		}
	}
}

// TestTokenizeModel checks that --model gives the ids sqc run feeds the
// model: those of the tokenizer beside it.
func TestTokenizeModel(t *testing.T) {
	for _, name := range testmodels.Models {
		dir := testmodels.ModelDir(t, name)
		texts := filepath.Join(t.TempDir(), "texts.txt")
		if err := os.WriteFile(texts, []byte("a gripping, well-acted film .\nit 's a mess\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI(t, "tokenize", "--model", dir, "--texts", texts)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errs)
		}
		tok, err := loadTokenizer(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range tokenizeLines(t, out) {
			want := tok.Encode([]string{"a gripping, well-acted film .", "it 's a mess"}[i])
			if !slices.Equal(l["input_ids"], want.InputIDs) {
				t.Errorf("%s: line %d: %v, want %v", name, i, l["input_ids"], want.InputIDs)
			}
		}
	}
}

// TestTokenizeOffsets checks --offsets: each line gains the byte offsets
// EncodeWithOffsets gives, and the other fields stay as without it.
func TestTokenizeOffsets(t *testing.T) {
	oracle := filepath.Join("..", "..", "runtime", "tokenizer", "testdata", "oracle")
	texts := filepath.Join(t.TempDir(), "texts.jsonl")
	if err := os.WriteFile(texts, []byte(`{"text": "Café <mask> 中文 😀"}`+"\n"+`{"text": "", "text_pair": "only the pair"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(oracle, "roberta.json")
	tok, err := tokenizer.FromTokenizerJSON(file)
	if err != nil {
		t.Fatal(err)
	}
	want := []tokenizer.Encoding{tok.EncodeWithOffsets("Café <mask> 中文 😀"), tok.EncodePairWithOffsets("", "only the pair")}
	code, out, errs := runCLI(t, "tokenize", "--tokenizer", file, "--texts", texts, "--offsets")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, l := range lines {
		var got struct {
			InputIDs []int64  `json:"input_ids"`
			Offsets  [][2]int `json:"offsets"`
		}
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if !slices.Equal(got.InputIDs, want[i].InputIDs) || len(got.Offsets) != len(want[i].Offsets) {
			t.Fatalf("line %d: %s, want ids %v offsets %v", i, l, want[i].InputIDs, want[i].Offsets)
		}
		for k, o := range want[i].Offsets {
			if got.Offsets[k] != [2]int{o.Start, o.End} {
				t.Errorf("line %d token %d: offset %v, want %v", i, k, got.Offsets[k], o)
			}
		}
	}
	// <s> and </s> are [0, 0].
	if first := want[0].Offsets; first[0] != (tokenizer.Offset{}) || first[len(first)-1] != (tokenizer.Offset{}) {
		t.Errorf("special tokens' offsets %v, want {0 0}", first)
	}
}

// writeSlowBPEFiles writes the vocab.json and merges.txt of a byte-level
// BPE tokenizer.json into dir, with a config.json saying RoBERTa: a
// RoBERTa fine-tune's folder as older transformers saved it.
func writeSlowBPEFiles(t *testing.T, tokenizerJSON, dir string) {
	t.Helper()
	data, err := os.ReadFile(tokenizerJSON)
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
	vocab, err := json.Marshal(m.Model.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	merges := "#version: 0.2\n"
	for _, mg := range m.Model.Merges {
		merges += mg[0] + " " + mg[1] + "\n"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"vocab.json": string(vocab), "merges.txt": merges, "config.json": `{"model_type": "roberta"}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

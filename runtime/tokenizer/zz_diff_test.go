package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

func TestZZDiff(t *testing.T) {
	dir := os.Getenv("TOKDIFF")
	if dir == "" {
		t.Skip()
	}
	tok, err := FromVocabFile("/work/shared/models/sst2-bert-mini/vocab.txt", Options{Lowercase: os.Getenv("CASED") != "1"})
	if err != nil {
		t.Fatal(err)
	}
	tj, err := FromTokenizerJSON("/work/shared/models/sst2-bert-mini/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	in, _ := os.Open(dir + "/inputs.jsonl")
	exp, _ := os.Open(dir + "/expected.jsonl")
	si, se := bufio.NewScanner(in), bufio.NewScanner(exp)
	si.Buffer(nil, 1<<20)
	se.Buffer(nil, 1<<20)
	bad := 0
	n := 0
	for si.Scan() && se.Scan() {
		n++
		var s string
		var want []string
		json.Unmarshal(si.Bytes(), &s)
		json.Unmarshal(se.Bytes(), &want)
		got := tok.Tokenize(s)
		if !slices.Equal(got, want) {
			bad++
			if bad < 15 {
				t.Errorf("%q:\n got  %q\n want %q", s, got, want)
			}
		}
		if g2 := tj.Tokenize(s); os.Getenv("CASED") != "1" && !slices.Equal(g2, got) {
			t.Errorf("json differs")
		}
	}
	t.Logf("%d/%d differ", bad, n)
}

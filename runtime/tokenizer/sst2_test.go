package tokenizer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// findShared returns ../shared relative to the repository root, or an
// error saying where it looked.
func findShared() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..") // runtime/tokenizer -> repo root
	dir := filepath.Join(root, "..", "shared")
	if _, err := os.Stat(filepath.Join(dir, "models", "sst2-bert-mini")); err != nil {
		return "", fmt.Errorf("test models not found at %s (../shared beside the repository root): %v", dir, err)
	}
	return dir, nil
}

// sharedDir is findShared, skipping the test when ../shared is absent.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := findShared()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	return dir
}

// readTSVColumn returns the named column of a TSV file with a header row.
func readTSVColumn(t testing.TB, path, column string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	col := slices.Index(strings.Split(lines[0], "\t"), column)
	if col < 0 {
		t.Fatalf("%s: no %q column in header %q", path, column, lines[0])
	}
	var out []string
	for i, line := range lines[1:] {
		fields := strings.Split(line, "\t")
		if col >= len(fields) {
			t.Fatalf("%s:%d: %d fields, want more than %d", path, i+2, len(fields), col)
		}
		out = append(out, fields[col])
	}
	return out
}

type referenceIDs struct {
	InputIDs      []int64 `json:"input_ids"`
	AttentionMask []int64 `json:"attention_mask"`
	TokenTypeIDs  []int64 `json:"token_type_ids"`
}

func readReference(t testing.TB, path string) []referenceIDs {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []referenceIDs
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r referenceIDs
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s:%d: %v", path, len(out)+1, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sst2Tokenizers loads the bert-base-uncased tokenizer of the test model
// every way this package can.
func sst2Tokenizers(t testing.TB, shared string) map[string]*Tokenizer {
	t.Helper()
	model := filepath.Join(shared, "models", "sst2-bert-mini")
	fromVocab, err := FromVocabFile(filepath.Join(model, "vocab.txt"), Options{Lowercase: true})
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := FromTokenizerJSON(filepath.Join(model, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(model)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*Tokenizer{"vocab.txt": fromVocab, "tokenizer.json": fromJSON, "Load": loaded}
}

func TestSST2DevMatchesReference(t *testing.T) {
	shared := sharedDir(t)
	sentences := readTSVColumn(t, filepath.Join(shared, "data", "glue-sst2", "dev.tsv"), "sentence")
	want := readReference(t, filepath.Join(shared, "models", "sst2-bert-mini", "reference", "dev.ids.jsonl"))
	if len(sentences) != 872 || len(want) != len(sentences) {
		t.Fatalf("%d dev sentences and %d references, want 872 of each", len(sentences), len(want))
	}
	for name, tok := range sst2Tokenizers(t, shared) {
		t.Run(name, func(t *testing.T) {
			if got := tok.VocabSize(); got != 30522 {
				t.Errorf("VocabSize() = %d, want 30522", got)
			}
			mismatches := 0
			for i, s := range sentences {
				got := tok.Encode(s)
				if !slices.Equal(got.InputIDs, want[i].InputIDs) ||
					!slices.Equal(got.AttentionMask, want[i].AttentionMask) ||
					!slices.Equal(got.TokenTypeIDs, want[i].TokenTypeIDs) {
					if mismatches++; mismatches <= 5 {
						t.Errorf("dev line %d %q:\n got  %v %v %v\n want %v %v %v", i+2, s,
							got.InputIDs, got.AttentionMask, got.TokenTypeIDs,
							want[i].InputIDs, want[i].AttentionMask, want[i].TokenTypeIDs)
					}
				}
			}
			if mismatches > 0 {
				t.Errorf("%d of %d dev sentences differ from the reference", mismatches, len(sentences))
			}
			// The batch path must agree with Encode, padding aside.
			batch := tok.EncodeBatch(sentences[:64], 0)
			for i, e := range batch {
				n := len(want[i].InputIDs)
				if !slices.Equal(e.InputIDs[:n], want[i].InputIDs) || !slices.Equal(e.AttentionMask[:n], want[i].AttentionMask) {
					t.Errorf("EncodeBatch row %d differs from the reference", i)
				}
			}
		})
	}
}

func TestSST2TestSetTokenizes(t *testing.T) {
	shared := sharedDir(t)
	sentences := readTSVColumn(t, filepath.Join(shared, "data", "glue-sst2", "test.tsv"), "sentence")
	if len(sentences) != 1821 {
		t.Fatalf("%d test sentences, want 1821", len(sentences))
	}
	toks := sst2Tokenizers(t, shared)
	ref := toks["vocab.txt"]
	unk, _ := ref.ID("[UNK]")
	unks := 0
	for i, s := range sentences {
		e := ref.Encode(s)
		checkInvariants(t, ref, e)
		for _, id := range e.InputIDs {
			if int(id) == unk {
				unks++
			}
		}
		for name, tok := range toks {
			if got := tok.Encode(s); !slices.Equal(got.InputIDs, e.InputIDs) {
				t.Errorf("test line %d: %s gives %v, vocab.txt %v", i+2, name, got.InputIDs, e.InputIDs)
			}
		}
	}
	t.Logf("%d test sentences, %d [UNK] tokens", len(sentences), unks)
}

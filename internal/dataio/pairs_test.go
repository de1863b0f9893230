package dataio

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

func TestReadPairs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sts := write("sts.tsv", "index\tsentence1\tsentence2\tscore\r\n0\ta man plays\ta man is playing\t4.5\n\n1\tx\t\t0\n")
	if !IsPairFile(sts) {
		t.Fatal("not recognised as a pair file")
	}
	ps, err := ReadPairs(sts)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0] != (Pair{A: "a man plays", B: "a man is playing", Score: 4.5, HasScore: true, Line: 2}) || ps[1].B != "" || ps[1].Line != 4 {
		t.Errorf("%+v", ps)
	}
	rr := write("rerank.tsv", "query\tdocument\nq\td1\nq\td2\n")
	if ps, err := ReadPairs(rr); err != nil || len(ps) != 2 || ps[1].B != "d2" || ps[0].HasScore {
		t.Errorf("%+v %v", ps, err)
	}
	single := write("single.tsv", "sentence\tlabel\nfine\t1\n")
	if IsPairFile(single) || IsPairFile(filepath.Join(dir, "absent.tsv")) || IsPairFile(write("pairs.txt", "sentence1\tsentence2\n")) {
		t.Error("not a pair file, yet recognised")
	}
	for name, s := range map[string]string{
		"header":  "sentence\tlabel\na\t1\n",
		"columns": "sentence1\tsentence2\tscore\na\tb\n",
		"score":   "sentence1\tsentence2\tscore\na\tb\tNaN\n",
		"empty":   "sentence1\tsentence2\n",
	} {
		if _, err := ReadPairs(write(name+".tsv", s)); !errors.Is(err, compiler.ErrBadInput) {
			t.Errorf("%s: %v, want a bad-input error", name, err)
		}
	}
}

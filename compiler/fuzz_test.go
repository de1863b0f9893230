package compiler

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseText: the parser must never panic; whatever parses must print
// to text that parses back to the same print, and the verifier, shape
// inference, summary and clone must not panic on it either. Seeds: the
// corpus in testdata/fuzz/FuzzParseText and every testdata/*.sqc file.
func FuzzParseText(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sqc"))
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := ParseText(src)
		if err != nil {
			if g != nil {
				t.Fatal("graph returned with an error")
			}
			return
		}
		printed := g.Text()
		g2, err := ParseText(printed)
		if err != nil {
			t.Fatalf("printed text does not parse: %v\n%s", err, printed)
		}
		if again := g2.Text(); again != printed {
			t.Fatalf("print is not a fixed point:\n%s\n---\n%s", printed, again)
		}
		_ = g.Verify()
		c := g.Clone()
		_ = g.InferShapes()
		_ = g.Summary().String()
		_ = c.SortTopological()
		c.RemoveUnused()
		_ = c.Text()
	})
}

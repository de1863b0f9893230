package dataio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadTextsTSV(t *testing.T) {
	p := write(t, "d.tsv", "label\tsentence\n1\tgood movie \n0\tbad one\n\n")
	exs, err := ReadTexts(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 2 || exs[0].Text != "good movie " || exs[0].Label != 1 || exs[1].Label != 0 || !exs[1].HasLabel || exs[1].Line != 3 {
		t.Fatalf("got %+v", exs)
	}
}

func TestReadTextsPlain(t *testing.T) {
	p := write(t, "d.txt", "one\n\n two \r\n")
	exs, err := ReadTexts(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 2 || exs[1].Text != " two " || exs[0].HasLabel {
		t.Fatalf("got %+v", exs)
	}
}

func TestReadIDs(t *testing.T) {
	p := write(t, "d.jsonl", `{"input_ids":[101,2,102],"attention_mask":[1,1,1]}`+"\n"+`{"input_ids":[101,102],"label":1}`+"\n")
	exs, err := ReadIDs(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 2 || len(exs[0].IDs) != 3 || exs[1].Mask != nil || exs[1].Label != 1 {
		t.Fatalf("got %+v", exs)
	}
}

func TestBadInputs(t *testing.T) {
	cases := []struct {
		name, file, content, want string
		read                      func(string) ([]Example, error)
		cause                     error
	}{
		{"empty text file", "e.txt", "\n\n", "no inputs", ReadTexts, nil},
		{"tsv without sentence column", "x.tsv", "a\tb\n1\t2\n", "no `sentence` column", ReadTexts, compiler.ErrMalformed},
		{"bad json", "x.jsonl", "{\"input_ids\":[1,\n", "line 1", ReadIDs, compiler.ErrMalformed},
		{"mask length", "x.jsonl", `{"input_ids":[1,2],"attention_mask":[1]}`, "attention_mask has 1 entries", ReadIDs, compiler.ErrShapeMismatch},
		{"no ids", "x.jsonl", `{"attention_mask":[1]}`, "input_ids", ReadIDs, compiler.ErrMalformed},
		{"empty jsonl", "x.jsonl", "", "no inputs", ReadIDs, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, c.file, c.content)
			_, err := c.read(p)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, compiler.ErrBadInput) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q: want bad input naming %s and saying %q", err, p, c.want)
			}
			if c.cause != nil && !errors.Is(err, c.cause) {
				t.Fatalf("error %q does not wrap %v", err, c.cause)
			}
		})
	}
	if _, err := ReadTexts(filepath.Join(t.TempDir(), "missing.txt")); !errors.Is(err, compiler.ErrBadInput) {
		t.Fatalf("missing file: %v", err)
	}
}

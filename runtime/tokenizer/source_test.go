package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSourceRebuildsLoad: for each kind of tokenizer file, the tokenizer
// FromSource rebuilds from ReadSource's bytes (what a generated package
// embeds) encodes like the one Load reads from the directory, truncation
// included, and ReadSource picks the file Load does.
func TestSourceRebuildsLoad(t *testing.T) {
	cases := map[string]string{ // file in testdata/oracle -> its name in a model directory
		"roberta.json": "tokenizer.json", "xlmr.json": "tokenizer.json",
		"sentencepiece.bpe.model": "sentencepiece.bpe.model", "spiece.model": "spiece.model",
	}
	texts := []string{"Hello, world!", "", "  déjà vu — naïve café ", "東京は晴れ 🙂", "a b c d e f g h i j k l m n o p q r s t u v w x y z"}
	for from, name := range cases {
		t.Run(from, func(t *testing.T) {
			dir := t.TempDir()
			data, err := os.ReadFile(filepath.Join("testdata", "oracle", from))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
			// model_max_length applies unless tokenizer.json truncates itself.
			if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"model_max_length": 9}`), 0o644); err != nil {
				t.Fatal(err)
			}
			want, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			src, err := ReadSource(dir)
			if err != nil {
				t.Fatal(err)
			}
			if src.Name != name || !slices.Equal(src.Data, data) {
				t.Fatalf("ReadSource picked %s (%d bytes), want %s", src.Name, len(src.Data), name)
			}
			got, err := FromSource(src)
			if err != nil {
				t.Fatal(err)
			}
			if got.MaxLength() != want.MaxLength() {
				t.Errorf("MaxLength %d, Load's %d", got.MaxLength(), want.MaxLength())
			}
			for _, text := range texts {
				a, b := got.EncodePair(text, "second"), want.EncodePair(text, "second")
				if !slices.Equal(a.InputIDs, b.InputIDs) || !slices.Equal(a.TokenTypeIDs, b.TokenTypeIDs) {
					t.Errorf("%q: FromSource %v, Load %v", text, a.InputIDs, b.InputIDs)
				}
			}
		})
	}
	if _, err := ReadSource(t.TempDir()); err == nil {
		t.Error("an empty directory has a source")
	}
}

// TestLoadFileAnyName: a tokenizer file under any name (--vocab) loads as
// the same file named as in a model directory, with the
// tokenizer_config.json beside it; the kind follows the extension, and a
// missing file is an error naming it.
func TestLoadFileAnyName(t *testing.T) {
	cases := []struct{ from, as, dirName string }{
		{"roberta.json", "my-tokenizer.json", "tokenizer.json"},
		{"spiece.model", "t5.model", "spiece.model"},
		{"../vocab.txt", "bert-base-cased-vocab.txt", "vocab.txt"},
	}
	texts := []string{"Hello, World!", "  Déjà vu — naïve café ", "東京は晴れ 🙂"}
	for _, c := range cases {
		t.Run(c.as, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "oracle", c.from))
			if err != nil {
				t.Fatal(err)
			}
			// A cased vocabulary: do_lower_case false must reach the
			// vocab.txt read under another name too.
			config := []byte(`{"model_max_length": 7, "do_lower_case": false}`)
			asFile, asDir := t.TempDir(), t.TempDir()
			for _, f := range []struct{ dir, name string }{{asFile, c.as}, {asDir, c.dirName}} {
				if err := os.WriteFile(filepath.Join(f.dir, f.name), data, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(f.dir, "tokenizer_config.json"), config, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := Load(asDir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := LoadFile(filepath.Join(asFile, c.as))
			if err != nil {
				t.Fatal(err)
			}
			if got.MaxLength() != want.MaxLength() {
				t.Errorf("MaxLength %d, Load's %d", got.MaxLength(), want.MaxLength())
			}
			for _, text := range texts {
				if a, b := got.Encode(text), want.Encode(text); !slices.Equal(a.InputIDs, b.InputIDs) {
					t.Errorf("%q: LoadFile %v, Load %v", text, a.InputIDs, b.InputIDs)
				}
			}
		})
	}
	missing := filepath.Join(t.TempDir(), "nope.txt")
	if _, err := LoadFile(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("LoadFile of a missing file: %v, want an error naming it", err)
	}
}

// TestAlbertSpieceRefused: an ALBERT checkpoint's spiece.model alone is
// refused, naming the file and key that say ALBERT (its tokenizer
// lowercases and adds [CLS]/[SEP], which the spiece.model layout does
// not), by Load and by LoadFile; with the tokenizer.json transformers
// saves beside it, Load reads that; another model's spiece.model loads.
func TestAlbertSpieceRefused(t *testing.T) {
	spiece, err := os.ReadFile(filepath.Join("testdata", "oracle", "spiece.model"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, content, key string }{
		{"config.json", `{"model_type": "albert"}`, "model_type"},
		{"tokenizer_config.json", `{"tokenizer_class": "AlbertTokenizerFast", "do_lower_case": true}`, "tokenizer_class"},
	} {
		dir := t.TempDir()
		writeTemp(t, dir, "spiece.model", spiece)
		writeTemp(t, dir, c.file, []byte(c.content))
		for what, load := range map[string]func() error{
			"Load":     func() error { _, err := Load(dir); return err },
			"LoadFile": func() error { _, err := LoadFile(filepath.Join(dir, "spiece.model")); return err },
		} {
			err := load()
			var ie *InputError
			if !errors.Is(err, ErrUnsupported) || !errors.As(err, &ie) || ie.File != filepath.Join(dir, c.file) || ie.Object != c.key {
				t.Errorf("%s with %s: %v, want unsupported naming %s's %s", what, c.file, err, c.file, c.key)
			}
		}
		roberta, err := os.ReadFile(filepath.Join("testdata", "oracle", "roberta.json"))
		if err != nil {
			t.Fatal(err)
		}
		writeTemp(t, dir, "tokenizer.json", roberta)
		if _, err := Load(dir); err != nil {
			t.Errorf("with tokenizer.json beside it: %v", err)
		}
	}
	dir := t.TempDir()
	writeTemp(t, dir, "spiece.model", spiece)
	writeTemp(t, dir, "config.json", []byte(`{"model_type": "t5"}`))
	if _, err := Load(dir); err != nil {
		t.Errorf("another model's spiece.model: %v", err)
	}
}

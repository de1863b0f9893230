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

// albertSpiece is an ALBERT-like spiece.model: the oracle's
// sentencepiece.bpe.model (a unigram model with a precompiled charsmap)
// with <pad>, [CLS], [SEP] and [MASK] appended as control pieces, as
// albert-base-v2's has them.
func albertSpiece(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "oracle", "sentencepiece.bpe.model"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"<pad>", "[CLS]", "[SEP]", "[MASK]"} {
		// ModelProto.pieces (field 1): piece (1), score (2, float 0), type (3, CONTROL).
		inner := append([]byte{0x0a, byte(len(p))}, p...)
		inner = append(inner, 0x15, 0, 0, 0, 0, 0x18, spControl)
		data = append(append(data, 0x0a, byte(len(inner))), inner...)
	}
	return data
}

// albertDir writes an ALBERT checkpoint's tokenizer files: spiece.model
// and config.json, with a tokenizer_config.json when config is not "".
func albertDir(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	writeTemp(t, dir, "spiece.model", albertSpiece(t))
	writeTemp(t, dir, "config.json", []byte(`{"model_type": "albert"}`))
	if config != "" {
		writeTemp(t, dir, "tokenizer_config.json", []byte(config))
	}
	return dir
}

// TestAlbertSpiece: an ALBERT checkpoint's spiece.model (the directory
// says ALBERT by config.json's model_type or tokenizer_config.json's
// tokenizer_class) is read as AlbertConverter makes it: lowercased
// (do_lower_case) and accent-stripped (keep_accents false) by default,
// “ and ” read as ", [CLS] A [SEP] and [CLS] A [SEP] B [SEP] with B's
// part of type 1, [MASK] taking the space before it; what ReadSource
// embeds rebuilds the same tokenizer; LoadFile reads it too.
func TestAlbertSpiece(t *testing.T) {
	dir := albertDir(t, "")
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	src, err := ReadSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	if src.Kind != SourceAlbertSentencePiece || src.Name != "spiece.model" {
		t.Fatalf("ReadSource: kind %q name %q", src.Kind, src.Name)
	}
	rebuilt, err := FromSource(src)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := LoadFile(filepath.Join(dir, "spiece.model"))
	if err != nil {
		t.Fatal(err)
	}
	ids := func(tk *Tokenizer, a string) []int64 { return tk.Encode(a).InputIDs }
	cls, _ := tok.ID("[CLS]")
	sep, _ := tok.ID("[SEP]")
	for _, c := range []struct{ a, b string }{
		{"HELLO World", "hello world"},
		{"Café déjà vu", "cafe deja vu"},
		{"``quoted''", `"quoted"`},
		{"a film [MASK].", "a film[MASK]."},
		{"two   spaces", "two spaces"},
	} {
		if got, want := ids(tok, c.a), ids(tok, c.b); !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %q's %v", c.a, got, c.b, want)
		}
	}
	e := tok.EncodePair("first text", "second")
	if e.InputIDs[0] != int64(cls) || e.InputIDs[len(e.InputIDs)-1] != int64(sep) || e.TokenTypeIDs[0] != 0 || e.TokenTypeIDs[len(e.TokenTypeIDs)-1] != 1 {
		t.Errorf("pair: ids %v types %v, want [CLS] %d first, [SEP] %d last of type 1", e.InputIDs, e.TokenTypeIDs, cls, sep)
	}
	for _, text := range []string{"Hello, world!", "A 9,000-year-old CAFÉ  ``story''", "[MASK] [CLS] x"} {
		want := tok.EncodePair(text, "B")
		for name, other := range map[string]*Tokenizer{"FromSource": rebuilt, "LoadFile": fromFile} {
			if got := other.EncodePair(text, "B"); !slices.Equal(got.InputIDs, want.InputIDs) || !slices.Equal(got.TokenTypeIDs, want.TokenTypeIDs) {
				t.Errorf("%s %q: %v, Load's %v", name, text, got.InputIDs, want.InputIDs)
			}
		}
	}
	// The settings: do_lower_case false keeps case, keep_accents true
	// keeps accents; tokenizer_class says ALBERT without config.json.
	cased, err := Load(albertDir(t, `{"do_lower_case": false, "keep_accents": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(ids(cased, "HELLO"), ids(cased, "hello")) || slices.Equal(ids(cased, "café"), ids(cased, "cafe")) {
		t.Errorf("do_lower_case false, keep_accents true: case or accents still folded")
	}
	byClass := t.TempDir()
	writeTemp(t, byClass, "spiece.model", albertSpiece(t))
	writeTemp(t, byClass, "tokenizer_config.json", []byte(`{"tokenizer_class": "AlbertTokenizer"}`))
	if src, err := ReadSource(byClass); err != nil || src.Kind != SourceAlbertSentencePiece {
		t.Errorf("tokenizer_class AlbertTokenizer: %v, %v", src, err)
	}
	// Without anything saying ALBERT, [CLS] and [SEP] pieces in a
	// spiece.model are refused (no layout read here fits them).
	plain := t.TempDir()
	writeTemp(t, plain, "spiece.model", albertSpiece(t))
	if _, err := Load(plain); !errors.Is(err, ErrUnsupported) {
		t.Errorf("ALBERT-style spiece.model without a config: %v, want unsupported", err)
	}
	// Another model's spiece.model keeps the T5 layout.
	t5 := t.TempDir()
	spiece, err := os.ReadFile(filepath.Join("testdata", "oracle", "spiece.model"))
	if err != nil {
		t.Fatal(err)
	}
	writeTemp(t, t5, "spiece.model", spiece)
	writeTemp(t, t5, "config.json", []byte(`{"model_type": "t5"}`))
	if src, err := ReadSource(t5); err != nil || src.Kind != SourceSentencePiece {
		t.Errorf("another model's spiece.model: %v, %v", src, err)
	}
}

// TestAlbertSpieceOracle: the tokenizer.json ReadSource writes for an
// ALBERT spiece.model encodes the oracle corpus in the tokenizers library
// as this package encodes it (ids, token types, offsets).
func TestAlbertSpieceOracle(t *testing.T) {
	oracle := oracleDir(t)
	src, err := ReadSource(albertDir(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	file := writeTemp(t, tmp, "albert.json", src.Data)
	items := oracleCorpus(t)
	want := runOracle(t, oracle, file, writeCorpus(t, tmp, items))
	tok, err := FromSource(src)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, it := range items {
		if want[i].Error != "" {
			continue
		}
		got := encodeItemOffsets(tok, it)
		msg := offsetsDiff(tok, it, got, want[i])
		if slices.Equal(got.InputIDs, want[i].IDs) && slices.Equal(got.TokenTypeIDs, want[i].TypeIDs) && msg == "" {
			continue
		}
		if bad++; bad <= 5 {
			t.Errorf("input %d %q: got %v types %v, want %v types %v %s", i, it.Text, got.InputIDs, got.TokenTypeIDs, want[i].IDs, want[i].TypeIDs, msg)
		}
	}
	t.Logf("%d of %d inputs identical to the tokenizers library", len(items)-bad, len(items))
}

package tokenizer

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// spOracle is Debian's python3 with the SentencePiece library, or a skip.
func spOracle(t testing.TB) string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import sentencepiece").Run(); err != nil {
		t.Skipf("skipping: %s cannot import sentencepiece (apt-get install python3-sentencepiece): %v", py, err)
	}
	return py
}

type spOutput struct {
	IDs         []int64  `json:"ids"`
	TypeIDs     []int64  `json:"type_ids"`
	Offsets     [][2]int `json:"offsets"`      // UTF-8 bytes, the C++ library's unit
	CharOffsets [][2]int `json:"char_offsets"` // code points, the Python binding's
	Skip        bool     `json:"skip"`
}

// TestSentencePieceOracle compares FromSentencePieceFile with the
// SentencePiece library on the oracle corpus, for both id layouts: the
// ids, and the offsets, in bytes and in code points, against the pieces'
// begin and end in the library's SentencePieceText.
func TestSentencePieceOracle(t *testing.T) {
	py := spOracle(t)
	items := oracleCorpus(t)
	tmp := t.TempDir()
	corpus := writeCorpus(t, tmp, items)
	for _, name := range []string{"sentencepiece.bpe.model", "spiece.model", "spm.model"} {
		t.Run(name, func(t *testing.T) {
			model := filepath.Join("testdata", "oracle", name)
			out := filepath.Join(t.TempDir(), "out.jsonl")
			if msg, err := exec.Command(py, filepath.Join("oracle", "spm_encode.py"), model, corpus, out).CombinedOutput(); err != nil {
				t.Fatalf("oracle: %v\n%s", err, msg)
			}
			want := readSPOutputs(t, out)
			if len(want) != len(items) {
				t.Fatalf("oracle gave %d outputs for %d inputs", len(want), len(items))
			}
			tok, err := FromSentencePieceFile(model)
			if err != nil {
				t.Fatal(err)
			}
			bad, badOffsets, skipped, pairs := 0, 0, 0, 0
			for i, it := range items {
				if want[i].Skip {
					skipped++
					continue
				}
				if it.TextPair != nil {
					pairs++
				}
				got := encodeItem(tok, it)
				withOffsets := encodeItemOffsets(tok, it)
				if !slices.Equal(withOffsets.InputIDs, got.InputIDs) || !slices.Equal(withOffsets.TokenTypeIDs, got.TokenTypeIDs) {
					t.Errorf("input %d %q: EncodeWithOffsets ids %v, Encode %v", i, it.Text, withOffsets.InputIDs, got.InputIDs)
				}
				if msg := spOffsetsDiff(tok, it, withOffsets, want[i]); msg != "" {
					if badOffsets++; badOffsets <= 5 {
						t.Errorf("input %d: offsets differ: %s", i, msg)
					}
				}
				if slices.Equal(got.InputIDs, want[i].IDs) && slices.Equal(got.TokenTypeIDs, want[i].TypeIDs) {
					continue
				}
				if bad++; bad <= 5 {
					t.Errorf("input %d %q (pair %v):\n got %v\nwant %v", i, it.Text, it.TextPair != nil, got.InputIDs, want[i].IDs)
				}
			}
			n := len(items) - skipped
			t.Logf("%s: %d of %d inputs (%d pairs) identical to SentencePiece in ids, %d in offsets (bytes and code points); %d with literal special tokens not compared", name, n-bad, n, pairs, n-badOffsets, skipped)
		})
	}
}

// spOffsetsDiff compares e's offsets with the library's, in bytes and in
// code points; "" when they agree.
func spOffsetsDiff(tok *Tokenizer, it corpusItem, e Encoding, want spOutput) string {
	if len(e.Offsets) != len(e.InputIDs) {
		return fmt.Sprintf("%d offsets for %d tokens", len(e.Offsets), len(e.InputIDs))
	}
	for _, unit := range []struct {
		name      string
		got, want [][2]int
	}{
		{"bytes", pairsOf(e.Offsets), want.Offsets},
		{"code points", pairsOf(charOffsetsOf(tok, it, e)), want.CharOffsets},
	} {
		if !slices.Equal(unit.got, unit.want) {
			k := 0
			for k < min(len(unit.got), len(unit.want)) && unit.got[k] == unit.want[k] {
				k++
			}
			return fmt.Sprintf("%q pair %v: in %s, first at token %d of %d (want %d):\n got %v\nwant %v\n ids %v", it.Text, it.TextPair, unit.name, k, len(unit.got), len(unit.want), unit.got, unit.want, e.InputIDs)
		}
	}
	return ""
}

func pairsOf(offs []Offset) [][2]int {
	out := make([][2]int, len(offs))
	for i, o := range offs {
		out[i] = [2]int{o.Start, o.End}
	}
	return out
}

func readSPOutputs(t testing.TB, path string) []spOutput {
	t.Helper()
	return readJSONLines[spOutput](t, path)
}

// TestSentencePieceLoad checks Load's use of the model files and the
// fairseq layout's special tokens, and the errors for bad files.
func TestSentencePieceLoad(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "oracle", "sentencepiece.bpe.model"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeTemp(t, dir, "sentencepiece.bpe.model", data)
	writeTemp(t, dir, "tokenizer_config.json", []byte(`{"model_max_length": 16}`))
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok.MaxLength() != 16 {
		t.Errorf("MaxLength %d, want tokenizer_config.json's 16", tok.MaxLength())
	}
	for tokStr, want := range map[string]int{"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": tok.VocabSize() - 1} {
		if id, ok := tok.ID(tokStr); !ok || id != want {
			t.Errorf("ID(%q) = %d, %v; want %d", tokStr, id, ok, want)
		}
	}
	if tok.PadID() != 1 {
		t.Errorf("PadID %d, want 1", tok.PadID())
	}
	// <mask> takes the space before it, as XLMRobertaTokenizer's does.
	e := tok.Encode("a <mask>")
	mask, _ := tok.ID("<mask>")
	if n := len(e.InputIDs); e.InputIDs[n-2] != int64(mask) || e.InputIDs[0] != 0 || e.InputIDs[n-1] != 2 {
		t.Errorf("Encode(\"a <mask>\") = %v", e.InputIDs)
	}
	if got := tok.Encode("a <mask>").InputIDs; slices.Equal(got, tok.Encode("a<mask>").InputIDs) == false {
		t.Errorf("lstrip: %v vs %v", got, tok.Encode("a<mask>").InputIDs)
	}

	// An ALBERT-style model (pieces [CLS] and [SEP]) is refused, not given
	// T5's layout.
	m, err := parseSentencePiece(data)
	if err != nil {
		t.Fatal(err)
	}
	m.pieces = append(m.pieces, "[CLS]", "[SEP]")
	m.scores = append(m.scores, 0, 0)
	m.types = append(m.types, spControl, spControl)
	_, err = newSentencePiece(m, spLayoutT5)
	wantErr(t, "ALBERT layout", err, ErrUnsupported, "[CLS]")

	for name, bad := range map[string][]byte{
		"truncated": data[:len(data)/2],
		"garbage":   []byte("\xff\xff\xff\xff"),
		"empty":     {},
	} {
		path := writeTemp(t, t.TempDir(), "spiece.model", bad)
		_, err := FromSentencePieceFile(path)
		wantErr(t, name, err, ErrBadInput, path)
	}
}

func execCommand(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}

// TestSentencePieceDeBERTaLayout: spm.model is read in DeBERTa's layout,
// from a file or a model directory: [CLS] A [SEP] B [SEP] with type id 1
// from B on, [MASK] (which the model lacks) after the model's pieces and
// found in text, padding with [PAD]; a model without [SEP] is refused
// naming it.
func TestSentencePieceDeBERTaLayout(t *testing.T) {
	path := filepath.Join("testdata", "oracle", "spm.model")
	tok, err := FromSentencePieceFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeTemp(t, dir, "spm.model", data)
	fromDir, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseSentencePiece(data)
	if err != nil {
		t.Fatal(err)
	}
	mask := int64(len(m.pieces))
	for _, tk := range []*Tokenizer{tok, fromDir} {
		e := tk.EncodePair("a film [MASK]", "great")
		n := len(e.InputIDs)
		if e.InputIDs[0] != 1 || e.InputIDs[n-1] != 2 || !slices.Contains(e.InputIDs, mask) {
			t.Errorf("pair ids %v: want [CLS]=1 first, [SEP]=2 last and [MASK]=%d", e.InputIDs, mask)
		}
		sep := slices.Index(e.InputIDs, 2)
		for i, ty := range e.TokenTypeIDs {
			if want := int64(min(max(i-sep, 0), 1)); ty != want {
				t.Errorf("type ids %v: want 0 through the first [SEP] (%d), 1 after", e.TokenTypeIDs, sep)
				break
			}
		}
		if id, ok := tk.ID("[PAD]"); !ok || id != 0 || tk.PadID() != 0 {
			t.Errorf("[PAD]: id %d (%v), padding id %d; want 0", id, ok, tk.PadID())
		}
	}
	var noSep []string
	for _, p := range m.pieces {
		if p != "[SEP]" {
			noSep = append(noSep, p)
		}
	}
	m.pieces = noSep
	m.scores, m.types = m.scores[:len(noSep)], append(m.types[:2], m.types[3:]...)
	_, err = newSentencePiece(m, spLayoutDeBERTa)
	wantErr(t, "no [SEP]", err, ErrMissingToken, "[SEP]")
}

// TestSentencePieceDeBERTaConfig: a tokenizer_config.json beside spm.model
// asking for DebertaV2Tokenizer's lowercasing or punctuation split, which
// sqc does not compute, is refused naming the file and the key, in a
// model directory and for the file itself; false (the defaults) loads.
func TestSentencePieceDeBERTaConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "oracle", "spm.model"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		config, key string
	}{
		{`{"do_lower_case": true}`, "do_lower_case"},
		{`{"do_lower_case": false, "split_by_punct": true}`, "split_by_punct"},
		{`{"do_lower_case": false, "split_by_punct": false}`, ""},
	} {
		dir := t.TempDir()
		writeTemp(t, dir, "spm.model", data)
		cfg := writeTemp(t, dir, "tokenizer_config.json", []byte(c.config))
		for what, load := range map[string]func() (*Tokenizer, error){
			"directory": func() (*Tokenizer, error) { return Load(dir) },
			"file":      func() (*Tokenizer, error) { return LoadFile(filepath.Join(dir, "spm.model")) },
		} {
			_, err := load()
			if c.key == "" {
				if err != nil {
					t.Errorf("%s %s: %v", c.config, what, err)
				}
				continue
			}
			wantErr(t, c.config+" "+what, err, ErrUnsupported, c.key, cfg)
		}
	}
}

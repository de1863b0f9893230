package tokenizer

import (
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"
)

// One fuzz target per tokenizer type. Each checks, for any bytes, that
// Encode and EncodePair do not panic and give well-formed encodings, and
// on the seeds, whose outputs from the reference libraries are in
// testdata/oracle/seeds.json (rewrite it with -update-seeds, which needs
// the oracles), that the ids are the library's.

var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/oracle/seeds.json from the oracles")

const seedsFile = "testdata/oracle/seeds.json"

// fuzzTokenizers are the files the fuzz targets load, by type.
var fuzzTokenizers = map[string]string{
	"wordpiece":     "bert-uncased.json",
	"bpe":           "roberta.json",
	"unigram":       "xlmr.json",
	"unigram-bytes": "unigram-bytes.json",
	"sentencepiece": "sentencepiece.bpe.model",
}

// fuzzSeeds are the seed inputs: a sample of the oracle corpus, each used
// as a single text and, cut in half, as a pair.
func fuzzSeeds(t testing.TB) []string {
	items := oracleCorpus(t)
	r := rand.New(rand.NewPCG(7, 7))
	var seeds []string
	for range 60 {
		it := items[r.IntN(len(items))]
		if len(it.Text) < 300 {
			seeds = append(seeds, it.Text)
		}
	}
	return append(seeds, "", " ", "<mask>", "[CLS] x [SEP]", "\xff\xfeinvalid", "a\u0301\u0301\u0301")
}

// seedOutput is the reference encoding of a seed, single and as a pair.
type seedOutput struct {
	Single []int64 `json:"single"`
	Pair   []int64 `json:"pair"`
}

func loadFuzzTokenizer(t testing.TB, file string) *Tokenizer {
	t.Helper()
	path := filepath.Join("testdata", "oracle", file)
	var tok *Tokenizer
	var err error
	if filepath.Ext(file) == ".model" {
		tok, err = FromSentencePieceFile(path)
	} else {
		tok, err = FromTokenizerJSON(path)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// readSeeds reads the reference outputs: type -> seed text -> output.
func readSeeds(t testing.TB) map[string]map[string]seedOutput {
	t.Helper()
	data, err := os.ReadFile(seedsFile)
	if err != nil {
		t.Fatalf("%v (run go test -run TestFuzzSeeds -update-seeds with the oracles installed)", err)
	}
	var m map[string]map[string]seedOutput
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFuzzSeeds rewrites the seed outputs from the oracles with
// -update-seeds; without it, checks the file covers every seed.
func TestFuzzSeeds(t *testing.T) {
	seeds := fuzzSeeds(t)
	if !*updateSeeds {
		m := readSeeds(t)
		for typ := range fuzzTokenizers {
			if len(m[typ]) == 0 {
				t.Errorf("%s: no seed outputs in %s", typ, seedsFile)
			}
		}
		return
	}
	dir := oracleDir(t)
	py := spOracle(t)
	var items []corpusItem
	for _, s := range seeds {
		if !utf8.ValidString(s) { // the oracles see valid UTF-8 only
			continue
		}
		a, b := splitSeed(s)
		items = append(items, corpusItem{Text: s}, corpusItem{Text: a, TextPair: &b})
	}
	tmp := t.TempDir()
	corpus := writeCorpus(t, tmp, items)
	out := map[string]map[string]seedOutput{}
	for typ, file := range fuzzTokenizers {
		path := filepath.Join("testdata", "oracle", file)
		var ids [][]int64
		if filepath.Ext(file) == ".model" {
			res := filepath.Join(tmp, typ+".jsonl")
			cmdOut, err := execCommand(py, filepath.Join("oracle", "spm_encode.py"), path, corpus, res)
			if err != nil {
				t.Fatalf("%v\n%s", err, cmdOut)
			}
			for _, o := range readSPOutputs(t, res) {
				if o.Skip {
					ids = append(ids, nil)
				} else {
					ids = append(ids, o.IDs)
				}
			}
		} else {
			for _, o := range runOracle(t, dir, path, corpus) {
				ids = append(ids, o.IDs)
			}
		}
		out[typ] = map[string]seedOutput{}
		for i := 0; i < len(items); i += 2 {
			if ids[i] != nil && ids[i+1] != nil {
				out[typ][items[i].Text] = seedOutput{Single: ids[i], Pair: ids[i+1]}
			}
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seedsFile, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// splitSeed cuts a seed into a pair at its middle rune.
func splitSeed(s string) (string, string) {
	r := []rune(s)
	return string(r[:len(r)/2]), string(r[len(r)/2:])
}

// fuzzType is the body of each fuzz target.
func fuzzType(f *testing.F, typ string) {
	tok := loadFuzzTokenizer(f, fuzzTokenizers[typ])
	want := readSeeds(f)[typ]
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		e := tok.Encode(text)
		a, b := splitSeed(text)
		p := tok.EncodePair(a, b)
		for _, enc := range []Encoding{e, p} {
			n := len(enc.InputIDs)
			if len(enc.AttentionMask) != n || len(enc.TokenTypeIDs) != n || n > tok.MaxLength() || n == 0 {
				t.Fatalf("%q: lengths %d %d %d, MaxLength %d", text, n, len(enc.AttentionMask), len(enc.TokenTypeIDs), tok.MaxLength())
			}
			for i, id := range enc.InputIDs {
				if id < 0 || id >= int64(tok.VocabSize()) || enc.AttentionMask[i] != 1 || enc.TokenTypeIDs[i] < 0 || enc.TokenTypeIDs[i] > 1 {
					t.Fatalf("%q: position %d: id %d mask %d type %d", text, i, id, enc.AttentionMask[i], enc.TokenTypeIDs[i])
				}
			}
		}
		checkOffsets(t, tok, text, tok.EncodeWithOffsets(text))
		if po := tok.EncodePairWithOffsets(a, b); !slices.Equal(po.InputIDs, p.InputIDs) || len(po.Offsets) != len(p.InputIDs) {
			t.Fatalf("%q: EncodePairWithOffsets ids %v, EncodePair %v (%d offsets)", text, po.InputIDs, p.InputIDs, len(po.Offsets))
		}
		if !slices.Equal(tok.Encode(text).InputIDs, e.InputIDs) {
			t.Fatalf("%q: Encode is not deterministic", text)
		}
		if w, ok := want[text]; ok {
			if !slices.Equal(e.InputIDs, w.Single) || !slices.Equal(p.InputIDs, w.Pair) {
				t.Fatalf("%q: got %v / %v, the reference library %v / %v", text, e.InputIDs, p.InputIDs, w.Single, w.Pair)
			}
		}
	})
}

func FuzzWordPiece(f *testing.F)     { fuzzType(f, "wordpiece") }
func FuzzBPE(f *testing.F)           { fuzzType(f, "bpe") }
func FuzzUnigram(f *testing.F)       { fuzzType(f, "unigram") }
func FuzzUnigramBytes(f *testing.F)  { fuzzType(f, "unigram-bytes") }
func FuzzSentencePiece(f *testing.F) { fuzzType(f, "sentencepiece") }

package tokenizer

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEncodePairWindowsOracle: EncodePairWindows gives, for every pair of
// the oracle corpus made into a question (a pair's first text, or a
// text's first words) and a context (the longer text), the windows the
// tokenizers library gives with truncation OnlySecond, a stride and
// overflowing tokens (oracle/windows.js): ids, token types and offsets,
// window by window, and refuses the pairs it refuses. WordPiece,
// byte-level BPE (trim_offsets) and Unigram, two window sizes.
func TestEncodePairWindowsOracle(t *testing.T) {
	dir := oracleDir(t)
	items := oracleCorpus(t)
	var pairs []corpusItem
	for i, it := range items {
		if i%11 != 0 {
			continue
		}
		q, c := it.Text, items[(i*31+5)%len(items)].Text
		if it.TextPair != nil {
			c = *it.TextPair
		} else if f := strings.Fields(q); len(f) > 6 {
			q = strings.Join(f[:1+i%6], " ")
		}
		pairs = append(pairs, corpusItem{Text: q, TextPair: &c})
	}
	tmp := t.TempDir()
	corpus := writeCorpus(t, tmp, pairs)
	for _, base := range []string{"bert-uncased.json", "roberta.json", "xlmr.json"} {
		for _, w := range [][2]int{{40, 10}, {96, 32}} {
			t.Run(base+"/"+strconv.Itoa(w[0]), func(t *testing.T) {
				file := filepath.Join("testdata", "oracle", base)
				tok, err := FromTokenizerJSON(file)
				if err != nil {
					t.Fatal(err)
				}
				want := runWindowsOracle(t, dir, file, corpus, w[0], w[1])
				if len(want) != len(pairs) {
					t.Fatalf("oracle gave %d answers for %d pairs", len(want), len(pairs))
				}
				bad, refused, windows := 0, 0, 0
				for i, p := range pairs {
					got, err := tok.EncodePairWindows(p.Text, *p.TextPair, w[0], w[1])
					if (err != nil) != (want[i].Error != "") {
						if bad++; bad <= 5 {
							t.Errorf("pair %d (%q, %q): error %v, library %q", i, p.Text, *p.TextPair, err, want[i].Error)
						}
						continue
					}
					if err != nil {
						if !errors.Is(err, ErrNoRoom) {
							t.Errorf("pair %d: error %v does not wrap ErrNoRoom", i, err)
						}
						refused++
						continue
					}
					if msg := windowsDiff(p, secondStart(tok, p.Text), pairTypesB(tok), got, want[i].Windows); msg != "" {
						if bad++; bad <= 5 {
							t.Errorf("pair %d (%q, %d bytes of context): %s", i, p.Text, len(*p.TextPair), msg)
						}
					}
					windows += len(got)
				}
				t.Logf("%s, %d tokens, stride %d: %d of %d pairs identical to the tokenizers library (%d windows), %d refused by both",
					base, w[0], w[1], len(pairs)-bad-refused, len(pairs)-refused, windows, refused)
			})
		}
	}
}

// secondStart is the position of the second sequence's first token in
// the pair template with a first sequence of text a.
func secondStart(tok *Tokenizer, a string) int {
	ia, _, _, _ := tok.idsOffsets(a)
	n := 0
	for _, it := range tok.pair {
		switch it.seq {
		case 0:
			n += len(ia)
		case 1:
			return n
		default:
			n += len(it.ids)
		}
	}
	return n
}

// pairTypesB reports whether tok's pair template gives the second
// sequence token type 1.
func pairTypesB(tok *Tokenizer) bool {
	for _, it := range tok.pair {
		if it.seq == 1 {
			return it.typeID == 1
		}
	}
	return false
}

// windowsDiff compares EncodePairWindows' encodings of p with the
// library's, offsets in code points; the second text's tokens start at
// position first.
func windowsDiff(p corpusItem, first int, typesB bool, got []Encoding, want []oracleOutput) string {
	if len(got) != len(want) {
		return strconv.Itoa(len(got)) + " windows, library " + strconv.Itoa(len(want))
	}
	for k, e := range got {
		// The library types the second text of a window after the first 1,
		// whatever the template says (EncodePairWindows' doc): compared
		// where the template types it 1 too.
		if !slices.Equal(e.InputIDs, want[k].IDs) || (k == 0 || typesB) && !slices.Equal(e.TokenTypeIDs, want[k].TypeIDs) {
			return "window " + strconv.Itoa(k) + ": ids or types differ: got " + fmt.Sprint(e.InputIDs, e.TokenTypeIDs) + " want " + fmt.Sprint(want[k].IDs, want[k].TypeIDs)
		}
		for j, q := range e.Sequences {
			if w := want[k].Seqs[j]; (w == nil) != (q < 0) || w != nil && *w != int(q) {
				return "window " + strconv.Itoa(k) + ": sequences differ: got " + fmt.Sprint(e.Sequences)
			}
		}
		if len(e.Sequences) != len(want[k].Seqs) {
			return "window " + strconv.Itoa(k) + ": sequences differ in length"
		}
		if !sameWords(e.Words, want[k].Words, first) {
			return "window " + strconv.Itoa(k) + ": words differ: got " + fmt.Sprint(e.Words) + " want " + fmt.Sprint(want[k].Words)
		}
		for j, o := range e.Offsets {
			text := p.Text
			if j >= first {
				text = *p.TextPair
			}
			c := CharOffsets(text, []Offset{o})[0]
			if c.Start != want[k].Offsets[j][0] || c.End != want[k].Offsets[j][1] {
				return "window " + strconv.Itoa(k) + ", token " + strconv.Itoa(j) + ": offsets differ"
			}
		}
	}
	return ""
}

// sameWords reports whether got groups tokens into words as the
// library's word ids do (null for the template's tokens): the numbers may
// differ where the library counts splits that give no token, the grouping
// may not; the second text's tokens start at position first, and word
// numbers count within each text.
func sameWords(got []int32, want []*int, first int) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if (got[i] < 0) != (want[i] == nil) {
			return false
		}
		for j := range i {
			same := (i < first) == (j < first)
			if same && got[i] >= 0 && got[j] >= 0 && want[j] != nil && (got[i] == got[j]) != (*want[i] == *want[j]) {
				return false
			}
		}
	}
	return true
}

type windowsOutput struct {
	Windows []oracleOutput `json:"windows"`
	Error   string         `json:"error"`
}

// runWindowsOracle runs oracle/windows.js on the corpus.
func runWindowsOracle(t testing.TB, dir, tokFile, corpusFile string, maxLen, stride int) []windowsOutput {
	t.Helper()
	out := filepath.Join(t.TempDir(), "windows.jsonl")
	cmd := exec.Command("node", filepath.Join(dir, "windows.js"), tokFile, corpusFile, out, strconv.Itoa(maxLen), strconv.Itoa(stride))
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oracle on %s: %v\n%s", tokFile, err, msg)
	}
	return readJSONLines[windowsOutput](t, out)
}

package modelrt

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// logRow is a row of logits whose softmax is p (which sums to 1).
func logRow(p ...float64) []float32 {
	out := make([]float32, len(p))
	for i, x := range p {
		out[i] = float32(math.Log(x))
	}
	return out
}

// wordsOf encodes text with tok, tags it from one row of logits per
// position (rows[pos]) and aggregates its words with strategy.
func wordsOf(t *testing.T, tok *tokenizer.Tokenizer, text string, labels []string, rows map[int][]float32, strategy Aggregation) []TokenPrediction {
	t.Helper()
	e := tok.EncodeWithOffsets(text)
	n := len(labels)
	logits := make([]float32, len(e.InputIDs)*n)
	for pos, r := range rows {
		copy(logits[pos*n:(pos+1)*n], r)
	}
	prefix, suffix := TemplateTokens(tok)
	tags := TagTokens(logits, n, labels, e.Offsets, prefix, len(e.InputIDs)-suffix)
	return AggregateWords(tags, logits, n, labels, text, e.InputIDs, tok, strategy)
}

// word is what the tests check of a word: its label, score and span.
type word struct {
	Label      string
	Score      float64
	Start, End int
}

func checkWords(t *testing.T, name string, got []TokenPrediction, want []word) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		g, w := got[i], want[i]
		ok = g.Label == w.Label && g.Start == w.Start && g.End == w.End && math.Abs(float64(g.Score)-w.Score) < 1e-6
	}
	if !ok {
		t.Errorf("%s: got %+v, want %+v", name, got, want)
	}
}

// TestAggregateWordsStrategies: "Wolfgangs met Zoë" with a cased
// WordPiece vocabulary is [CLS] Wolf ##gang ##s met [UNK] [SEP]. The
// three pieces of Wolfgangs make one word, whose tag each strategy picks
// differently by hand:
//
//	Wolf   0.02 0.55 0.03 0.40  first: B-PER 0.55
//	##gang 0.02 0.03 0.60 0.35  max: the most confident token, B-LOC 0.60
//	##s    0.02 0.08 0.40 0.50  average: 0.02 0.22 1.03/3 1.25/3, B-ORG
//
// [UNK] (whose token is longer than "Zoë") is a word of its own. The
// template's tokens, tagged B-LOC, are not words.
func TestAggregateWordsStrategies(t *testing.T) {
	tok, err := tokenizer.FromVocab(strings.NewReader("[PAD]\n[UNK]\n[CLS]\n[SEP]\nWolf\n##gang\n##s\nmet\n"), tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const text = "Wolfgangs met Zoë"
	if ids := tok.Encode(text).InputIDs; !slices.Equal(ids, []int64{2, 4, 5, 6, 7, 1, 3}) {
		t.Fatalf("encoded %v", ids)
	}
	labels := []string{"O", "B-PER", "B-LOC", "B-ORG"}
	rows := map[int][]float32{
		0: logRow(0.01, 0.01, 0.97, 0.01),
		1: logRow(0.02, 0.55, 0.03, 0.40),
		2: logRow(0.02, 0.03, 0.60, 0.35),
		3: logRow(0.02, 0.08, 0.40, 0.50),
		4: logRow(0.90, 0.05, 0.03, 0.02),
		5: logRow(0.10, 0.70, 0.10, 0.10),
		6: logRow(0.01, 0.01, 0.97, 0.01),
	}
	zoe := word{"B-PER", 0.70, 14, 18}
	for _, c := range []struct {
		strategy Aggregation
		first    word
	}{
		{AggregateFirst, word{"B-PER", 0.55, 0, 9}},
		{AggregateMax, word{"B-LOC", 0.60, 0, 9}},
		{AggregateAverage, word{"B-ORG", 1.25 / 3, 0, 9}},
	} {
		got := wordsOf(t, tok, text, labels, rows, c.strategy)
		checkWords(t, c.strategy.String(), got, []word{c.first, {"O", 0.90, 10, 13}, zoe})
		if len(got) == 3 && (got[0].Position != 1 || got[1].Position != 4 || got[2].Position != 5) {
			t.Errorf("%s: positions %d %d %d, want 1 4 5", c.strategy, got[0].Position, got[1].Position, got[2].Position)
		}
		// Grouped as "simple" groups tokens, "met" (O) dropped.
		ents := GroupEntities(got)
		want := []Entity{{c.first.Label[2:], float32(c.first.Score), 0, 9}, {"PER", 0.70, 14, 18}}
		if len(ents) != 2 || ents[0].Group != want[0].Group || ents[1].Group != "PER" || ents[0].Start != 0 || ents[1].End != 18 {
			t.Errorf("%s: entities %+v, want %+v", c.strategy, ents, want)
		}
	}
	// The token-level strategies leave the tokens as they are.
	for _, s := range []Aggregation{AggregateSimple, AggregateNone} {
		if got := wordsOf(t, tok, text, labels, rows, s); len(got) != 5 {
			t.Errorf("%s: %d tags, want the 5 tokens", s, len(got))
		}
	}
}

// TestAggregateWordsTies: of two tokens equally confident in different
// labels, max takes the first (Python's max); average's tie between the
// same two labels goes to the lower index (numpy's argmax), as does first's
// tie within a row.
func TestAggregateWordsTies(t *testing.T) {
	tok, err := tokenizer.FromVocab(strings.NewReader("[PAD]\n[UNK]\n[CLS]\n[SEP]\nab\n##cd\nef\n"), tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	labels := []string{"B-PER", "B-LOC", "O"}
	p := math.E / (math.E + 2) // a row of logits 1, 0, 0
	rows := map[int][]float32{1: {0, 1, 0}, 2: {1, 0, 0}, 3: {1, 1, 0}}
	q := math.E / (2*math.E + 1) // 1, 1, 0
	for _, c := range []struct {
		strategy Aggregation
		want     []word
	}{
		{AggregateMax, []word{{"B-LOC", p, 0, 4}, {"B-PER", q, 5, 7}}},
		{AggregateAverage, []word{{"B-PER", (p + 1/(math.E+2)) / 2, 0, 4}, {"B-PER", q, 5, 7}}},
		{AggregateFirst, []word{{"B-LOC", p, 0, 4}, {"B-PER", q, 5, 7}}},
	} {
		checkWords(t, c.strategy.String(), wordsOf(t, tok, "abcd ef", labels, rows, c.strategy), c.want)
	}
	// The same rows the other way round: max still takes the first.
	rows[1], rows[2] = rows[2], rows[1]
	checkWords(t, "max, swapped", wordsOf(t, tok, "abcd ef", labels, rows, AggregateMax), []word{{"B-PER", p, 0, 4}, {"B-PER", q, 5, 7}})
}

// TestAggregateWordsNonASCII: with a continuing prefix, lengths count
// code points. Uncased, "Frau Zoë Müller" is frau zoe mu ##ller: "zoe"
// and "Zoë" (four bytes) are both three characters, so Zoë is a word;
// "mu" and "Mü" are two, "##ller" and "ller" six and four.
func TestAggregateWordsNonASCII(t *testing.T) {
	tok, err := tokenizer.FromVocab(strings.NewReader("[PAD]\n[UNK]\n[CLS]\n[SEP]\nfrau\nzoe\nmu\n##ller\n"), tokenizer.Options{Lowercase: true})
	if err != nil {
		t.Fatal(err)
	}
	const text = "Frau Zoë Müller"
	if ids := tok.Encode(text).InputIDs; !slices.Equal(ids, []int64{2, 4, 5, 6, 7, 3}) {
		t.Fatalf("encoded %v", ids)
	}
	labels := []string{"O", "B-PER", "I-PER"}
	rows := map[int][]float32{1: logRow(0.8, 0.1, 0.1), 2: logRow(0.1, 0.8, 0.1), 3: logRow(0.1, 0.1, 0.8), 4: logRow(0.1, 0.6, 0.3)}
	checkWords(t, "first", wordsOf(t, tok, text, labels, rows, AggregateFirst),
		[]word{{"O", 0.8, 0, 4}, {"B-PER", 0.8, 5, 9}, {"I-PER", 0.8, 10, 17}})
	checkWords(t, "average", wordsOf(t, tok, text, labels, rows, AggregateAverage),
		[]word{{"O", 0.8, 0, 4}, {"B-PER", 0.8, 5, 9}, {"I-PER", 0.55, 10, 17}})
	ents := PipelineEntities(text, GroupEntities(wordsOf(t, tok, text, labels, rows, AggregateFirst)))
	if want := []PipelineEntity{{"PER", 0.8, "Zoë Müller", 5, 15}}; len(ents) != 1 || ents[0].Word != want[0].Word || ents[0].Start != 5 || ents[0].End != 15 {
		t.Errorf("entities %+v, want %+v", ents, want)
	}
}

// wordLevelTokenizer is a WordLevel tokenizer.json (no continuing prefix)
// over words, split by the Whitespace pre-tokenizer (\w+|[^\w\s]+),
// cased, with BERT's template.
func wordLevelTokenizer(t *testing.T, words ...string) *tokenizer.Tokenizer {
	t.Helper()
	tok := editedBERT(t, func(doc map[string]any) {
		vocab := map[string]any{"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
		for i, w := range words {
			vocab[w] = 5 + i
		}
		doc["normalizer"] = nil
		doc["pre_tokenizer"] = map[string]any{"type": "Whitespace"}
		doc["model"] = map[string]any{"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
	})
	if tok.ContinuingSubwordPrefix() != "" {
		t.Fatalf("a WordLevel tokenizer has prefix %q", tok.ContinuingSubwordPrefix())
	}
	return tok
}

// TestAggregateWordsHeuristic: without a continuing prefix a token
// continues a word unless a space is just before it or at its start. In
// "in Zürich, now" the comma follows "Zürich" without a space, so they
// are one word, spanning bytes 3 to 11 (average: 0.75 and 0.55); the unknown "☃" after "Bern" is a
// word of its own all the same.
func TestAggregateWordsHeuristic(t *testing.T) {
	tok := wordLevelTokenizer(t, "in", "Zürich", ",", "now", "Bern")
	labels := []string{"O", "B-LOC"}
	loc, o := logRow(0.25, 0.75), logRow(0.75, 0.25)
	const text = "in Zürich, now Bern☃"
	if ids := tok.Encode(text).InputIDs; !slices.Equal(ids, []int64{2, 5, 6, 7, 8, 9, 1, 3}) {
		t.Fatalf("encoded %v", ids)
	}
	rows := map[int][]float32{1: o, 2: loc, 3: logRow(0.45, 0.55), 4: o, 5: loc, 6: loc}
	checkWords(t, "first", wordsOf(t, tok, text, labels, rows, AggregateFirst),
		[]word{{"O", 0.75, 0, 2}, {"B-LOC", 0.75, 3, 11}, {"O", 0.75, 12, 15}, {"B-LOC", 0.75, 16, 20}, {"B-LOC", 0.75, 20, 23}})
	checkWords(t, "average", wordsOf(t, tok, text, labels, rows, AggregateAverage),
		[]word{{"O", 0.75, 0, 2}, {"B-LOC", 0.65, 3, 11}, {"O", 0.75, 12, 15}, {"B-LOC", 0.75, 16, 20}, {"B-LOC", 0.75, 20, 23}})
}

// TestAggregateWordsSpans checks the heuristic on spans given by hand,
// as tokenizers give them: a span that starts at a space (a Metaspace
// "▁" token) begins a word, though no space is before it; a span at the
// text's start always does, even after another token (byte-fallback
// tokens all span their character); an empty span at the text's end
// continues its word unless the text ends with a space; and the
// characters looked at are code points ("b" at byte 2 of "éb c"
// continues "é": code point 2 is the space).
func TestAggregateWordsSpans(t *testing.T) {
	tok := wordLevelTokenizer(t)
	labels := []string{"O", "B-X"}
	for _, c := range []struct {
		text  string
		spans [][2]int // the tokens' byte spans
		want  [][2]int // the words' byte spans
	}{
		{"a bc", [][2]int{{0, 1}, {1, 3}, {3, 4}}, [][2]int{{0, 1}, {1, 4}}},
		{"☃b", [][2]int{{0, 3}, {0, 3}, {3, 4}}, [][2]int{{0, 3}, {0, 4}}},
		{"ab", [][2]int{{0, 2}, {2, 2}}, [][2]int{{0, 2}}},
		{"ab ", [][2]int{{0, 2}, {3, 3}}, [][2]int{{0, 2}, {3, 3}}},
		{"éb c", [][2]int{{0, 2}, {2, 3}, {4, 5}}, [][2]int{{0, 3}, {4, 5}}},
	} {
		tags := make([]TokenPrediction, len(c.spans))
		logits := make([]float32, 2*len(c.spans))
		ids := make([]int64, len(c.spans)) // [PAD]: neither unknown nor special here
		for i, s := range c.spans {
			tags[i] = TokenPrediction{Position: i, Start: s[0], End: s[1]}
		}
		got := AggregateWords(tags, logits, 2, labels, c.text, ids, tok, AggregateFirst)
		var spans [][2]int
		for _, w := range got {
			spans = append(spans, [2]int{w.Start, w.End})
		}
		if !slices.Equal(spans, c.want) {
			t.Errorf("%q %v: words %v, want %v", c.text, c.spans, spans, c.want)
		}
	}
}

func TestParseAggregation(t *testing.T) {
	for _, c := range []struct {
		name string
		want Aggregation
		word bool
	}{{"simple", AggregateSimple, false}, {"NONE", AggregateNone, false}, {"First", AggregateFirst, true}, {"average", AggregateAverage, true}, {"MAX", AggregateMax, true}} {
		got, err := ParseAggregation(c.name)
		if err != nil || got != c.want || got.WordLevel() != c.word || !strings.EqualFold(got.String(), c.name) {
			t.Errorf("ParseAggregation(%q) = %v (%v, word level %v)", c.name, got, err, got.WordLevel())
		}
	}
	for _, bad := range []string{"", "maximum", "avg"} {
		if _, err := ParseAggregation(bad); err == nil || !strings.Contains(err.Error(), `"average"`) {
			t.Errorf("ParseAggregation(%q): %v, want an error listing the strategies", bad, err)
		}
	}
}

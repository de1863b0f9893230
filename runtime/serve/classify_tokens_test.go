package serve

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// nerScore is the fake token classifier's score of a token at position
// j: the softmax of nerTop(j) against four zeros.
func nerScore(j int) float64 {
	e := math.Exp(float64(nerTop(j)))
	return e / (e + 4)
}

// TestClassifyTokensByHand checks /classify_tokens against answers worked
// out by hand from the fake model's tags (label id%5 for each token): the
// [UNK] tokens of "Zoë" and "Zürich" are B-PER, "is" I-PER, "the" O and
// "film" B-LOC. Start and end count characters: ë and ü are two bytes.
func TestClassifyTokensByHand(t *testing.T) {
	const text = "Zoë is the Zürich film"
	m := newFake(t, TokenClassifier)
	s := newTestServer(t, m, Config{})

	code, body := post(s, context.Background(), "/classify_tokens", `{"inputs":"`+text+`"}`)
	if code != 200 {
		t.Fatalf("simple: %d %s", code, body)
	}
	var groups []modelrt.PipelineEntity
	if err := json.Unmarshal([]byte(body), &groups); err != nil {
		t.Fatalf("simple: %s: %v", body, err)
	}
	wantGroups := []modelrt.PipelineEntity{
		{EntityGroup: "PER", Score: float32((nerScore(1) + nerScore(2)) / 2), Word: "Zoë is", Start: 0, End: 6},
		{EntityGroup: "PER", Score: float32(nerScore(4)), Word: "Zürich", Start: 11, End: 17},
		{EntityGroup: "LOC", Score: float32(nerScore(5)), Word: "film", Start: 18, End: 22},
	}
	if !equalScored(groups, wantGroups, func(g modelrt.PipelineEntity) float32 { return g.Score }, func(g *modelrt.PipelineEntity) { g.Score = 0 }) {
		t.Errorf("simple: got %+v, want %+v", groups, wantGroups)
	}
	want := s.enc.full.Encode(text).InputIDs
	if ran := m.lastRun(); !slices.Equal(ran, want) {
		t.Errorf("the model ran %v, want Encode's %v", ran, want)
	}

	// The strategy's name is read in any case.
	code, body = post(s, context.Background(), "/classify_tokens", `{"inputs":["`+text+`"],"aggregation_strategy":"NONE"}`)
	if code != 200 {
		t.Fatalf("none: %d %s", code, body)
	}
	var tokens [][]modelrt.PipelineToken
	if err := json.Unmarshal([]byte(body), &tokens); err != nil || len(tokens) != 1 {
		t.Fatalf("none: %s: want one list (%v)", body, err)
	}
	wantTokens := []modelrt.PipelineToken{
		{Entity: "B-PER", Score: float32(nerScore(1)), Index: 1, Word: "Zoë", Start: 0, End: 3},
		{Entity: "I-PER", Score: float32(nerScore(2)), Index: 2, Word: "is", Start: 4, End: 6},
		{Entity: "B-PER", Score: float32(nerScore(4)), Index: 4, Word: "Zürich", Start: 11, End: 17},
		{Entity: "B-LOC", Score: float32(nerScore(5)), Index: 5, Word: "film", Start: 18, End: 22},
	}
	if !equalScored(tokens[0], wantTokens, func(g modelrt.PipelineToken) float32 { return g.Score }, func(g *modelrt.PipelineToken) { g.Score = 0 }) {
		t.Errorf("none: got %+v, want %+v", tokens[0], wantTokens)
	}
}

// equalScored compares got and want with scores within 1e-6 (float32
// rounding of the hand computation) and every other field exactly.
func equalScored[T comparable](got, want []T, score func(T) float32, clear func(*T)) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(float64(score(got[i])-score(want[i]))) > 1e-6 {
			return false
		}
		g, w := got[i], want[i]
		clear(&g)
		clear(&w)
		if g != w {
			return false
		}
	}
	return true
}

// TestClassifyTokensTruncates: a truncated text runs exactly the
// truncating tokenizer's ids, and its tags stop at its last kept token.
func TestClassifyTokensTruncates(t *testing.T) {
	m := newFake(t, TokenClassifier)
	s := newTestServer(t, m, Config{})
	code, body := post(s, context.Background(), "/classify_tokens", `{"inputs":"`+words20+`","truncate":true,"aggregation_strategy":"none"}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	want := s.enc.trunc.Encode(words20).InputIDs
	if ran := m.lastRun(); len(ran) != 16 || !slices.Equal(ran, want) {
		t.Errorf("the model ran %v, want the truncated %v", ran, want)
	}
	var tokens []modelrt.PipelineToken
	if err := json.Unmarshal([]byte(body), &tokens); err != nil || len(tokens) == 0 {
		t.Fatalf("%s: %v", body, err)
	}
	// Position 14 ("learning") is the last before [SEP].
	if last := tokens[len(tokens)-1]; last.Index != 14 || last.Word != "learning" {
		t.Errorf("last token %+v, want index 14, learning", last)
	}
}

// TestClassifyTokensWrongOutput: a model that returns a row of the wrong
// size is a 500 naming the sizes, not a panic or a wrong answer.
func TestClassifyTokensWrongOutput(t *testing.T) {
	fake := newFake(t, TokenClassifier)
	m := Func{Meta: fake.info, Tok: fake.tok, RunFunc: func(ctx context.Context, b modelrt.Batch) ([][]float32, error) {
		out := make([][]float32, b.Len())
		for i := range out {
			out[i] = make([]float32, len(nerLabels)) // one token's worth
		}
		return out, nil
	}}
	s := newTestServer(t, m, Config{})
	code, body := post(s, context.Background(), "/classify_tokens", `{"inputs":"a movie"}`)
	if code != 500 || !strings.Contains(body, "returned 5 logits for a sequence of 4 tokens") {
		t.Errorf("got %d %s, want 500 naming the sizes", code, body)
	}
}

func TestTokenClassifierNeedsLabels(t *testing.T) {
	m := newFake(t, TokenClassifier)
	m.info.Labels = nil
	if _, err := New(m, Config{Logger: quietLogger()}); err == nil || !strings.Contains(err.Error(), "token classifier") {
		t.Errorf("New of a token classifier without labels: %v, want an error", err)
	}
}

// TestClassifyTokensParameters: the strategy is read at the top level or
// in "parameters" (huggingface_hub's request shape), in any case; both,
// differing, is a bad request naming both, as is an unknown strategy.
func TestClassifyTokensParameters(t *testing.T) {
	for _, c := range []struct {
		body     string
		strategy modelrt.Aggregation
		ok       bool
	}{
		{`{"inputs":"a"}`, modelrt.AggregateSimple, true},
		{`{"inputs":"a","parameters":{"aggregation_strategy":"none"}}`, modelrt.AggregateNone, true},
		{`{"inputs":"a","parameters":{"aggregation_strategy":"SIMPLE"}}`, modelrt.AggregateSimple, true},
		{`{"inputs":"a","aggregation_strategy":"none","parameters":{"aggregation_strategy":"None"}}`, modelrt.AggregateNone, true},
		{`{"inputs":"a","aggregation_strategy":"none","parameters":{"aggregation_strategy":"simple"}}`, 0, false},
		{`{"inputs":"a","parameters":{"aggregation_strategy":"max"}}`, modelrt.AggregateMax, true},
		{`{"inputs":"a","aggregation_strategy":"First"}`, modelrt.AggregateFirst, true},
		{`{"inputs":"a","aggregation_strategy":"AVERAGE","parameters":{"aggregation_strategy":"average"}}`, modelrt.AggregateAverage, true},
		{`{"inputs":"a","aggregation_strategy":"maximum"}`, 0, false},
		{`{"inputs":"a","aggregation_strategy":""}`, 0, false},
	} {
		r, e := decodeClassifyTokens([]byte(c.body))
		switch {
		case c.ok && e != nil:
			t.Errorf("%s: %v", c.body, e.Msg)
		case !c.ok && e == nil:
			t.Errorf("%s: accepted", c.body)
		case c.ok && r.Strategy != c.strategy:
			t.Errorf("%s: strategy %v, want %v", c.body, r.Strategy, c.strategy)
		}
	}
}

// nerOther is the fake token classifier's probability, at position j, of
// each label but the token's own.
func nerOther(j int) float64 { return 1 / (math.Exp(float64(nerTop(j))) + 4) }

// TestClassifyTokensWords checks the word-level strategies against
// answers worked out by hand. "searching movies is good" is [CLS] search
// ##ing movie ##s is good [SEP], ids 29 20 7 19 12 9 at positions 1 to 6:
// tags I-LOC, O, I-PER, I-LOC, I-PER, I-LOC with top logits 2 3 1 2 3 1.
//   - first: searching I-LOC, movies I-PER, is I-PER, good I-LOC; movies
//     and is make one PER.
//   - max: ##ing (logit 3) beats search, so searching is O; ##s (2) beats
//     movie, so movies is I-LOC, then "is" a PER of its own.
//   - average: searching's mean O (p(2) of ##ing) beats its I-LOC; movies'
//     mean I-LOC, nerOther(3)+p(4) halved, beats its I-PER.
func TestClassifyTokensWords(t *testing.T) {
	const text = "searching movies is good"
	m := newFake(t, TokenClassifier)
	s := newTestServer(t, m, Config{})
	if ids := s.enc.full.Encode(text).InputIDs; !slices.Equal(ids, []int64{2, 29, 20, 7, 19, 12, 9, 3}) {
		t.Fatalf("encoded %v", ids)
	}
	is := modelrt.PipelineEntity{EntityGroup: "PER", Score: float32(nerScore(5)), Word: "is", Start: 17, End: 19}
	good := modelrt.PipelineEntity{EntityGroup: "LOC", Score: float32(nerScore(6)), Word: "good", Start: 20, End: 24}
	for _, c := range []struct {
		body string
		want []modelrt.PipelineEntity
	}{
		{`{"inputs":"` + text + `","aggregation_strategy":"first"}`, []modelrt.PipelineEntity{
			{EntityGroup: "LOC", Score: float32(nerScore(1)), Word: "searching", Start: 0, End: 9},
			{EntityGroup: "PER", Score: float32((nerScore(3) + nerScore(5)) / 2), Word: "movies is", Start: 10, End: 19},
			good,
		}},
		{`{"inputs":"` + text + `","parameters":{"aggregation_strategy":"Max"}}`, []modelrt.PipelineEntity{
			{EntityGroup: "LOC", Score: float32(nerScore(4)), Word: "movies", Start: 10, End: 16}, is, good,
		}},
		{`{"inputs":"` + text + `","aggregation_strategy":"AVERAGE"}`, []modelrt.PipelineEntity{
			{EntityGroup: "LOC", Score: float32((nerOther(3) + nerScore(4)) / 2), Word: "movies", Start: 10, End: 16}, is, good,
		}},
	} {
		code, body := post(s, context.Background(), "/classify_tokens", c.body)
		if code != 200 {
			t.Fatalf("%s: %d %s", c.body, code, body)
		}
		var got []modelrt.PipelineEntity
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%s: %s: %v", c.body, body, err)
		}
		if !equalScored(got, c.want, func(g modelrt.PipelineEntity) float32 { return g.Score }, func(g *modelrt.PipelineEntity) { g.Score = 0 }) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.body, got, c.want)
		}
	}

	// [UNK] words: "Zoë" and "Zürich" are [UNK] (B-PER) words of their own
	// under every strategy, so a batch answers as "simple" does.
	const zoe = "Zoë is the Zürich film"
	for _, strategy := range []string{"first", "average", "max"} {
		_, simple := post(s, context.Background(), "/classify_tokens", `{"inputs":["`+zoe+`"]}`)
		code, body := post(s, context.Background(), "/classify_tokens", `{"inputs":["`+zoe+`"],"aggregation_strategy":"`+strategy+`"}`)
		if code != 200 || body != simple {
			t.Errorf("%s: %d %s, want %s", strategy, code, body, simple)
		}
	}
}

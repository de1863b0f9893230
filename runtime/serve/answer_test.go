package serve

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// The fake question answerer's logits (qaStart, qaEnd) as powers of e: a
// probability is e^logit over the sum of e^logit of a window's context
// tokens and its [CLS].
var (
	e1, e25, e3, e4 = math.E, math.Exp(2.5), math.Exp(3), math.Exp(4)
)

// The contexts of the tests, with the question "what is it?" ([CLS] what
// is it ? [SEP] ...: "what" has the highest logits of all, and being the
// question's it is never an answer).
const (
	// [UNK] love ##s deep learning . : "Zoë" is 3 characters but 4 bytes,
	// so every span after it differs in characters and in bytes.
	zoeLoves = "Zoë loves deep learning."
	// [UNK] love ##s it .
	zoeLovesIt = "Zoë loves it."
	// [UNK] [UNK] [UNK] [UNK] . : no token but [CLS] has a logit.
	zoeLives = "Zoë lives in Zürich."
	// 15 tokens: the film was good , the movie was bad , i love deep
	// learning .
	longContext = "the film was good, the movie was bad, i love deep learning."
)

// answerJSON is one answer of /answer.
type answerJSON struct {
	Score      float64 `json:"score"`
	Start, End int
	Answer     string `json:"answer"`
}

func qaBody(question, context, params string) string {
	in, _ := json.Marshal(map[string]string{"question": question, "context": context})
	if params == "" {
		return `{"inputs":` + string(in) + `}`
	}
	return `{"inputs":` + string(in) + `,"parameters":` + params + `}`
}

// postAnswer posts body to /answer and decodes the answer into v.
func postAnswer(t *testing.T, s *Server, body string, v any) {
	t.Helper()
	code, resp := post(s, context.Background(), "/answer", body)
	if code != 200 {
		t.Fatalf("%s: %d %s", body, code, resp)
	}
	if err := json.Unmarshal([]byte(resp), v); err != nil {
		t.Fatalf("%s: %s: %v", body, resp, err)
	}
}

// checkAnswers compares answers, scores within 1e-6.
func checkAnswers(t *testing.T, what string, got, want []answerJSON) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		g, w := got[i], want[i]
		ok = math.Abs(g.Score-w.Score) < 1e-6 && g.Start == w.Start && g.End == w.End && g.Answer == w.Answer
	}
	if !ok {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// TestAnswerByHand checks /answer against answers worked out by hand from
// the fake model's logits. In zoeLoves the context tokens and [CLS] have
// start logits 1 ([CLS]), 0, 4 (love), 0, 3 (deep), 0, 0 and end logits
// 1, 0, 2.5 (love), 0, 0, 4 (learning), 0: the best spans are love to
// learning, deep to learning, and love to love, grown to whole words
// ("loves"), their start and end in characters.
func TestAnswerByHand(t *testing.T) {
	m := newFake(t, QuestionAnswerer)
	s := newTestServer(t, m, Config{})
	zs, ze := e1+e4+e3+4, e1+e25+e4+4
	loves := []answerJSON{
		{e4 * e4 / (zs * ze), 4, 23, "loves deep learning"},
		{e3 * e4 / (zs * ze), 10, 23, "deep learning"},
		{e4 * e25 / (zs * ze), 4, 9, "loves"},
	}

	var one answerJSON
	postAnswer(t, s, qaBody("what is it?", zoeLoves, ""), &one)
	checkAnswers(t, "top_k 1", []answerJSON{one}, loves[:1])
	want, err := s.enc.full.EncodePairWindows("what is it?", zoeLoves, 16, 8)
	if err != nil || len(want) != 1 {
		t.Fatalf("windows %v: %v", want, err)
	}
	if ran := m.lastRun(); !slices.Equal(ran, want[0].InputIDs) {
		t.Errorf("the model ran %v, want the window %v", ran, want[0].InputIDs)
	}

	var top []answerJSON
	postAnswer(t, s, qaBody("what is it?", zoeLoves, `{"top_k":3}`), &top)
	checkAnswers(t, "top_k 3", top, loves)
	// top_k at the top level, as /classify_tokens reads its parameter.
	postAnswer(t, s, `{"inputs":{"question":"what is it?","context":"`+zoeLoves+`"},"top_k":2}`, &top)
	checkAnswers(t, "top-level top_k 2", top, loves[:2])

	// A context of one token has two spans, it and [CLS] (whose
	// probabilities the pipeline zeroes after taking the null score, so
	// it is an empty answer of score 0): top_k 3 gives both.
	postAnswer(t, s, qaBody("what is it?", "Zoë", `{"top_k":3}`), &top)
	if len(top) != 2 || top[0].Answer != "Zoë" || top[0].Start != 0 || top[0].End != 3 || !(top[0].Score > 0) || top[1] != (answerJSON{}) {
		t.Errorf("top_k 3 of a one-token context: %+v, want Zoë at 0-3, then the empty answer of score 0", top)
	}

	// A list of inputs: a list of answers (lists with top_k 2).
	zs2, ze2 := e1+e4+3, e1+e25+3 // zoeLovesIt: [CLS] [UNK] love ##s it .
	lovesIt := answerJSON{e4 * e25 / ((zs2 + 1) * (ze2 + 1)), 4, 9, "loves"}
	var list []answerJSON
	postAnswer(t, s, `{"inputs":[{"question":"what is it?","context":"`+zoeLoves+`"},{"question":"what is it?","context":"`+zoeLovesIt+`"}]}`, &list)
	checkAnswers(t, "list", list, []answerJSON{loves[0], lovesIt})
	var lists [][]answerJSON
	postAnswer(t, s, `{"inputs":[{"question":"what is it?","context":"`+zoeLoves+`"}],"parameters":{"top_k":2}}`, &lists)
	if len(lists) != 1 {
		t.Fatalf("list of one, top_k 2: %+v", lists)
	}
	checkAnswers(t, "list, top_k 2", lists[0], loves[:2])

	// align_to_words false: the span of the tokens, "love" without ##s.
	var tok answerJSON
	postAnswer(t, s, qaBody("what is it?", zoeLovesIt, `{"align_to_words":false}`), &tok)
	lovesIt.End, lovesIt.Answer = 8, "love"
	checkAnswers(t, "align_to_words false", []answerJSON{tok}, []answerJSON{lovesIt})
	// max_answer_len 1: single tokens only.
	postAnswer(t, s, qaBody("what is it?", zoeLoves, `{"top_k":2,"max_answer_len":1,"align_to_words":false}`), &top)
	checkAnswers(t, "max_answer_len 1", top, []answerJSON{{e4 * e25 / (zs * ze), 4, 8, "love"}, {e4 / (zs * ze), 15, 23, "learning"}})
}

// TestAnswerImpossible: in zoeLives only [CLS] has a logit (1), so the
// empty answer, [CLS]'s start probability times its end probability,
// beats every span; without handle_impossible_answer every span of
// context tokens scores the same, and the first, "Zoë", is the answer.
func TestAnswerImpossible(t *testing.T) {
	s := newTestServer(t, newFake(t, QuestionAnswerer), Config{})
	z := e1 + 5
	zoe := answerJSON{1 / (z * z), 0, 3, "Zoë"}
	empty := answerJSON{e1 * e1 / (z * z), 0, 0, ""}
	var a answerJSON
	postAnswer(t, s, qaBody("what is it?", zoeLives, ""), &a)
	checkAnswers(t, "default", []answerJSON{a}, []answerJSON{zoe})
	postAnswer(t, s, qaBody("what is it?", zoeLives, `{"handle_impossible_answer":true}`), &a)
	checkAnswers(t, "handle_impossible_answer", []answerJSON{a}, []answerJSON{empty})
	var top []answerJSON
	postAnswer(t, s, `{"inputs":{"question":"what is it?","context":"`+zoeLives+`"},"handle_impossible_answer":true,"parameters":{"top_k":2}}`, &top)
	checkAnswers(t, "handle_impossible_answer, top_k 2", top, []answerJSON{empty, zoe})
}

// TestAnswerWindows: a context longer than max_seq_len is read in
// windows, each a sequence of the batcher, and the answers of all compete.
// With "what?" ([CLS] what ? [SEP] ... [SEP]), max_seq_len 10 and
// doc_stride 2, longContext's 15 tokens make five windows of 5, starting
// 3 tokens apart. The fourth ", i love deep learning" has love to
// learning (start logits 1 [CLS], 0, 0, 4, 3, 0; end 1, 0, 0, 2.5, 0, 4);
// the fifth "deep learning ." deep to learning, with a larger probability
// among fewer tokens. The first windows have nothing but [CLS].
func TestAnswerWindows(t *testing.T) {
	m := newFake(t, QuestionAnswerer)
	// One input is within a client batch size of 1, whatever its windows.
	s := newTestServer(t, m, Config{MaxClientBatchSize: 1})
	windows, err := s.enc.full.EncodePairWindows("what?", longContext, 10, 2)
	if err != nil || len(windows) != 5 {
		t.Fatalf("%d windows (%v), want 5", len(windows), err)
	}
	if w := windows[4].InputIDs; !slices.Equal(w, []int64{2, 16, 24, 3, 17, 18, 21, 3}) {
		t.Fatalf("last window %v", w)
	}
	zs4, ze4 := e1+e4+e3+3, e1+e25+e4+3
	zs5, ze5 := e1+e3+2, e1+e4+2
	want := []answerJSON{
		{e3 * e4 / (zs5 * ze5), 45, 58, "deep learning"},
		{e4 * e4 / (zs4 * ze4), 40, 58, "love deep learning"},
	}
	var top []answerJSON
	postAnswer(t, s, qaBody("what?", longContext, `{"max_seq_len":10,"doc_stride":2,"top_k":2}`), &top)
	checkAnswers(t, "top_k 2", top, want)
	m.mu.Lock()
	ran := slices.Clone(m.ids)
	m.mu.Unlock()
	// The five windows, in any order, in one pass or more.
	if len(ran) != len(windows) {
		t.Errorf("%d sequences ran, want the %d windows", len(ran), len(windows))
	}
	for _, w := range windows {
		if !slices.ContainsFunc(ran, func(ids []int64) bool { return slices.Equal(ids, w.InputIDs) }) {
			t.Errorf("window %v did not run: ran %v", w.InputIDs, ran)
		}
	}
}

// TestAnswerDocStrideZero: doc_stride 0 cuts windows that share nothing
// (three of 5 tokens), as the pipeline does, not the default stride.
func TestAnswerDocStrideZero(t *testing.T) {
	m := newFake(t, QuestionAnswerer)
	s := newTestServer(t, m, Config{MaxBatchRequests: 1, MaxWait: time.Nanosecond})
	var a answerJSON
	postAnswer(t, s, qaBody("what?", longContext, `{"max_seq_len":10,"doc_stride":0}`), &a)
	m.mu.Lock()
	n := len(m.ids)
	m.mu.Unlock()
	if n != 3 {
		t.Errorf("%d windows ran, want 3", n)
	}
	// The third window, "i love deep learning .", has the answer (start
	// logits 1 [CLS], 0, 4, 3, 0, 0; end 1, 0, 2.5, 0, 4, 0).
	z3s, z3e := e1+e4+e3+3, e1+e25+e4+3
	checkAnswers(t, "doc_stride 0", []answerJSON{a}, []answerJSON{{e4 * e4 / (z3s * z3e), 40, 58, "love deep learning"}})
}

// TestAnswerErrors: parameters out of range are 400s, a max_seq_len
// above the model's and a question that leaves the context no room 422s
// naming the sizes, too many inputs 413, and so are windows holding more
// tokens than a request may.
func TestAnswerErrors(t *testing.T) {
	s := newTestServer(t, newFake(t, QuestionAnswerer), Config{MaxClientBatchSize: 3, MaxBatchTokens: 16})
	long := "what is deep learning? what is a good movie?" // 11 tokens
	for _, c := range []struct {
		body string
		code int
		msg  string
	}{
		{qaBody("", "a", ""), 400, "`inputs.question` cannot be empty"},
		{qaBody("a", "", ""), 400, "`inputs.context` cannot be empty"},
		{`{"inputs":[{"question":"a","context":"b"},{"question":"a"}]}`, 400, "missing field `inputs[1].context`"},
		{`{"inputs":"a"}`, 400, "`inputs`: want an object"},
		{`{"inputs":["a"]}`, 400, "`inputs`: want an object"},
		{`{"inputs":{"question":1,"context":"b"}}`, 400, "`inputs`: want an object"},
		{`{"question":"a","context":"b"}`, 400, "missing field `inputs`"},
		{`{"inputs":[]}`, 400, "`inputs` cannot be empty"},
		{qaBody("a", "b", `{"top_k":0}`), 400, "`top_k` 0: want a positive number"},
		{qaBody("a", "b", `{"top_k":-1}`), 400, "`top_k` -1"},
		{qaBody("a", "b", `{"top_k":1.5}`), 400, "top_k"},
		{qaBody("a", "b", `{"max_answer_len":0}`), 400, "`max_answer_len` 0: want a positive number"},
		{qaBody("a", "b", `{"max_seq_len":0}`), 400, "`max_seq_len` 0: want a positive number"},
		{qaBody("a", "b", `{"doc_stride":-1}`), 400, "`doc_stride` -1: want a number not below 0"},
		{qaBody("a", "b", `{"doc_stride":16}`), 400, "`doc_stride` 16 is not less than `max_seq_len` 16"},
		{qaBody("a", "b", `{"doc_stride":4,"max_seq_len":4}`), 400, "`doc_stride` 4 is not less than `max_seq_len` 4"},
		{qaBody("a", "b", `{"align_to_words":"no"}`), 400, "align_to_words"},
		{`{"inputs":{"question":"a","context":"b"},"top_k":1,"parameters":{"top_k":2}}`, 400, "`top_k` 1 and `parameters.top_k` 2 differ"},
		{qaBody("a", "b", `{"max_seq_len":17}`), 422, "`max_seq_len` 17 is more than the model's 16 tokens"},
		{qaBody(long, "a good movie", ""), 422, "the question of `inputs` leaves no room for its context in windows of `max_seq_len` 16 tokens with `doc_stride` 8"},
		{`{"inputs":[{"question":"a","context":"b"},{"question":"` + long + `","context":"a good movie"}]}`, 422, "`inputs[1]`"},
		{`{"inputs":[{"question":"a","context":"b"},{"question":"a","context":"b"},{"question":"a","context":"b"},{"question":"a","context":"b"}]}`, 413, "batch size 4 > maximum allowed batch size 3"},
		// Five windows of 10 tokens: more than 3 × 16.
		{qaBody("what?", longContext, `{"max_seq_len":10,"doc_stride":2}`), 413, "hold more than 48 tokens"},
	} {
		code, body := post(s, context.Background(), "/answer", c.body)
		var e apiError
		typ := errValidation
		if c.body == `{"inputs":[]}` {
			typ = errEmpty // an empty batch, TEI's error type for it
		}
		if code != c.code || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Msg, c.msg) || e.Type != typ {
			t.Errorf("%s: %d %s, want %d %q", c.body, code, body, c.code, c.msg)
		}
	}
	// Within the budget: 48 tokens hold three windows of 16 (the context's
	// 15 tokens, 11 a window, 3 apart).
	code, body := post(s, context.Background(), "/answer", qaBody("what?", longContext, ""))
	if code != 200 {
		t.Errorf("three windows: %d %s", code, body)
	}
}

// TestAnswerWrongOutput: a model that returns rows of the wrong size is a
// 500 naming the sizes.
func TestAnswerWrongOutput(t *testing.T) {
	fake := newFake(t, QuestionAnswerer)
	m := Func{Meta: fake.info, Tok: fake.tok, RunFunc: func(ctx context.Context, b modelrt.Batch) ([][]float32, error) {
		out := make([][]float32, b.Len())
		for i, ids := range b.InputIDs {
			out[i] = make([]float32, len(ids)) // start logits only
		}
		return out, nil
	}}
	s := newTestServer(t, m, Config{})
	code, body := post(s, context.Background(), "/answer", qaBody("what?", "a movie", ""))
	if code != 500 || !strings.Contains(body, "returned 7 logits for a sequence of 7 tokens") {
		t.Errorf("got %d %s, want 500 naming the sizes", code, body)
	}
}

// TestAnswerBatchedMatchesAlone: concurrent requests, their windows
// merged into passes, get the bytes each gets alone.
func TestAnswerBatchedMatchesAlone(t *testing.T) {
	m := newFake(t, QuestionAnswerer)
	s := newTestServer(t, m, Config{MaxWait: 5 * time.Millisecond})
	bodies := []string{
		qaBody("what is it?", zoeLoves, ""), qaBody("what?", longContext, `{"max_seq_len":10,"doc_stride":2,"top_k":3}`),
		qaBody("what is it?", zoeLives, `{"handle_impossible_answer":true}`), qaBody("what?", longContext, ""),
	}
	alone := make([]string, len(bodies))
	for i, b := range bodies {
		var code int
		if code, alone[i] = post(s, context.Background(), "/answer", b); code != 200 {
			t.Fatalf("%s: %d %s", b, code, alone[i])
		}
	}
	done := make(chan struct{})
	for i, b := range bodies {
		go func() {
			defer func() { done <- struct{}{} }()
			if code, got := post(s, context.Background(), "/answer", b); code != 200 || got != alone[i] {
				t.Errorf("%s: %d %s, alone %s", b, code, got, alone[i])
			}
		}()
	}
	for range bodies {
		<-done
	}
}

// TestAnswerParameters: each parameter is read at the top level or in
// "parameters"; given in both, they must agree.
func TestAnswerParameters(t *testing.T) {
	five, two, f, tr := 5, 2, false, true
	for _, c := range []struct {
		body string
		want answerRequest
		ok   bool
	}{
		{`{"inputs":{"question":"q","context":"c"}}`, answerRequest{}, true},
		{`{"inputs":{"question":"q","context":"c"},"parameters":{"top_k":5,"doc_stride":2,"align_to_words":false}}`, answerRequest{TopK: &five, DocStride: &two, AlignToWords: &f}, true},
		{`{"inputs":{"question":"q","context":"c"},"max_answer_len":5,"max_seq_len":2,"handle_impossible_answer":true}`, answerRequest{MaxAnswerLen: &five, MaxSeqLen: &two, HandleImpossible: &tr}, true},
		{`{"inputs":{"question":"q","context":"c"},"top_k":5,"parameters":{"top_k":5}}`, answerRequest{TopK: &five}, true},
		{`{"inputs":{"question":"q","context":"c"},"align_to_words":true,"parameters":{"align_to_words":false}}`, answerRequest{}, false},
		{`{"inputs":{"question":"q","context":"c"},"parameters":{"max_seq_len":-3}}`, answerRequest{}, false},
	} {
		r, e := decodeAnswer([]byte(c.body))
		switch {
		case c.ok && e != nil:
			t.Errorf("%s: %v", c.body, e.Msg)
		case !c.ok && e == nil:
			t.Errorf("%s: accepted", c.body)
		case c.ok:
			eq := func(a, b *int) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
			eqb := func(a, b *bool) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
			if !eq(r.TopK, c.want.TopK) || !eq(r.DocStride, c.want.DocStride) || !eq(r.MaxAnswerLen, c.want.MaxAnswerLen) || !eq(r.MaxSeqLen, c.want.MaxSeqLen) ||
				!eqb(r.HandleImpossible, c.want.HandleImpossible) || !eqb(r.AlignToWords, c.want.AlignToWords) || !r.Single || len(r.Inputs) != 1 || r.Inputs[0] != (qaInput{"q", "c"}) {
				t.Errorf("%s: %+v", c.body, r)
			}
		}
	}
}

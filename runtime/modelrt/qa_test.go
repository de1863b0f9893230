package modelrt

import (
	"math"
	"testing"

	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// qaWindow is a hand-made window "[CLS] who is [SEP] Wolf ##gang lives
// here [SEP]" of the context "Wolfgang lives here": question positions
// 1-2, context 4-7 ("Wolf" and "##gang" one word), template 0, 3 and 8.
func qaWindow() tokenizer.Encoding {
	return tokenizer.Encoding{
		InputIDs:      []int64{101, 7, 8, 102, 20, 21, 22, 23, 102},
		AttentionMask: []int64{1, 1, 1, 1, 1, 1, 1, 1, 1},
		Offsets:       []tokenizer.Offset{{}, {Start: 0, End: 3}, {Start: 4, End: 6}, {}, {Start: 0, End: 4}, {Start: 4, End: 8}, {Start: 9, End: 14}, {Start: 15, End: 19}, {}},
		Words:         []int32{-1, 0, 1, -1, 0, 0, 1, 2, -1},
		Sequences:     []int8{-1, 0, 0, -1, 1, 1, 1, 1, -1},
	}
}

// softmaxOver is the probabilities of logits where only allowed count.
func softmaxOver(logits []float32, allowed []bool) []float64 {
	return qaProbs(logits, allowed)
}

func TestAnswersByHand(t *testing.T) {
	enc := qaWindow()
	// The question's tokens have the highest logits: they cannot answer.
	start := []float32{0, 9, 9, 0, 1, 3, 0.5, 0, 0}
	end := []float32{0, 9, 9, 0, 0, 2, 1, 0.2, 0}
	got := Answers([]tokenizer.Encoding{enc}, [][]float32{start}, [][]float32{end}, QAOptions{})
	allowed := []bool{true, false, false, false, true, true, true, true, false}
	ps, pe := softmaxOver(start, allowed), softmaxOver(end, allowed)
	// Best: start at "##gang" (5), end at "##gang" (5); aligned to words
	// it is "Wolfgang", bytes 0-8.
	want := Answer{Score: float32(ps[5] * pe[5]), Start: 0, End: 8}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %+v, want [%+v]", got, want)
	}
	tok := Answers([]tokenizer.Encoding{enc}, [][]float32{start}, [][]float32{end}, QAOptions{TokenSpans: true})
	if len(tok) != 1 || tok[0].Start != 4 || tok[0].End != 8 {
		t.Errorf("token spans: got %+v, want bytes 4-8 (\"gang\")", tok)
	}
	// The best three, best first: (5,5), (5,6), (5,7) (e^(0.2-2) of the
	// best end beats (4,5)'s e^(1-3) of the best start).
	top := Answers([]tokenizer.Encoding{enc}, [][]float32{start}, [][]float32{end}, QAOptions{TopK: 3, TokenSpans: true})
	wantTop := []Answer{{Score: float32(ps[5] * pe[5]), Start: 4, End: 8}, {Score: float32(ps[5] * pe[6]), Start: 4, End: 14}, {Score: float32(ps[5] * pe[7]), Start: 4, End: 19}}
	if len(top) != 3 || top[0] != wantTop[0] || top[1] != wantTop[1] || top[2] != wantTop[2] {
		t.Errorf("top 3: got %+v, want %+v", top, wantTop)
	}
	// MaxAnswerLen 1: single tokens only.
	one := Answers([]tokenizer.Encoding{enc}, [][]float32{start}, [][]float32{end}, QAOptions{TopK: 10, MaxAnswerLen: 1, TokenSpans: true})
	for _, a := range one {
		if a.End-a.Start > 5 {
			t.Errorf("MaxAnswerLen 1: %+v", a)
		}
	}
	if len(one) != 5 { // the four context tokens and the first token's span, score 0
		t.Errorf("MaxAnswerLen 1: %d answers, want 5: %+v", len(one), one)
	}
	// The empty answer: the first token's probabilities before zeroing.
	null := Answers([]tokenizer.Encoding{enc}, [][]float32{start}, [][]float32{end}, QAOptions{TopK: 100, HandleImpossible: true})
	last := null[len(null)-1]
	found := false
	for _, a := range null {
		if a.Start == 0 && a.End == 0 && a.Score == float32(ps[0]*pe[0]) {
			found = true
		}
	}
	if !found {
		t.Errorf("no empty answer of score %g among %+v", ps[0]*pe[0], null)
	}
	if last.Score > null[0].Score {
		t.Errorf("answers not best first: %+v", null)
	}
}

// TestAnswersAcrossWindows: answers of every window compete, and the
// empty answer takes the least first-token score over the windows.
func TestAnswersAcrossWindows(t *testing.T) {
	a, b := qaWindow(), qaWindow()
	b.Offsets = []tokenizer.Offset{{}, {Start: 0, End: 3}, {Start: 4, End: 6}, {}, {Start: 15, End: 19}, {Start: 20, End: 22}, {Start: 23, End: 30}, {Start: 31, End: 35}, {}}
	b.Words = []int32{-1, 0, 1, -1, 2, 3, 4, 5, -1}
	flat := []float32{0, 0, 0, 0, 0, 0, 0, 0, 0}
	peak := []float32{1, 0, 0, 0, 0, 0, 0, 8, 0} // the second window's last context token
	got := Answers([]tokenizer.Encoding{a, b}, [][]float32{flat, peak}, [][]float32{flat, peak}, QAOptions{HandleImpossible: true, TopK: 2})
	if len(got) != 2 || got[0].Start != 31 || got[0].End != 35 {
		t.Fatalf("got %+v, want the second window's bytes 31-35 first", got)
	}
	allowed := []bool{true, false, false, false, true, true, true, true, false}
	pa, pb := softmaxOver(flat, allowed), softmaxOver(peak, allowed)
	wantNull := float32(math.Min(pa[0]*pa[0], pb[0]*pb[0]))
	null := Answers([]tokenizer.Encoding{a, b}, [][]float32{flat, peak}, [][]float32{flat, peak}, QAOptions{HandleImpossible: true, TopK: 1000})
	// The first token's spans score 0 (its probabilities zeroed), and the
	// pipeline keeps them too at such a TopK; the empty answer is the one
	// scoring the least first-token product.
	found := false
	for _, x := range null {
		found = found || x.Start == 0 && x.End == 0 && x.Score == wantNull
	}
	if !found {
		t.Errorf("no empty answer of score %g among %d answers", wantNull, len(null))
	}
	// Short logits or missing windows give fewer answers, not a panic.
	if got := Answers([]tokenizer.Encoding{a, b}, [][]float32{flat[:3]}, [][]float32{flat[:3]}, QAOptions{TopK: 5}); len(got) > 1 {
		t.Errorf("logits of the question only: %+v", got)
	}
}

func TestQAOptionsDefaults(t *testing.T) {
	if d := (QAOptions{}).Defaults(512); d.MaxSeqLen != 384 || d.DocStride != 128 || d.TopK != 1 || d.MaxAnswerLen != 15 {
		t.Errorf("defaults %+v", d)
	}
	if d := (QAOptions{}).Defaults(128); d.MaxSeqLen != 128 || d.DocStride != 64 {
		t.Errorf("for 128 tokens: %+v", d)
	}
	if d := (QAOptions{MaxSeqLen: 200, DocStride: 50, TopK: 3, MaxAnswerLen: 30}).Defaults(128); d.MaxSeqLen != 200 || d.DocStride != 50 || d.TopK != 3 || d.MaxAnswerLen != 30 {
		t.Errorf("given values: %+v", d)
	}
}

package modelrt

import (
	"math"
	"sort"

	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// QAOptions are the parameters of transformers' QuestionAnsweringPipeline
// that decide its answers; the zero value is its defaults.
type QAOptions struct {
	// MaxSeqLen is the length of a window in tokens (max_seq_len; 0: 384,
	// capped by the model's MaxSequence where the caller has one), and
	// DocStride the tokens consecutive windows share (doc_stride; 0:
	// min(MaxSeqLen / 2, 128)).
	MaxSeqLen, DocStride int
	// TopK is how many answers, the best first (top_k; 0: 1).
	TopK int
	// MaxAnswerLen is the longest answer in tokens (max_answer_len; 0: 15).
	MaxAnswerLen int
	// HandleImpossible also scores the empty answer, the least over the
	// windows of the first token's start and end probabilities
	// (handle_impossible_answer).
	HandleImpossible bool
	// TokenSpans reports the span of an answer's tokens; by default it
	// grows to the whole words its first and last tokens are in
	// (align_to_words).
	TokenSpans bool
}

// Defaults are o with its zero fields set as the pipeline sets them, for
// a model of at most maxSequence tokens (0: no limit).
func (o QAOptions) Defaults(maxSequence int) QAOptions {
	if o.MaxSeqLen <= 0 {
		o.MaxSeqLen = 384
		if maxSequence > 0 {
			o.MaxSeqLen = min(o.MaxSeqLen, maxSequence)
		}
	}
	if o.DocStride <= 0 {
		o.DocStride = min(o.MaxSeqLen/2, 128)
	}
	o.TopK = max(o.TopK, 1)
	if o.MaxAnswerLen <= 0 {
		o.MaxAnswerLen = 15
	}
	return o
}

// Answer is one answer to a question: a span of the context.
type Answer struct {
	// Score is the start token's probability times the end token's, each
	// a softmax over its window's context tokens (and first token).
	Score float32
	// Start and End are the answer's byte span in the context; the empty
	// answer of HandleImpossible is 0, 0.
	Start, End int
}

// qaMasked is the logit the pipeline gives positions an answer cannot
// start or end at.
const qaMasked = -10000

// Answers decodes the answers to one question from its context's windows
// (tokenizer.EncodePairWindows(question, context, ...): the question is
// sequence 0, the context 1) and the model's start and end logits for
// each window, one per position, as the pipeline's postprocess does (its
// probabilities in float64 here, in float32 there, which can order two
// answers of equal float32 scores differently). In each window an answer
// may start and end at a context token (and the first token, the
// template's [CLS], whose probabilities are then zeroed), the
// probabilities are a softmax over those, and the candidates are the
// spans of at most MaxAnswerLen tokens; the TopK best of each window are
// kept where both ends are context tokens. The answers of all windows
// (and the empty one) are returned best first, TopK of them.
func Answers(windows []tokenizer.Encoding, starts, ends [][]float32, opts QAOptions) []Answer {
	opts = opts.Defaults(0)
	minNull := math.Inf(1)
	var out []Answer
	for w, enc := range windows {
		if w >= len(starts) || w >= len(ends) {
			break
		}
		n := min(enc.Len(), len(starts[w]), len(ends[w]), len(enc.Sequences), len(enc.Offsets))
		if n == 0 {
			continue
		}
		allowed := make([]bool, n)
		cls := int64(-1)
		if enc.Sequences[0] < 0 {
			cls = enc.InputIDs[0] // the template's first token: [CLS], <s>
		}
		for i := range n {
			attended := i >= len(enc.AttentionMask) || enc.AttentionMask[i] != 0
			allowed[i] = attended && (enc.Sequences[i] == 1 || enc.InputIDs[i] == cls)
		}
		ps, pe := qaProbs(starts[w][:n], allowed), qaProbs(ends[w][:n], allowed)
		if opts.HandleImpossible {
			minNull = math.Min(minNull, ps[0]*pe[0])
		}
		ps[0], pe[0] = 0, 0
		for _, c := range qaSpans(ps, pe, opts.TopK, opts.MaxAnswerLen) {
			if !allowed[c.start] || !allowed[c.end] {
				continue
			}
			a := Answer{Score: float32(c.score), Start: enc.Offsets[c.start].Start, End: enc.Offsets[c.end].End}
			if !opts.TokenSpans {
				a.Start, _ = wordSpan(enc, c.start, n)
				_, a.End = wordSpan(enc, c.end, n)
			}
			out = append(out, a)
		}
	}
	if opts.HandleImpossible && !math.IsInf(minNull, 1) {
		out = append(out, Answer{Score: float32(minNull)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out[:min(len(out), opts.TopK)]
}

// qaProbs is the softmax of logits over the allowed positions, the others
// given qaMasked first, as the pipeline computes it.
func qaProbs(logits []float32, allowed []bool) []float64 {
	masked := make([]float32, len(logits))
	for i, x := range logits {
		masked[i] = qaMasked
		if allowed[i] {
			masked[i] = x
		}
	}
	return softmax64(masked)
}

type qaSpan struct {
	start, end int
	score      float64
}

// qaSpans is the pipeline's decode_spans before its filter: the topK
// spans start <= end < start + maxLen by start probability times end
// probability, the best first (equal scores in order of start, then end).
func qaSpans(ps, pe []float64, topK, maxLen int) []qaSpan {
	var all []qaSpan
	for i := range ps {
		for j := i; j < len(pe) && j-i < maxLen; j++ {
			all = append(all, qaSpan{i, j, ps[i] * pe[j]})
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].score > all[b].score })
	return all[:min(len(all), topK)]
}

// wordSpan is the byte span of the word token i of enc's context is in,
// as the library's word_to_chars gives it from the window's tokens of
// that word; a token without a word spans its own offsets.
func wordSpan(enc tokenizer.Encoding, i, n int) (start, end int) {
	start, end = enc.Offsets[i].Start, enc.Offsets[i].End
	if i >= len(enc.Words) || enc.Words[i] < 0 {
		return start, end
	}
	for k := range n {
		if k < len(enc.Words) && enc.Words[k] == enc.Words[i] && enc.Sequences[k] == enc.Sequences[i] {
			start, end = min(start, enc.Offsets[k].Start), max(end, enc.Offsets[k].End)
		}
	}
	return start, end
}

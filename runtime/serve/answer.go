package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// answer answers POST /answer as transformers' question-answering pipeline
// answers (modelrt.Answers): each question and its context are encoded in
// the pipeline's windows (tokenizer.EncodePairWindows), every window of
// every input goes through the batcher as a sequence of its own, and each
// input's answers are decoded from all its windows' logits.
//
// MaxClientBatchSize counts inputs, as a client sees them, not windows:
// how many windows a context makes depends on the tokenizer, max_seq_len
// and doc_stride, which a client cannot well foresee, and a long context
// is one question about one text. What bounds a request's work instead is
// its windows' tokens: at most MaxClientBatchSize × MaxBatchTokens, the
// most any other request can cost (a 413 otherwise, before the windows
// are built: a small step between windows, max_seq_len - question -
// doc_stride, could make a window per token of a long context).
func (s *Server) answer(ctx context.Context, body []byte, t *timings) (any, *apiError) {
	if s.info.Kind != QuestionAnswerer {
		return nil, s.wrongKind("a question answering")
	}
	req, e := decodeAnswer(body)
	if e != nil {
		return nil, e
	}
	if e := s.checkCount("inputs", len(req.Inputs)); e != nil {
		return nil, e
	}
	opts, e := s.qaOptions(req)
	if e != nil {
		return nil, e
	}
	windows := make([][]tokenizer.Encoding, len(req.Inputs))
	var encs []tokenizer.Encoding
	if e := s.tokenizeOn(ctx, t, func() *apiError {
		if e := s.checkWindows(req.Inputs, opts); e != nil {
			return e
		}
		for i, in := range req.Inputs {
			ws, err := s.enc.full.EncodePairWindows(in.Question, in.Context, opts.MaxSeqLen, opts.DocStride)
			if errors.Is(err, tokenizer.ErrNoRoom) {
				return &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("Input validation error: the question of %s leaves no room for its context in windows of `max_seq_len` %d tokens with `doc_stride` %d: %v",
					inputName(req, i), opts.MaxSeqLen, opts.DocStride, err), errValidation}
			}
			if err != nil {
				return badRequest(fmt.Sprintf("%s: %v", inputName(req, i), err))
			}
			windows[i] = ws
			encs = append(encs, ws...)
		}
		return nil
	}); e != nil {
		return nil, e
	}
	logits, e := s.runEncodings(ctx, encs, t)
	if e != nil {
		return nil, e
	}
	if e := finite(logits); e != nil {
		return nil, e
	}
	out := make([]any, len(req.Inputs))
	k := 0 // the next window's row of logits
	for i, in := range req.Inputs {
		starts, ends := make([][]float32, len(windows[i])), make([][]float32, len(windows[i]))
		for w, enc := range windows[i] {
			row, n := logits[k], enc.Len()
			k++
			if len(row) != 2*n {
				return nil, &apiError{http.StatusInternalServerError, fmt.Sprintf("the model returned %d logits for a sequence of %d tokens: want a start and an end logit per token", len(row), n), errBackend}
			}
			starts[w], ends[w] = row[:n], row[n:]
		}
		answers := modelrt.PipelineAnswers(in.Context, modelrt.Answers(windows[i], starts, ends, opts))
		// One answer is an object, any other number a list (none: the
		// empty list), whatever top_k asked for: the pipeline's
		// postprocess returns answers[0] when len(answers) == 1.
		if len(answers) == 1 {
			out[i] = answers[0]
		} else {
			out[i] = answers
		}
	}
	if req.Single {
		return out[0], nil
	}
	return out, nil
}

// qaOptions are a request's parameters with the pipeline's defaults for
// this model (max_seq_len 384 or the model's MaxSequence, doc_stride
// min(max_seq_len / 2, 128)); a max_seq_len above the model's is a 422,
// as other inputs longer than it are.
func (s *Server) qaOptions(req answerRequest) (modelrt.QAOptions, *apiError) {
	var opts modelrt.QAOptions
	val := func(v *int) int {
		if v == nil {
			return 0
		}
		return *v
	}
	opts.TopK, opts.MaxAnswerLen, opts.MaxSeqLen = val(req.TopK), val(req.MaxAnswerLen), val(req.MaxSeqLen)
	opts.HandleImpossible = req.HandleImpossible != nil && *req.HandleImpossible
	opts.TokenSpans = req.AlignToWords != nil && !*req.AlignToWords
	if opts.MaxSeqLen > s.info.MaxSequence {
		return opts, &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("Input validation error: `max_seq_len` %d is more than the model's %d tokens", opts.MaxSeqLen, s.info.MaxSequence), errValidation}
	}
	opts = opts.Defaults(s.info.MaxSequence)
	if req.DocStride != nil {
		// An explicit 0 is a stride of 0, which Defaults would replace.
		opts.DocStride = *req.DocStride
	}
	if opts.DocStride >= opts.MaxSeqLen {
		return opts, badRequest(fmt.Sprintf("`doc_stride` %d is not less than `max_seq_len` %d", opts.DocStride, opts.MaxSeqLen))
	}
	return opts, nil
}

// checkWindows refuses, with a 413, inputs whose windows would hold more
// than MaxClientBatchSize × MaxBatchTokens tokens in all (see answer). It
// counts them from the question's and the context's token counts as
// EncodePairWindows cuts them (every window counted full), without
// building them; a question that leaves no room is left to
// EncodePairWindows to refuse.
func (s *Server) checkWindows(inputs []qaInput, opts modelrt.QAOptions) *apiError {
	budget := s.cfg.MaxClientBatchSize * s.cfg.MaxBatchTokens
	total := 0
	for _, in := range inputs {
		q := s.enc.full.Encode(in.Question).Len() - s.enc.prefix - s.enc.suffix
		c := s.enc.full.Encode(in.Context).Len() - s.enc.prefix - s.enc.suffix
		w := opts.MaxSeqLen - q - s.enc.pairSpecial // the context's tokens per window
		switch {
		case c <= w:
			total += q + s.enc.pairSpecial + c
		case w > opts.DocStride:
			step := w - opts.DocStride
			total += (1 + (c-w+step-1)/step) * opts.MaxSeqLen
		}
		if total > budget {
			return &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("the inputs' windows of `max_seq_len` %d with `doc_stride` %d hold more than %d tokens: the most a request may (max client batch size %d × max batch tokens %d)",
				opts.MaxSeqLen, opts.DocStride, budget, s.cfg.MaxClientBatchSize, s.cfg.MaxBatchTokens), errValidation}
		}
	}
	return nil
}

// inputName names input i of req in error messages.
func inputName(req answerRequest, i int) string {
	if req.Single {
		return "`inputs`"
	}
	return fmt.Sprintf("`inputs[%d]`", i)
}

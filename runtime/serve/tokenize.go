package serve

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// untruncated is the MaxLength of the tokenizer that measures inputs: no
// request body (bounded by PayloadLimit) comes near it.
const untruncated = 1 << 26

// encoder tokenizes request texts on a pool of workers of its own, so a
// burst of long texts does not hold up the goroutines serving HTTP.
type encoder struct {
	full   *tokenizer.Tokenizer // MaxLength untruncated: measures an input
	trunc  *tokenizer.Tokenizer // MaxLength the model's: truncates
	maxLen int
	// prefix and suffix are how many tokens the single-text template adds
	// before and after the text ([CLS] and [SEP]: 1 and 1).
	prefix, suffix int
	// pairSpecial is how many tokens the pair template adds ([CLS] a
	// [SEP] b [SEP]: 3).
	pairSpecial int

	jobs chan func()
	wg   sync.WaitGroup
}

func newEncoder(tok *tokenizer.Tokenizer, maxLen, workers int) (*encoder, error) {
	full, err := tok.WithMaxLength(untruncated)
	if err != nil {
		return nil, fmt.Errorf("serve: tokenizer: %w", err)
	}
	trunc, err := tok.WithMaxLength(maxLen)
	if err != nil {
		return nil, fmt.Errorf("serve: tokenizer: %w", err)
	}
	e := &encoder{full: full, trunc: trunc, maxLen: maxLen, jobs: make(chan func())}
	e.prefix, e.suffix = modelrt.TemplateTokens(full)
	e.pairSpecial = full.EncodePair("", "").Len()
	for range max(workers, 1) {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			for job := range e.jobs {
				job()
			}
		}()
	}
	return e, nil
}

// close stops the workers once the jobs in hand are done.
func (e *encoder) close() {
	close(e.jobs)
	e.wg.Wait()
}

// do runs f on a worker and waits for it, or returns ctx's error if the
// request goes away first.
func (e *encoder) do(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case e.jobs <- func() { defer close(done); f() }:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// encode tokenizes one input (a text, or a pair when len(texts) is 2):
// an input longer than the model takes is truncated when truncate is
// set, and a 422 otherwise.
func (e *encoder) encode(texts []string, truncate bool) (tokenizer.Encoding, *apiError) {
	enc := e.encodeWith(e.full, texts)
	if enc.Len() <= e.maxLen {
		return enc, nil
	}
	if !truncate {
		return enc, e.tooLong(enc.Len())
	}
	return e.encodeWith(e.trunc, texts), nil
}

// encodeOffsets tokenizes one text as encode does, with each token's
// byte offsets in it (Encoding.Offsets): the ids are encode's, so the
// model runs what a token classifier's answer is mapped back from.
func (e *encoder) encodeOffsets(text string, truncate bool) (tokenizer.Encoding, *apiError) {
	enc := e.full.EncodeWithOffsets(text)
	if enc.Len() <= e.maxLen {
		return enc, nil
	}
	if !truncate {
		return enc, e.tooLong(enc.Len())
	}
	return e.trunc.EncodeWithOffsets(text), nil
}

// encodeInput tokenizes one embedding input: its text with prompt put
// before it, or its token ids as given. An input longer than the model
// takes is a 422 unless truncate is set; then left drops its first tokens
// (after the template's leading special tokens) instead of its last.
func (e *encoder) encodeInput(in input, prompt string, truncate, left bool) (tokenizer.Encoding, *apiError) {
	if in.IDs == nil {
		if !left {
			return e.encode([]string{prompt + in.Text}, truncate)
		}
		enc := e.full.Encode(prompt + in.Text)
		if enc.Len() <= e.maxLen {
			return enc, nil
		}
		if !truncate {
			return enc, e.tooLong(enc.Len())
		}
		return keepEnds(enc, e.prefix, e.maxLen), nil
	}
	switch {
	case len(in.IDs) == 0:
		return tokenizer.Encoding{}, &apiError{http.StatusUnprocessableEntity, "Input validation error: `inputs` cannot be empty", errValidation}
	case prompt != "":
		return tokenizer.Encoding{}, badRequest("`prompt_name` applies to text inputs, not token ids")
	}
	vocab := int64(e.full.VocabSize())
	for _, id := range in.IDs {
		if id >= vocab {
			return tokenizer.Encoding{}, &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("Input validation error: token id %d is not below the vocabulary size %d", id, vocab), errValidation}
		}
	}
	ids := in.IDs
	if len(ids) > e.maxLen {
		if !truncate {
			return tokenizer.Encoding{}, e.tooLong(len(ids))
		}
		if left {
			ids = ids[len(ids)-e.maxLen:]
		} else {
			ids = ids[:e.maxLen]
		}
	}
	enc := tokenizer.Encoding{InputIDs: ids, AttentionMask: make([]int64, len(ids)), TokenTypeIDs: make([]int64, len(ids))}
	for i := range enc.AttentionMask {
		enc.AttentionMask[i] = 1
	}
	return enc, nil
}

// keepEnds truncates enc to n positions from the left: its first keep
// positions (the template's leading special tokens) and its last n-keep.
func keepEnds(enc tokenizer.Encoding, keep, n int) tokenizer.Encoding {
	cut := func(s []int64) []int64 {
		if s == nil {
			return nil
		}
		return append(append(make([]int64, 0, n), s[:keep]...), s[len(s)-(n-keep):]...)
	}
	return tokenizer.Encoding{InputIDs: cut(enc.InputIDs), AttentionMask: cut(enc.AttentionMask), TokenTypeIDs: cut(enc.TokenTypeIDs)}
}

func (e *encoder) tooLong(n int) *apiError {
	return &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("Input validation error: `inputs` must have at most %d tokens. Given: %d", e.maxLen, n), errValidation}
}

func (e *encoder) encodeWith(t *tokenizer.Tokenizer, texts []string) tokenizer.Encoding {
	if len(texts) == 2 {
		return t.EncodePair(texts[0], texts[1])
	}
	return t.Encode(texts[0])
}

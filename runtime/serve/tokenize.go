package serve

import (
	"context"
	"fmt"
	"net/http"
	"sync"

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
	// An empty text encodes to the template's tokens alone; a one-word
	// text shares their prefix.
	empty, word := full.Encode("").InputIDs, full.Encode("a").InputIDs
	for e.prefix < len(empty) && e.prefix < len(word) && empty[e.prefix] == word[e.prefix] {
		e.prefix++
	}
	e.suffix = len(empty) - e.prefix
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
		return enc, &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("Input validation error: `inputs` must have at most %d tokens. Given: %d", e.maxLen, enc.Len()), errValidation}
	}
	return e.encodeWith(e.trunc, texts), nil
}

func (e *encoder) encodeWith(t *tokenizer.Tokenizer, texts []string) tokenizer.Encoding {
	if len(texts) == 2 {
		return t.EncodePair(texts[0], texts[1])
	}
	return t.Encode(texts[0])
}

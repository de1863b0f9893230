package serve

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// classifyTokens answers POST /classify_tokens as transformers'
// token-classification pipeline answers (modelrt.PipelineEntities,
// PipelineTokens), with any of its aggregation strategies.
func (s *Server) classifyTokens(ctx context.Context, body []byte, t *timings) (any, *apiError) {
	if s.info.Kind != TokenClassifier {
		return nil, s.wrongKind("a token classifier")
	}
	req, e := decodeClassifyTokens(body)
	if e != nil {
		return nil, e
	}
	if e := s.checkCount("inputs", len(req.Inputs)); e != nil {
		return nil, e
	}
	// The encodings, offsets included, are the ones the batcher runs, so
	// each row of logits belongs to the token whose offset it is given.
	trunc := s.truncates(req.Truncate)
	encs := make([]tokenizer.Encoding, len(req.Inputs))
	logits, e := s.inferEach(ctx, len(req.Inputs), func(i int) (tokenizer.Encoding, *apiError) {
		var e *apiError
		encs[i], e = s.enc.encodeOffsets(req.Inputs[i], trunc)
		return encs[i], e
	}, t)
	if e != nil {
		return nil, e
	}
	if e := finite(logits); e != nil {
		return nil, e
	}
	labels := make([]string, len(s.info.Labels))
	for i := range labels {
		labels[i] = s.label(i)
	}
	out := make([]any, len(req.Inputs))
	for i, text := range req.Inputs {
		n := encs[i].Len()
		if len(logits[i]) != n*len(labels) {
			return nil, &apiError{http.StatusInternalServerError, fmt.Sprintf("the model returned %d logits for a sequence of %d tokens: want %d labels per token", len(logits[i]), n, len(labels)), errBackend}
		}
		tags := modelrt.TagTokens(logits[i], len(labels), labels, encs[i].Offsets, s.enc.prefix, n-s.enc.suffix)
		if req.Strategy == modelrt.AggregateNone {
			out[i] = modelrt.PipelineTokens(text, tags)
			continue
		}
		// "simple" groups the tokens; "first", "average" and "max" group
		// the words AggregateWords makes of them (tags as they are for
		// "simple").
		words := modelrt.AggregateWords(tags, logits[i], len(labels), labels, text, encs[i].InputIDs, s.enc.full, req.Strategy)
		out[i] = modelrt.PipelineEntities(text, modelrt.GroupEntities(words))
	}
	if req.Single {
		return out[0], nil
	}
	return out, nil
}

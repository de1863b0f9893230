package serve

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// similarity answers POST /similarity as TEI answers it (the Inference
// API's sentence-similarity task): the source sentence and the sentences
// are embedded as one /embed request with "normalize": false (its
// truncation, prompts, batching and checks), and the answer is the cosine
// similarity of the source's vector with each sentence's, in order.
//
// The client batch size counts the source too, 1 + len(sentences), as
// TEI's does. A sparse embedder is answered too, with its dense
// vocabulary-wide vectors: TEI's /similarity embeds with normalize false,
// which TEI's SPLADE models answer (only normalize is their 424).
func (s *Server) similarity(ctx context.Context, body []byte, t *timings) (any, *apiError) {
	if s.info.Kind != Embedder && s.info.Kind != SparseEmbedder {
		return nil, s.wrongKind("an embedding")
	}
	req, e := decodeSimilarity(body)
	if e != nil {
		return nil, e
	}
	if len(req.Sentences) == 0 {
		// TEI's words: the field is inputs.sentences, and the source
		// alone is not a batch to compare.
		return nil, &apiError{http.StatusBadRequest, "`inputs.sentences` cannot be empty", errEmpty}
	}
	if e := s.checkCount("inputs.sentences", 1+len(req.Sentences)); e != nil {
		return nil, e
	}
	inputs := make([]input, 1+len(req.Sentences))
	inputs[0].Text = req.Source
	for i, text := range req.Sentences {
		inputs[1+i].Text = text
	}
	vecs, e := s.embedInputs(ctx, inputs, req.PromptName, req.Truncate, req.Left, false, t)
	if e != nil {
		return nil, e
	}
	out := make([]float32, len(req.Sentences))
	for i, v := range vecs[1:] {
		if len(v) != len(vecs[0]) {
			return nil, &apiError{http.StatusInternalServerError, fmt.Sprintf("the model returned vectors of %d and %d values", len(vecs[0]), len(v)), errBackend}
		}
		out[i] = cosine(vecs[0], v)
	}
	return out, nil
}

// cosine is modelrt.Cosine rounded to float32 once, so the answer is the
// float32 nearest the cosine of the model's vectors however long they
// are; TEI computes the cosine distance in float64 (simsimd), rounds it
// to float32 and subtracts it from 1, which loses bits near 0.
func cosine(a, b []float32) float32 { return float32(modelrt.Cosine(a, b)) }

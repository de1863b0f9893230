package serve

import (
	"context"

	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// embedSparse answers POST /embed_sparse as TEI answers it for a model
// served with --pooling splade: each input's non-zero vocabulary entries
// {index, value}, in index order (modelrt.Sparsify), one list per input
// even for a single text (TEI's EmbedSparseResponse). The inputs,
// truncation and prompts are /embed's; the vectors are the model's own
// pooled ones, never normalised. Their width is not checked against the
// tokenizer's vocabulary: a model's vocab_size may be padded past it (to
// a multiple of 64, say), and TEI answers those indexes too.
func (s *Server) embedSparse(ctx context.Context, body []byte, t *timings) (any, *apiError) {
	if s.info.Kind != SparseEmbedder {
		// TEI's own words, which differ from its other endpoints'.
		return nil, modelCannot("Model is not an embedding model with SPLADE pooling")
	}
	req, e := decodeEmbedSparse(body)
	if e != nil {
		return nil, e
	}
	if e := s.checkCount("inputs", len(req.Inputs)); e != nil {
		return nil, e
	}
	vecs, e := s.embedInputs(ctx, req.Inputs, req.PromptName, req.Truncate, req.Left, false, t)
	if e != nil {
		return nil, e
	}
	out := make([][]modelrt.SparseValue, len(vecs))
	for i, v := range vecs {
		out[i] = modelrt.Sparsify(v)
	}
	return out, nil
}

package hf

import (
	"fmt"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// DeBERTa v1 (model_type "deberta": microsoft/deberta-base, -large,
// -xlarge and their MNLI classifiers, the NLI cross-encoders fine-tuned
// from them) computes what v2 does with relative distances clamped to
// max_relative_positions, no position buckets, no norm of the relative
// embeddings and no shared projections, after transformers'
// modeling_deberta.py:
//
//   - Q, K and V come from one in_proj without bias, [3·hidden, hidden],
//     whose output rows are per head: head h's q, k and v at rows
//     h·3d + [0, d), + [d, 2d), + [2d, 3d); q_bias and v_bias are added
//     to Q and V (K has none).
//   - The scale s = √(d · (1 + terms)) divides Q before Q·Kᵀ and c2p, and
//     the position query projection before p2c, where v2 divides each
//     product: the same quotient, rounded at another step.
//   - c2p projects the relative embeddings with pos_proj (no bias), p2c
//     with pos_q_proj; both gather from the table sliced to the span
//     att_span = min(seq, max_relative_positions) around its middle,
//     indices clamp(±(i - j) + att_span, 0, 2·att_span - 1): for any
//     sequence length the row of the whole table is clamp(±(i - j) +
//     max_relative_positions, 0, 2·max_relative_positions - 1), v2's
//     unbucketed index (|i - j| < seq, so the slice's clamp only binds
//     where the table's does).
//   - XSoftmax zeroes the probabilities of masked pairs after the
//     softmax: masked keys' are zero already (the fill), padded queries'
//     rows are no output sqc promises, as for v2.
//
// So v1 builds as v2 does, reading its parameters under v2's names
// through debertaV1Weights. talking_head (a head-mixing projection no
// published checkpoint sets) is refused.

// debertaV1Weights serves a v1 checkpoint's parameters under the names
// buildDeBERTa reads: query_proj, key_proj and value_proj from in_proj
// (de-interleaved per head) with q_bias, no bias and v_bias; pos_key_proj
// from pos_proj (no bias), pos_query_proj from pos_q_proj. Other names
// pass through.
type debertaV1Weights struct {
	WeightSource
	heads, hidden int
}

// File names the checkpoint, for errors.
func (w debertaV1Weights) File() string { return SourceFile(w.WeightSource) }

func (w debertaV1Weights) Weight(name string, shape []int64) (*compiler.Tensor, error) {
	scope, param, ok := strings.Cut(name, ".attention.self.")
	if !ok {
		return w.WeightSource.Weight(name, shape)
	}
	self := scope + ".attention.self."
	h := int64(w.hidden)
	switch param {
	case "query_proj.weight", "key_proj.weight", "value_proj.weight":
		in, err := w.WeightSource.Weight(self+"in_proj.weight", []int64{3 * h, h})
		if err != nil {
			return nil, err
		}
		if len(in.Shape) != 2 || in.Shape[0] != 3*h || in.Shape[1] != h {
			return nil, compiler.BadInput(SourceFile(w.WeightSource), self+"in_proj.weight",
				fmt.Errorf("%w: got %v, want [%d, %d] (implied by config.json)", compiler.ErrShapeMismatch, in.Shape, 3*h, h))
		}
		part := map[string]int64{"query_proj.weight": 0, "key_proj.weight": 1, "value_proj.weight": 2}[param]
		d := h / int64(w.heads)
		out := compiler.NewTensor(compiler.Float32, h, h)
		for head := range int64(w.heads) {
			src := in.F32[(head*3*d+part*d)*h : (head*3*d+part*d+d)*h]
			copy(out.F32[head*d*h:(head+1)*d*h], src)
		}
		return out, nil
	case "query_proj.bias":
		return w.WeightSource.Weight(self+"q_bias", shape)
	case "value_proj.bias":
		return w.WeightSource.Weight(self+"v_bias", shape)
	case "key_proj.bias", "pos_key_proj.bias":
		return compiler.NewTensor(compiler.Float32, shape...), nil // none: K + 0
	case "pos_key_proj.weight":
		return w.WeightSource.Weight(self+"pos_proj.weight", shape)
	case "pos_query_proj.weight", "pos_query_proj.bias":
		return w.WeightSource.Weight(self+"pos_q_proj."+strings.TrimPrefix(param, "pos_query_proj."), shape)
	}
	return w.WeightSource.Weight(name, shape)
}

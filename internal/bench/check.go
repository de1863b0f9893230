package bench

import (
	"fmt"
	"math"
	"sort"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// CheckInputs are the peer harness's accuracy-check inputs (bench_torch.py
// check()): batch 2 x sequence 128, the second sequence padded from
// position 64 on.
func (m *Model) CheckInputs() (map[string]*compiler.Tensor, error) {
	const batch, seq = 2, 128
	in, err := m.Inputs(batch, seq, InputSeed)
	if err != nil {
		return nil, err
	}
	if mask, ok := in[AttentionMask]; ok {
		for j := seq / 2; j < seq; j++ {
			mask.I64[seq+j] = 0
		}
	}
	return in, nil
}

// WideCheckSequences is the batch of WideCheckInputs.
const WideCheckSequences = 16

// WideCheckInputs are WideCheckSequences random sequences of 128 token
// positions, sequence i padded from 128 - 8i on: the accuracy bar's logits
// cosine is taken over their 32 logits rather than CheckInputs' 4, which
// one sequence's quantisation noise moves by several 1e-4 (BERT-base with
// random weights, INT8 against FP32: 0.99946 to 0.99990 across batches of
// four 128-token sequences, the same code).
func (m *Model) WideCheckInputs() (map[string]*compiler.Tensor, error) {
	const seq = 128
	in, err := m.Inputs(WideCheckSequences, seq, InputSeed+1)
	if err != nil {
		return nil, err
	}
	if mask, ok := in[AttentionMask]; ok {
		for b := range WideCheckSequences {
			for j := seq - 8*b; j < seq; j++ {
				mask.I64[b*seq+j] = 0
			}
		}
	}
	return in, nil
}

// Agreement compares an engine's outputs with reference outputs of the
// same inputs: for each float32 output, the cosine similarity of the
// flattened tensors ("cos_logits" for logits, "cos_hidden" for
// last_hidden_state, "cos_NAME" otherwise, as the peer harness names
// them) and the largest absolute difference ("max_abs_NAME"). vs names
// the reference.
func Agreement(ref, got map[string]*compiler.Tensor, vs string) (map[string]any, error) {
	out := map[string]any{"vs": vs}
	names := make([]string, 0, len(ref))
	for n := range ref {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		r, g := ref[name], got[name]
		if r.DType != compiler.Float32 {
			continue
		}
		if g == nil || g.DType != compiler.Float32 || len(g.F32) != len(r.F32) {
			return nil, fmt.Errorf("output %q: missing or of another shape than the reference", name)
		}
		key := name
		switch name {
		case "logits":
			key = "logits"
		case "last_hidden_state":
			key = "hidden"
		}
		out["cos_"+key] = modelrt.Cosine(r.F32, g.F32)
		maxAbs := 0.0
		for i := range r.F32 {
			maxAbs = math.Max(maxAbs, math.Abs(float64(r.F32[i])-float64(g.F32[i])))
		}
		out["max_abs_"+key] = maxAbs
	}
	return out, nil
}

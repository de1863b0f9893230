package compiler

import "slices"

// ZeroMaskedTokens zeroes, in place, the positions of per-token outputs
// that mask (int64 [batch, seq], 1 = real token) excludes: every float32
// tensor of outs shaped [batch, seq, ...]. The INT8 engine and generated
// packages run batches packed (real tokens only) and write zeros there,
// where the FP32 interpreter, PyTorch and padded runs compute values no
// one should read; comparisons apply this to both sides.
func ZeroMaskedTokens(outs map[string]*Tensor, mask *Tensor) {
	if mask == nil || mask.DType != Int64 || len(mask.Shape) != 2 {
		return
	}
	batch, seq := mask.Shape[0], mask.Shape[1]
	for _, t := range outs {
		if t == nil || t.DType != Float32 || len(t.Shape) < 3 || t.Shape[0] != batch || t.Shape[1] != seq {
			continue
		}
		width := int64(len(t.F32)) / (batch * seq)
		for i, m := range mask.I64 {
			if m == 0 {
				clear(t.F32[int64(i)*width : int64(i+1)*width])
			}
		}
	}
}

// ZeroMaskedOutputs is ZeroMaskedTokens for the outputs of g, and also
// zeroes those of rank 2 that are per token ([batch, sequence]: a
// question answerer's start and end logits), which a tensor's shape
// cannot tell from a classifier's [batch, labels]: g's declared shape
// can, its second dimension the symbolic sequence.
func ZeroMaskedOutputs(g *Graph, outs map[string]*Tensor, mask *Tensor) {
	ZeroMaskedTokens(outs, mask)
	if mask == nil || mask.DType != Int64 || len(mask.Shape) != 2 {
		return
	}
	for _, o := range g.Outputs {
		t := outs[o.Name]
		if len(o.Shape) != 2 || o.Shape[1].Param == "" || t == nil || t.DType != Float32 || !slices.Equal(t.Shape, mask.Shape) {
			continue
		}
		for i, m := range mask.I64 {
			if m == 0 {
				t.F32[i] = 0
			}
		}
	}
}

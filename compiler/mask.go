package compiler

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

package interp

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// Kernels of the sqc ops whose bits runtime/nn defines: sqc.Rotary and
// sqc.MaskedSum.

// sqc.Rotary (passes.FuseRotary) runs on runtime/nn's kernel, which its
// OpDef names as the definition of its bits: float32 products and sums in
// the exported graph's order, so the interpreter's run of the fused graph
// is the unfused one's bit for bit (passes' tests compare the two).
func init() {
	sqcKernels["sqc.Rotary"] = sqcKernel("sqc.Rotary", rotary)
}

func rotary(c *call) ([]*compiler.Tensor, error) {
	x, cos, sin := c.in[0], c.in[1], c.in[2]
	if x.DType != compiler.Float32 || cos.DType != compiler.Float32 || sin.DType != compiler.Float32 {
		return nil, fmt.Errorf("%w: Rotary of %s with tables %s, %s", compiler.ErrDTypeMismatch, x.DType, cos.DType, sin.DType)
	}
	heads, d, tb, err := compiler.RotaryShape(c.node.AttrInt("heads", 0), x.Shape, cos.Shape, sin.Shape)
	if err != nil {
		return nil, err
	}
	dims := nn.RotaryDims{Batch: int(x.Shape[0]), Seq: int(x.Shape[1]), Heads: heads, HeadSize: d, TableBatch: tb}
	y := make([]float32, len(x.F32))
	nn.RotaryParallel(nil, y, x.F32, cos.F32, sin.F32, &dims)
	return []*compiler.Tensor{ops.FromSlice(x.Shape, y)}, nil
}

// sqc.MaskedSum (passes.FuseMaskedSum) runs on runtime/nn's kernel, which
// its OpDef names as the definition of its bits: the exported Mul's
// float32 products summed in float64 in token order, as the generic
// ReduceSum does.
func init() {
	sqcKernels["sqc.MaskedSum"] = sqcKernel("sqc.MaskedSum", maskedSum)
}

func maskedSum(c *call) ([]*compiler.Tensor, error) {
	x, m := c.in[0], c.in[1]
	if x.DType != compiler.Float32 || m.DType != compiler.Int64 || len(x.Shape) != 3 || len(m.Shape) != 2 ||
		m.Shape[0] != x.Shape[0] || m.Shape[1] != x.Shape[1] {
		return nil, fmt.Errorf("%w: MaskedSum of %s%v with mask %s%v", compiler.ErrShapeMismatch, x.DType, x.Shape, m.DType, m.Shape)
	}
	batch, seq, hidden := x.Shape[0], x.Shape[1], x.Shape[2]
	y := make([]float32, batch*hidden)
	nn.MaskedSum(y, x.F32, m.I64, int(batch), int(seq), int(hidden))
	shape := []int64{batch, hidden}
	if c.node.AttrInt("keepdims", 0) == 1 {
		shape = []int64{batch, 1, hidden}
	}
	return []*compiler.Tensor{ops.FromSlice(shape, y)}, nil
}

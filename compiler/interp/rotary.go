package interp

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/ops"
)

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

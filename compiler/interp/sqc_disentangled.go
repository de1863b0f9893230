package interp

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// sqc.DisentangledBias (passes.FuseDisentangledBias) runs on runtime/nn's
// kernel, which its OpDef names as the definition of its bits.
func init() {
	sqcKernels["sqc.DisentangledBias"] = sqcKernel("sqc.DisentangledBias", disentangledBias)
}

func disentangledBias(c *call) ([]*compiler.Tensor, error) {
	var shapes [6][]int64
	var f32 [6][]float32
	var idx [6][]int64
	for i := range 6 {
		if i >= len(c.in) || c.in[i] == nil {
			continue
		}
		t := c.in[i]
		want := compiler.Float32
		if i == 2 || i == 5 {
			want = compiler.Int64
		}
		if t.DType != want {
			return nil, fmt.Errorf("%w: DisentangledBias input %d is %s, want %s", compiler.ErrDTypeMismatch, i, t.DType, want)
		}
		shapes[i], f32[i], idx[i] = t.Shape, t.F32, t.I64
	}
	heads := c.node.AttrInt("heads", 0)
	size, err := compiler.DisentangledBiasShapes(heads, shapes)
	if err != nil {
		return nil, err
	}
	d := nn.DisentangledDims{Batch: size.Batch, Seq: size.Seq, Heads: int(heads), HeadDim: size.HeadSize, Rows: size.Rows,
		QStride: int(heads) * size.HeadSize, KStride: int(heads) * size.HeadSize, Divisor: c.node.AttrFloat("divisor", 1)}
	y := make([]float32, size.Batch*int(heads)*size.Seq*size.Seq)
	scratch := make([]float32, nn.DisentangledScratchLen(1, size.Rows, size.HeadSize))
	if err := nn.DisentangledBias(nil, scratch, y, f32[0], f32[1], idx[2], f32[3], f32[4], idx[5], &d); err != nil {
		return nil, fmt.Errorf("%w: %v", compiler.ErrInvalidRequest, err)
	}
	return []*compiler.Tensor{ops.FromSlice([]int64{int64(size.Batch), heads, int64(size.Seq), int64(size.Seq)}, y)}, nil
}

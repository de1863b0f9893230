package interp

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// sqc.LayerNormDual (compiler/ops_sqc_layernorm.go) is two
// LayerNormalizations of one input over its last axis: each output is
// computed by the LayerNormalization kernel with its own scale and bias,
// so merging the pair (passes.MergeSmoothedLayerNorms) changes no bits.
func init() {
	sqcKernels["sqc.LayerNormDual"] = sqcKernel("sqc.LayerNormDual", layerNormDual)
	sqcKernels["sqc.LayerNorm"] = sqcKernel("sqc.LayerNorm", layerNormU8)
}

// layerNormU8 is sqc.LayerNorm: the LayerNormalization kernel, then its
// output quantised with runtime/nn's function.
func layerNormU8(c *call) ([]*compiler.Tensor, error) {
	out, err := c.generic("LayerNormalization", c.in)
	if err != nil {
		return nil, err
	}
	y := out[0]
	scale, zp, _ := compiler.U8Output(c.node)
	q, err := quantizeRows(y, scale, zp)
	if err != nil {
		return nil, err
	}
	if len(c.node.Outputs) > 1 {
		return []*compiler.Tensor{q, y}, nil
	}
	return []*compiler.Tensor{q}, nil
}

// quantizeRows is y quantised statically to u8 over its last dim.
func quantizeRows(y *compiler.Tensor, scale float32, zp int32) (*compiler.Tensor, error) {
	if y.DType != compiler.Float32 || len(y.Shape) == 0 {
		return nil, fmt.Errorf("%w: writing u8 wants f32 [..., N], has %s %v", compiler.ErrDTypeMismatch, y.DType, y.Shape)
	}
	n := int(y.Shape[len(y.Shape)-1])
	q := compiler.NewTensor(compiler.Uint8, y.Shape...)
	nn.QuantizeU8(q.U8, n, y.F32, n, y.Len()/max(n, 1), n, 1/scale, zp)
	return q, nil
}

func layerNormDual(c *call) ([]*compiler.Tensor, error) {
	// The op's attributes are LayerNormalization's minus axis (always
	// the last) and stash_type (always 1), which the kernel defaults to.
	var bias, biasQ *compiler.Tensor
	if len(c.in) > 4 {
		bias, biasQ = c.in[3], c.in[4]
	}
	one := func(scale, b *compiler.Tensor) (*compiler.Tensor, error) {
		in := []*compiler.Tensor{c.in[0], scale}
		if b != nil {
			in = append(in, b)
		}
		out, err := c.generic("LayerNormalization", in)
		if err != nil {
			return nil, err
		}
		return out[0], nil
	}
	y, err := one(c.in[1], bias)
	if err != nil {
		return nil, err
	}
	yq, err := one(c.in[2], biasQ)
	if err != nil {
		return nil, err
	}
	if scale, zp, ok := compiler.U8Output(c.node); ok { // y_q written quantised
		if yq, err = quantizeRows(yq, scale, zp); err != nil {
			return nil, err
		}
	}
	return []*compiler.Tensor{y, yq}, nil
}

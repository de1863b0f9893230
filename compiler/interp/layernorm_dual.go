package interp

import (
	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// sqc.LayerNormDual (compiler/ops_sqc_layernorm.go) is two
// LayerNormalizations of one input over its last axis: each output is
// computed by the LayerNormalization kernel with its own scale and bias,
// so merging the pair (passes.MergeSmoothedLayerNorms) changes no bits.
func init() {
	sqcKernels["sqc.LayerNormDual"] = kernelSpec{layerNormDual, ops.Arity{MinIn: 3, MaxIn: 5, MaxOut: 2}}
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
	return []*compiler.Tensor{y, yq}, nil
}

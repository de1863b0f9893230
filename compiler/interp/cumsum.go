package interp

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
)

// cumSum is ONNX CumSum: running sums of X along the axis the scalar
// second input names; "exclusive" leaves each element out of its own sum
// (the first becomes 0) and "reverse" runs from the end. RoBERTa's position
// ids are cumsum(input_ids != padding_idx, 1). Sums accumulate in X's type,
// as ONNX Runtime and PyTorch do.
func cumSum(c *call) ([]*compiler.Tensor, error) {
	x := c.in[0]
	axes, err := intValues(c.in[1], "CumSum axis")
	if err != nil {
		return nil, err
	}
	if len(axes) != 1 || len(c.in[1].Shape) > 1 {
		return nil, fmt.Errorf("%w: CumSum axis must be a scalar, has shape %v", compiler.ErrShapeMismatch, c.in[1].Shape)
	}
	axis, err := normAxis(axes[0], len(x.Shape))
	if err != nil {
		return nil, err
	}
	exclusive := c.node.AttrInt("exclusive", 0) != 0
	reverse := c.node.AttrInt("reverse", 0) != 0
	switch x.DType {
	case compiler.Float32:
		return one(cumSumOf[float32](x, axis, exclusive, reverse), nil)
	case compiler.Float64:
		return one(cumSumOf[float64](x, axis, exclusive, reverse), nil)
	case compiler.Int64:
		return one(cumSumOf[int64](x, axis, exclusive, reverse), nil)
	case compiler.Int32:
		return one(cumSumOf[int32](x, axis, exclusive, reverse), nil)
	}
	return nil, unsupported(x.DType)
}

func cumSumOf[T number](x *compiler.Tensor, axis int, exclusive, reverse bool) *compiler.Tensor {
	src := elems[T](x)
	dst := make([]T, len(src))
	n := int(x.Shape[axis])
	inner := stridesOf(x.Shape)[axis] // elements between neighbours along axis
	outer := 1
	for _, d := range x.Shape[:axis] {
		outer *= int(d)
	}
	for o := range outer {
		for in := range inner {
			base := o*n*inner + in
			var acc T
			for k := range n {
				j := k
				if reverse {
					j = n - 1 - k
				}
				i := base + j*inner
				if exclusive {
					dst[i] = acc
					acc += src[i]
				} else {
					acc += src[i]
					dst[i] = acc
				}
			}
		}
	}
	return fromSlice(append([]int64(nil), x.Shape...), dst)
}

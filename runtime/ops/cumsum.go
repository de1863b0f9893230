package ops

import "fmt"

// cumSum is ONNX CumSum: running sums of x along the axis given by the
// scalar second input, with the exclusive and reverse attributes (RoBERTa's
// position ids are cumsum(mask) * mask + padding_idx). Sums are in x's own
// type, added in order along the axis, as ONNX Runtime and PyTorch do.
func cumSum(c *call) ([]*Tensor, error) {
	x := c.in[0]
	ax, err := intValues(c.in[1], "CumSum axis")
	if err != nil {
		return nil, err
	}
	if len(ax) != 1 {
		return nil, fmt.Errorf("%w: CumSum axis must hold one value, has %d", ErrShapeMismatch, len(ax))
	}
	axis, err := normAxis(ax[0], len(x.Shape))
	if err != nil {
		return nil, err
	}
	exclusive, reverse := c.node.Attrs.Int("exclusive", 0) != 0, c.node.Attrs.Int("reverse", 0) != 0
	switch x.DType {
	case Float32:
		return one(cumSumOf[float32](x, axis, exclusive, reverse), nil)
	case Float64:
		return one(cumSumOf[float64](x, axis, exclusive, reverse), nil)
	case Int64:
		return one(cumSumOf[int64](x, axis, exclusive, reverse), nil)
	case Int32:
		return one(cumSumOf[int32](x, axis, exclusive, reverse), nil)
	}
	return nil, unsupported(x.DType)
}

func cumSumOf[T float32 | float64 | int64 | int32](x *Tensor, axis int, exclusive, reverse bool) *Tensor {
	in := elems[T](x)
	out := make([]T, len(in))
	n := int(x.Shape[axis])
	inner := int(NumElements(x.Shape[axis+1:]))
	outer := int(NumElements(x.Shape[:axis]))
	for o := range outer {
		for i := range inner {
			var sum T
			for k := range n {
				j := k
				if reverse {
					j = n - 1 - k
				}
				at := (o*n+j)*inner + i
				if exclusive {
					out[at] = sum
					sum += in[at]
				} else {
					sum += in[at]
					out[at] = sum
				}
			}
		}
	}
	return FromSlice(append([]int64(nil), x.Shape...), out)
}

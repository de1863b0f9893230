package ops

import (
	"fmt"
	"math"
	"slices"
)

// constant is ONNX Constant. The ONNX frontend folds value_float(s) and
// value_int(s) into "value"; graphs built by hand may still use them.
func constant(c *call) ([]*Tensor, error) {
	attrs := c.node.Attrs
	if a, ok := attrs["value"]; ok && a.Kind == AttrTensor && a.Tensor != nil {
		if err := a.Tensor.Check(); err != nil {
			return nil, fmt.Errorf("%w: Constant value: %v", ErrMalformed, err)
		}
		return []*Tensor{a.Tensor}, nil
	}
	if a, ok := attrs["value_float"]; ok && a.Kind == AttrFloat {
		return []*Tensor{FromSlice([]int64{}, []float32{a.Float})}, nil
	}
	if a, ok := attrs["value_floats"]; ok && a.Kind == AttrFloats {
		return []*Tensor{FromSlice([]int64{int64(len(a.Floats))}, slices.Clone(a.Floats))}, nil
	}
	if a, ok := attrs["value_int"]; ok && a.Kind == AttrInt {
		return []*Tensor{FromSlice([]int64{}, []int64{a.Int})}, nil
	}
	if a, ok := attrs["value_ints"]; ok && a.Kind == AttrInts {
		return []*Tensor{FromSlice([]int64{int64(len(a.Ints))}, slices.Clone(a.Ints))}, nil
	}
	return nil, fmt.Errorf("%w: Constant has no value, value_float(s) or value_int(s) attribute", ErrMalformed)
}

// constantOfShape is ONNX ConstantOfShape: a tensor of the given shape
// filled with the one element of attribute "value" (float32 0 by default).
func constantOfShape(c *call) ([]*Tensor, error) {
	shape, err := intValues(c.in[0], "ConstantOfShape shape")
	if err != nil {
		return nil, err
	}
	shape = slices.Clone(shape)
	if err := c.checkValueShape(shape); err != nil {
		return nil, err
	}
	fill := FromSlice([]int64{1}, []float32{0})
	if a, ok := c.node.Attrs["value"]; ok {
		if a.Kind != AttrTensor || a.Tensor == nil || a.Tensor.Check() != nil || a.Tensor.Len() != 1 {
			return nil, fmt.Errorf("%w: ConstantOfShape value must be a one-element tensor", ErrMalformed)
		}
		fill = a.Tensor
	}
	// Broadcasting one element is a fill.
	return one(expandTo(withShape(fill, []int64{}), shape))
}

// rangeOp is ONNX Range: max(ceil((limit-start)/delta), 0) elements
// start + i*delta, of the inputs' dtype.
func rangeOp(c *call) ([]*Tensor, error) {
	if err := sameDType(c.in[0], c.in[1], c.in[2]); err != nil {
		return nil, err
	}
	dt := c.in[0].DType
	if dt == Int64 || dt == Int32 {
		// Integer arithmetic, exact beyond 2^53.
		s, _ := intValues(c.in[0], "Range start")
		l, _ := intValues(c.in[1], "Range limit")
		d, _ := intValues(c.in[2], "Range delta")
		if len(s) != 1 || len(l) != 1 || len(d) != 1 {
			return nil, fmt.Errorf("%w: Range operands must be scalars", ErrShapeMismatch)
		}
		start, limit, delta := s[0], l[0], d[0]
		if delta == 0 {
			return nil, fmt.Errorf("%w: Range delta is 0", ErrShapeMismatch)
		}
		n := int64(0)
		if delta > 0 && limit > start {
			n = (limit - start + delta - 1) / delta
		} else if delta < 0 && limit < start {
			n = (start - limit - delta - 1) / -delta
		}
		if err := c.checkValueShape([]int64{n}); err != nil {
			return nil, err
		}
		v := make([]int64, n)
		for i := range v {
			v[i] = start + int64(i)*delta
		}
		return one(Cast(FromSlice([]int64{n}, v), dt))
	}
	if !IsFloat(dt) {
		return nil, unsupported(dt)
	}
	start, err := scalarFloat(c.in[0], "Range start")
	if err != nil {
		return nil, err
	}
	limit, err := scalarFloat(c.in[1], "Range limit")
	if err != nil {
		return nil, err
	}
	delta, err := scalarFloat(c.in[2], "Range delta")
	if err != nil {
		return nil, err
	}
	if delta == 0 || math.IsNaN(delta) || math.IsNaN(start) || math.IsNaN(limit) {
		return nil, fmt.Errorf("%w: Range(%v, %v, %v) is not defined", ErrShapeMismatch, start, limit, delta)
	}
	count := math.Max(math.Ceil((limit-start)/delta), 0)
	if count > maxElements {
		return nil, fmt.Errorf("%w: Range of %v elements", ErrShapeMismatch, count)
	}
	n := int64(count)
	if err := c.checkValueShape([]int64{n}); err != nil {
		return nil, err
	}
	if dt == Float32 {
		// start + i*delta in float32 arithmetic, as ONNX's reference computes it.
		v := make([]float32, n)
		s, d := float32(start), float32(delta)
		for i := range v {
			v[i] = s + float32(i)*d
		}
		return []*Tensor{FromSlice([]int64{n}, v)}, nil
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = start + float64(i)*delta
	}
	return []*Tensor{FromSlice([]int64{n}, v)}, nil
}

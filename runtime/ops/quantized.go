package ops

import (
	"fmt"
	"math"
)

// The integer ops of models ONNX Runtime's dynamic quantiser made
// (compiler's ops_onnx_quant.go): the interpreter runs such a file as
// ONNX defines it, so that tests can compare it with ONNX Runtime before
// passes.DequantizeIntegerOps rewrites it.

// dynamicQuantizeLinear is ONNX DynamicQuantizeLinear, with ONNX
// Runtime's scale of 1 for an all-zero input (ONNX's formula divides by
// zero there).
func dynamicQuantizeLinear(c *call) ([]*Tensor, error) {
	x := c.in[0]
	if x.DType != Float32 {
		return nil, unsupported(x.DType)
	}
	lo, hi := float32(0), float32(0) // the range always holds 0
	for _, v := range x.F32 {
		lo, hi = min(lo, v), max(hi, v)
	}
	scale := float32(1)
	if hi != lo {
		scale = (hi - lo) / 255
	}
	zp := roundHalfEven(min(max(0-lo/scale, 0), 255))
	y := NewTensor(Uint8, x.Shape...)
	for i, v := range x.F32 {
		y.U8[i] = uint8(min(max(roundHalfEven(v/scale)+zp, 0), 255))
	}
	s, z := NewTensor(Float32), NewTensor(Uint8)
	s.F32[0], z.U8[0] = scale, uint8(zp)
	return []*Tensor{y, s, z}, nil
}

// roundHalfEven rounds to the nearest integer, ties to even, in float32.
func roundHalfEven(v float32) float32 { return float32(math.RoundToEven(float64(v))) }

// matMulInteger is ONNX MatMulInteger: the operands less their zero
// points, widened to int32, multiplied as MatMul multiplies.
func matMulInteger(c *call) ([]*Tensor, error) {
	a, b := c.in[0], c.in[1]
	var aZP, bZP *Tensor
	if len(c.in) > 2 {
		aZP = c.in[2]
	}
	if len(c.in) > 3 {
		bZP = c.in[3]
	}
	a32, err := lessZeroPoint(a, aZP, len(a.Shape)-2, "MatMulInteger A")
	if err != nil {
		return nil, err
	}
	b32, err := lessZeroPoint(b, bZP, len(b.Shape)-1, "MatMulInteger B")
	if err != nil {
		return nil, err
	}
	return matmul(&call{node: c.node, in: []*Tensor{a32, b32}, opset: c.opset, threads: c.threads, maxElements: c.maxElements})
}

// lessZeroPoint is x - zp in int32, zp a scalar (one element) or a
// vector along axis of x (rows of MatMulInteger's A, columns of its B,
// channels of DequantizeLinear).
func lessZeroPoint(x, zp *Tensor, axis int, what string) (*Tensor, error) {
	xs, err := integerValues(x, what)
	if err != nil {
		return nil, err
	}
	out := NewTensor(Int32, x.Shape...)
	if zp == nil {
		for i, v := range xs {
			out.I32[i] = int32(v)
		}
		return out, nil
	}
	if zp.DType != x.DType {
		return nil, fmt.Errorf("%w: %s zero point %s, want %s as the data", ErrDTypeMismatch, what, zp.DType, x.DType)
	}
	zs, _ := integerValues(zp, what)
	per, err := perAxis(x.Shape, len(zs), axis, what+" zero point")
	if err != nil {
		return nil, err
	}
	for i, v := range xs {
		out.I32[i] = int32(v - zs[per(i)])
	}
	return out, nil
}

// perAxis maps an element index of a tensor of the given shape to its
// parameter (scale or zero point) of n: 0 for one parameter, else the
// element's index along axis, whose length must be n.
func perAxis(shape []int64, n, axis int, what string) (func(int) int, error) {
	if n == 1 {
		return func(int) int { return 0 }, nil
	}
	if axis < 0 || axis >= len(shape) || shape[axis] != int64(n) {
		return nil, fmt.Errorf("%w: %s has %d values for shape %v (one, or one per index of axis %d)", ErrShapeMismatch, what, n, shape, axis)
	}
	inner := 1
	for _, d := range shape[axis+1:] {
		inner *= int(d)
	}
	return func(i int) int { return i / inner % n }, nil
}

// integerValues widens a u8, i8 or i32 tensor's values.
func integerValues(t *Tensor, what string) ([]int64, error) {
	out := make([]int64, 0, NumElements(t.Shape))
	switch t.DType {
	case Uint8:
		for _, v := range t.U8 {
			out = append(out, int64(v))
		}
	case Int8:
		for _, v := range t.I8 {
			out = append(out, int64(v))
		}
	case Int32:
		for _, v := range t.I32 {
			out = append(out, int64(v))
		}
	default:
		return nil, fmt.Errorf("%w: %s is %s, want u8, i8 or i32", ErrDTypeMismatch, what, t.DType)
	}
	return out, nil
}

// dequantizeLinear is ONNX DequantizeLinear (per tensor, or per axis from
// opset 13; not blocked): float32(x - zero point) * scale.
func dequantizeLinear(c *call) ([]*Tensor, error) {
	x, scale := c.in[0], c.in[1]
	var zp *Tensor
	if len(c.in) > 2 {
		zp = c.in[2]
	}
	if scale.DType != Float32 {
		return nil, fmt.Errorf("%w: DequantizeLinear scale is %s, want f32", ErrDTypeMismatch, scale.DType)
	}
	if c.node.Attrs.Int("block_size", 0) != 0 {
		return nil, fmt.Errorf("%w: DequantizeLinear with block_size", ErrUnsupportedOp)
	}
	axis, err := scaleAxis(c, x, scale)
	if err != nil {
		return nil, err
	}
	if zp != nil && NumElements(zp.Shape) != int64(len(scale.F32)) {
		return nil, fmt.Errorf("%w: DequantizeLinear zero point %v for scale %v", ErrShapeMismatch, zp.Shape, scale.Shape)
	}
	diff, err := lessZeroPoint(x, zp, axis, "DequantizeLinear input")
	if err != nil {
		return nil, err
	}
	per, err := perAxis(x.Shape, len(scale.F32), axis, "DequantizeLinear scale")
	if err != nil {
		return nil, err
	}
	y := NewTensor(Float32, x.Shape...)
	for i, d := range diff.I32 {
		y.F32[i] = float32(d) * scale.F32[per(i)]
	}
	return []*Tensor{y}, nil
}

// quantizeLinear is ONNX QuantizeLinear (per tensor, or per axis from
// opset 13; not blocked) into u8, or the zero point's type.
func quantizeLinear(c *call) ([]*Tensor, error) {
	x, scale := c.in[0], c.in[1]
	var zp *Tensor
	if len(c.in) > 2 {
		zp = c.in[2]
	}
	if x.DType != Float32 || scale.DType != Float32 {
		return nil, fmt.Errorf("%w: QuantizeLinear of %s by a %s scale, want f32", ErrDTypeMismatch, x.DType, scale.DType)
	}
	if c.node.Attrs.Int("block_size", 0) != 0 || c.node.Attrs.Int("output_dtype", 0) != 0 {
		return nil, fmt.Errorf("%w: QuantizeLinear with block_size or output_dtype", ErrUnsupportedOp)
	}
	axis, err := scaleAxis(c, x, scale)
	if err != nil {
		return nil, err
	}
	per, err := perAxis(x.Shape, len(scale.F32), axis, "QuantizeLinear scale")
	if err != nil {
		return nil, err
	}
	out, lo, hi := Uint8, float32(0), float32(255)
	var zs []int64
	if zp != nil {
		if zs, err = integerValues(zp, "QuantizeLinear zero point"); err != nil {
			return nil, err
		}
		if len(zs) != len(scale.F32) {
			return nil, fmt.Errorf("%w: QuantizeLinear zero point %v for scale %v", ErrShapeMismatch, zp.Shape, scale.Shape)
		}
		switch zp.DType {
		case Int8:
			out, lo, hi = Int8, -128, 127
		case Uint8:
		default:
			return nil, unsupported(zp.DType)
		}
	}
	y := NewTensor(out, x.Shape...)
	for i, v := range x.F32 {
		ch := per(i)
		q := roundHalfEven(v / scale.F32[ch])
		if zs != nil {
			q += float32(zs[ch])
		}
		q = min(max(q, lo), hi)
		if out == Int8 {
			y.I8[i] = int8(q)
		} else {
			y.U8[i] = uint8(q)
		}
	}
	return []*Tensor{y}, nil
}

// scaleAxis is the axis of x a (De)QuantizeLinear scale runs along: the
// node's axis (default 1) when there is more than one scale, else 0 (a
// single scale, whatever the axis says).
func scaleAxis(c *call, x, scale *Tensor) (int, error) {
	if len(scale.F32) <= 1 {
		return 0, nil
	}
	return normAxis(c.node.Attrs.Int("axis", 1), len(x.Shape))
}

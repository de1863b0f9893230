package ops

import (
	"fmt"
)

// elem is every Go element type a Tensor can hold.
type elem interface {
	~float32 | ~float64 | ~int64 | ~int32 | ~int8 | ~uint8 | ~bool
}

// number is elem without bool: the types arithmetic applies to.
type number interface {
	~float32 | ~float64 | ~int64 | ~int32 | ~int8 | ~uint8
}

// elems returns t's data slice typed as []T; T must match t.DType.
func elems[T elem](t *Tensor) []T {
	var z T
	switch any(z).(type) {
	case float32:
		return any(t.F32).([]T)
	case float64:
		return any(t.F64).([]T)
	case int64:
		return any(t.I64).([]T)
	case int32:
		return any(t.I32).([]T)
	case int8:
		return any(t.I8).([]T)
	case uint8:
		return any(t.U8).([]T)
	case bool:
		return any(t.Bool).([]T)
	}
	return nil
}

// dtypeOf is the DType holding Go type T.
func dtypeOf[T elem]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int64:
		return Int64
	case int32:
		return Int32
	case int8:
		return Int8
	case uint8:
		return Uint8
	case bool:
		return Bool
	}
	return Undefined
}

// FromSlice wraps data (not copied) as a tensor of shape.
func FromSlice[T elem](shape []int64, data []T) *Tensor {
	t := &Tensor{DType: dtypeOf[T](), Shape: shape}
	switch d := any(data).(type) {
	case []float32:
		t.F32 = d
	case []float64:
		t.F64 = d
	case []int64:
		t.I64 = d
	case []int32:
		t.I32 = d
	case []int8:
		t.I8 = d
	case []uint8:
		t.U8 = d
	case []bool:
		t.Bool = d
	}
	return t
}

// withShape returns a tensor sharing t's data under a new shape. The caller
// has checked that the element counts agree.
func withShape(t *Tensor, shape []int64) *Tensor {
	c := *t
	c.Shape = shape
	return &c
}

// CopyOf is a fresh copy of t that owns its storage; unlike Tensor.Clone,
// a zero-element copy still has its typed slice set (non-nil).
func CopyOf(t *Tensor) *Tensor {
	c := &Tensor{DType: t.DType, Shape: append([]int64{}, t.Shape...)}
	c.F32 = append([]float32(nil), t.F32...)
	c.F64 = append([]float64(nil), t.F64...)
	c.I64 = append([]int64(nil), t.I64...)
	c.I32 = append([]int32(nil), t.I32...)
	c.I8 = append([]int8(nil), t.I8...)
	c.U8 = append([]uint8(nil), t.U8...)
	c.Bool = append([]bool(nil), t.Bool...)
	// A copy of an empty typed slice is nil; keep the populated slice
	// non-nil so zero-element tensors still say which field they use.
	switch c.DType {
	case Float32:
		if c.F32 == nil {
			c.F32 = []float32{}
		}
	case Float64:
		if c.F64 == nil {
			c.F64 = []float64{}
		}
	case Int64:
		if c.I64 == nil {
			c.I64 = []int64{}
		}
	case Int32:
		if c.I32 == nil {
			c.I32 = []int32{}
		}
	case Int8:
		if c.I8 == nil {
			c.I8 = []int8{}
		}
	case Uint8:
		if c.U8 == nil {
			c.U8 = []uint8{}
		}
	case Bool:
		if c.Bool == nil {
			c.Bool = []bool{}
		}
	}
	return c
}

// take builds a tensor of shape whose element i is src's element idx[i]:
// the one type-generic primitive behind Transpose, Slice, Expand and
// broadcasting.
func take(src *Tensor, shape []int64, idx []int) *Tensor {
	switch src.DType {
	case Float32:
		return FromSlice(shape, takeT(src.F32, idx))
	case Float64:
		return FromSlice(shape, takeT(src.F64, idx))
	case Int64:
		return FromSlice(shape, takeT(src.I64, idx))
	case Int32:
		return FromSlice(shape, takeT(src.I32, idx))
	case Int8:
		return FromSlice(shape, takeT(src.I8, idx))
	case Uint8:
		return FromSlice(shape, takeT(src.U8, idx))
	case Bool:
		return FromSlice(shape, takeT(src.Bool, idx))
	}
	return &Tensor{DType: src.DType, Shape: shape}
}

func takeT[T any](s []T, idx []int) []T {
	o := make([]T, len(idx))
	for i, j := range idx {
		o[i] = s[j]
	}
	return o
}

// CopyElems copies n elements of src from sOff into dst at dOff; both have
// the same DType.
func CopyElems(dst *Tensor, dOff int, src *Tensor, sOff, n int) {
	switch src.DType {
	case Float32:
		copy(dst.F32[dOff:dOff+n], src.F32[sOff:sOff+n])
	case Float64:
		copy(dst.F64[dOff:dOff+n], src.F64[sOff:sOff+n])
	case Int64:
		copy(dst.I64[dOff:dOff+n], src.I64[sOff:sOff+n])
	case Int32:
		copy(dst.I32[dOff:dOff+n], src.I32[sOff:sOff+n])
	case Int8:
		copy(dst.I8[dOff:dOff+n], src.I8[sOff:sOff+n])
	case Uint8:
		copy(dst.U8[dOff:dOff+n], src.U8[sOff:sOff+n])
	case Bool:
		copy(dst.Bool[dOff:dOff+n], src.Bool[sOff:sOff+n])
	}
}

// intValues reads an integer tensor (i64, i32, i8, u8) as int64s, for shape,
// axes and index operands.
func intValues(t *Tensor, what string) ([]int64, error) {
	switch t.DType {
	case Int64:
		return t.I64, nil
	case Int32:
		return convertSlice[int32, int64](t.I32), nil
	case Int8:
		return convertSlice[int8, int64](t.I8), nil
	case Uint8:
		return convertSlice[uint8, int64](t.U8), nil
	}
	return nil, fmt.Errorf("%w: %s must be an integer tensor, got %s", ErrDTypeMismatch, what, t.DType)
}

// scalarFloat reads a one-element numeric tensor as float64 (Range).
func scalarFloat(t *Tensor, what string) (float64, error) {
	if t.Len() != 1 {
		return 0, fmt.Errorf("%w: %s must hold one element, has shape %v", ErrShapeMismatch, what, t.Shape)
	}
	switch t.DType {
	case Float32:
		return float64(t.F32[0]), nil
	case Float64:
		return t.F64[0], nil
	case Int64:
		return float64(t.I64[0]), nil
	case Int32:
		return float64(t.I32[0]), nil
	case Int8:
		return float64(t.I8[0]), nil
	case Uint8:
		return float64(t.U8[0]), nil
	}
	return 0, fmt.Errorf("%w: %s must be numeric, got %s", ErrDTypeMismatch, what, t.DType)
}

func convertSlice[S, D number](s []S) []D {
	d := make([]D, len(s))
	for i, v := range s {
		d[i] = D(v)
	}
	return d
}

// Float64s reads any numeric or bool tensor as float64 values.
func Float64s(t *Tensor) []float64 {
	switch t.DType {
	case Float32:
		return convertSlice[float32, float64](t.F32)
	case Float64:
		return t.F64
	case Int64:
		return convertSlice[int64, float64](t.I64)
	case Int32:
		return convertSlice[int32, float64](t.I32)
	case Int8:
		return convertSlice[int8, float64](t.I8)
	case Uint8:
		return convertSlice[uint8, float64](t.U8)
	case Bool:
		d := make([]float64, len(t.Bool))
		for i, b := range t.Bool {
			if b {
				d[i] = 1
			}
		}
		return d
	}
	return nil
}

// normAxis maps a possibly negative axis into [0, rank).
func normAxis(axis int64, rank int) (int, error) {
	a := axis
	if a < 0 {
		a += int64(rank)
	}
	if a < 0 || a >= int64(rank) {
		return 0, fmt.Errorf("%w: axis %d out of range for rank %d", ErrShapeMismatch, axis, rank)
	}
	return int(a), nil
}

// maxElements bounds any tensor the interpreter allocates (2^31 elements,
// 8 GiB of f32), so that a bad shape operand fails with an error instead of
// an out-of-memory crash, which Go cannot recover from.
const maxElements = 1 << 31

// CheckedElements multiplies dims, failing on negative dims or on a product
// above maxElements.
func CheckedElements(shape []int64) (int, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("%w: negative dimension in %v", ErrShapeMismatch, shape)
		}
		if d > maxElements || (d != 0 && n > maxElements/d) {
			return 0, fmt.Errorf("%w: shape %v exceeds %d elements", ErrShapeMismatch, shape, int64(maxElements))
		}
		n *= d
	}
	return int(n), nil
}

// stridesOf returns row-major element strides.
func stridesOf(shape []int64) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= int(shape[i])
	}
	return s
}

func IsFloat(dt DType) bool { return dt == Float32 || dt == Float64 }

package ops

import (
	"fmt"
	"slices"
)

// Tensor is a concrete, dense, row-major tensor: an initializer, a constant
// attribute, or an activation inside the interpreter. Exactly one of the
// typed slices is set, the one matching DType, and its length is
// Shape's element count.
type Tensor struct {
	DType DType
	Shape []int64

	F32  []float32
	F64  []float64
	I64  []int64
	I32  []int32
	I8   []int8
	U8   []uint8
	Bool []bool
}

// NumElements is the product of dims (1 for a scalar).
func NumElements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// NewTensor allocates a zeroed tensor of the given type and shape.
func NewTensor(dt DType, shape ...int64) *Tensor {
	t := &Tensor{DType: dt, Shape: append([]int64(nil), shape...)}
	n := NumElements(shape)
	switch dt {
	case Float32:
		t.F32 = make([]float32, n)
	case Float64:
		t.F64 = make([]float64, n)
	case Int64:
		t.I64 = make([]int64, n)
	case Int32:
		t.I32 = make([]int32, n)
	case Int8:
		t.I8 = make([]int8, n)
	case Uint8:
		t.U8 = make([]uint8, n)
	case Bool:
		t.Bool = make([]bool, n)
	}
	return t
}

// Len is the length of the populated data slice.
func (t *Tensor) Len() int {
	switch t.DType {
	case Float32:
		return len(t.F32)
	case Float64:
		return len(t.F64)
	case Int64:
		return len(t.I64)
	case Int32:
		return len(t.I32)
	case Int8:
		return len(t.I8)
	case Uint8:
		return len(t.U8)
	case Bool:
		return len(t.Bool)
	}
	return 0
}

// Check reports whether the data slice matches DType and Shape.
func (t *Tensor) Check() error {
	for i, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("negative dimension %d at axis %d", d, i)
		}
	}
	if want := NumElements(t.Shape); int64(t.Len()) != want {
		return fmt.Errorf("%s%v holds %d elements, shape needs %d", t.DType, t.Shape, t.Len(), want)
	}
	return nil
}

// Bytes is the in-memory size of the data.
func (t *Tensor) Bytes() int64 { return int64(t.Len()) * int64(t.DType.Size()) }

// Clone returns a deep copy of the tensor (nil for nil).
func (t *Tensor) Clone() *Tensor {
	if t == nil {
		return nil
	}
	c := *t
	c.Shape = slices.Clone(t.Shape)
	c.F32 = slices.Clone(t.F32)
	c.F64 = slices.Clone(t.F64)
	c.I64 = slices.Clone(t.I64)
	c.I32 = slices.Clone(t.I32)
	c.I8 = slices.Clone(t.I8)
	c.U8 = slices.Clone(t.U8)
	c.Bool = slices.Clone(t.Bool)
	return &c
}

// CopyInto copies the float32 tensor t into dst, which must hold exactly
// its elements: generated packages put a generic op's result where the
// rest of the schedule expects it.
func CopyInto(dst []float32, t *Tensor) error {
	if t == nil || t.DType != Float32 || len(t.F32) != len(dst) {
		what := "nil"
		if t != nil {
			what = fmt.Sprintf("%s%v", t.DType, t.Shape)
		}
		return fmt.Errorf("%w: result %s does not fill the %d float32 elements planned for it", ErrShapeMismatch, what, len(dst))
	}
	copy(dst, t.F32)
	return nil
}

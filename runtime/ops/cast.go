package ops

import (
	"fmt"
	"math"
	"slices"
)

// castKernel is ONNX Cast. Float to integer conversion truncates toward
// zero as numpy's astype does; to bool maps nonzero to true.
func castKernel(c *call) ([]*Tensor, error) {
	a, ok := c.node.Attrs["to"]
	if !ok || a.Kind != AttrInt {
		return nil, fmt.Errorf("%w: Cast needs an integer attribute \"to\"", ErrMalformed)
	}
	// "to" holds an ONNX TensorProto.DataType code, as in ONNX files.
	to, ok := DTypeFromONNX(a.Int)
	if !ok {
		return nil, fmt.Errorf("%w: Cast to ONNX data type %d (sqc supports float32, float64, int64, int32, int8, uint8, bool)",
			ErrDTypeMismatch, a.Int)
	}
	return one(Cast(c.in[0], to))
}

// Cast converts t to dtype to; the result never shares t's storage.
func Cast(t *Tensor, to DType) (*Tensor, error) {
	switch t.DType {
	case Float32:
		return castFrom(t.F32, t.Shape, to)
	case Float64:
		return castFrom(t.F64, t.Shape, to)
	case Int64:
		return castFrom(t.I64, t.Shape, to)
	case Int32:
		return castFrom(t.I32, t.Shape, to)
	case Int8:
		return castFrom(t.I8, t.Shape, to)
	case Uint8:
		return castFrom(t.U8, t.Shape, to)
	case Bool:
		b := make([]uint8, len(t.Bool))
		for i, v := range t.Bool {
			if v {
				b[i] = 1
			}
		}
		return castFrom(b, t.Shape, to)
	}
	return nil, unsupported(t.DType)
}

func castFrom[S number](s []S, shape []int64, to DType) (*Tensor, error) {
	shape = slices.Clone(shape)
	switch to {
	case Float32:
		return FromSlice(shape, convertSlice[S, float32](s)), nil
	case Float64:
		return FromSlice(shape, convertSlice[S, float64](s)), nil
	case Int64:
		return FromSlice(shape, toInt[S, int64](s)), nil
	case Int32:
		return FromSlice(shape, toInt[S, int32](s)), nil
	case Int8:
		return FromSlice(shape, toInt[S, int8](s)), nil
	case Uint8:
		return FromSlice(shape, toInt[S, uint8](s)), nil
	case Bool:
		d := make([]bool, len(s))
		for i, v := range s {
			d[i] = v != 0
		}
		return FromSlice(shape, d), nil
	}
	return nil, unsupported(to)
}

// toInt converts to an integer type. Integers wrap as in C and numpy; floats
// truncate toward zero, and NaN becomes 0 (Go leaves out-of-range float
// conversions implementation-defined, so they go through int64 first).
func toInt[S number, D ~int64 | ~int32 | ~int8 | ~uint8](s []S) []D {
	d := make([]D, len(s))
	for i, v := range s {
		f := float64(v)
		var w int64
		switch {
		case f == float64(int64(v)):
			w = int64(v)
		case f != f:
			w = 0
		case f >= math.MaxInt64:
			w = math.MaxInt64
		case f <= math.MinInt64:
			w = math.MinInt64
		default:
			w = int64(f)
		}
		d[i] = D(w)
	}
	return d
}

package interp

import (
	"fmt"
	"math"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
)

// castKernel is ONNX Cast. Float to integer conversion truncates toward
// zero as numpy's astype does; to bool maps nonzero to true.
func castKernel(c *call) ([]*compiler.Tensor, error) {
	a, ok := c.node.Attrs["to"]
	if !ok || a.Kind != compiler.AttrInt {
		return nil, fmt.Errorf("%w: Cast needs an integer attribute \"to\"", compiler.ErrMalformed)
	}
	// "to" holds an ONNX TensorProto.DataType code, as in ONNX files.
	to, ok := compiler.DTypeFromONNX(a.Int)
	if !ok {
		return nil, fmt.Errorf("%w: Cast to ONNX data type %d (sqc supports float32, float64, int64, int32, int8, uint8, bool)",
			compiler.ErrDTypeMismatch, a.Int)
	}
	return one(castTensor(c.in[0], to))
}

// castTensor converts t to dtype to; the result never shares t's storage.
func castTensor(t *compiler.Tensor, to compiler.DType) (*compiler.Tensor, error) {
	switch t.DType {
	case compiler.Float32:
		return castFrom(t.F32, t.Shape, to)
	case compiler.Float64:
		return castFrom(t.F64, t.Shape, to)
	case compiler.Int64:
		return castFrom(t.I64, t.Shape, to)
	case compiler.Int32:
		return castFrom(t.I32, t.Shape, to)
	case compiler.Int8:
		return castFrom(t.I8, t.Shape, to)
	case compiler.Uint8:
		return castFrom(t.U8, t.Shape, to)
	case compiler.Bool:
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

func castFrom[S number](s []S, shape []int64, to compiler.DType) (*compiler.Tensor, error) {
	shape = slices.Clone(shape)
	switch to {
	case compiler.Float32:
		return fromSlice(shape, convertSlice[S, float32](s)), nil
	case compiler.Float64:
		return fromSlice(shape, convertSlice[S, float64](s)), nil
	case compiler.Int64:
		return fromSlice(shape, toInt[S, int64](s)), nil
	case compiler.Int32:
		return fromSlice(shape, toInt[S, int32](s)), nil
	case compiler.Int8:
		return fromSlice(shape, toInt[S, int8](s)), nil
	case compiler.Uint8:
		return fromSlice(shape, toInt[S, uint8](s)), nil
	case compiler.Bool:
		d := make([]bool, len(s))
		for i, v := range s {
			d[i] = v != 0
		}
		return fromSlice(shape, d), nil
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

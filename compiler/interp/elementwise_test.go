package interp

import (
	"math"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

func TestArithmetic(t *testing.T) {
	runCases(t, []opCase{
		{name: "add row bias", op: "Add",
			in:   []*compiler.Tensor{f32(sh(2, 3), 1, 2, 3, 4, 5, 6), f32(sh(3), 10, 20, 30)},
			want: []*compiler.Tensor{f32(sh(2, 3), 11, 22, 33, 14, 25, 36)}},
		{name: "add column and row", op: "Add",
			in:   []*compiler.Tensor{f32(sh(2, 1), 1, 2), f32(sh(1, 3), 10, 20, 30)},
			want: []*compiler.Tensor{f32(sh(2, 3), 11, 21, 31, 12, 22, 32)}},
		{name: "add middle broadcast", op: "Add",
			in: []*compiler.Tensor{f32(sh(2, 3, 2), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), f32(sh(3, 1), 100, 200, 300)},
			want: []*compiler.Tensor{f32(sh(2, 3, 2),
				100, 101, 202, 203, 304, 305, 106, 107, 208, 209, 310, 311)}},
		{name: "add lower rank on the left", op: "Add",
			in:   []*compiler.Tensor{f32(sh(3), 10, 20, 30), f32(sh(2, 3), 1, 2, 3, 4, 5, 6)},
			want: []*compiler.Tensor{f32(sh(2, 3), 11, 22, 33, 14, 25, 36)}},
		{name: "add scalar", op: "Add",
			in:   []*compiler.Tensor{f32(sh(), 5), f32(sh(1, 2), 1, 2)},
			want: []*compiler.Tensor{f32(sh(1, 2), 6, 7)}},
		{name: "add both broadcast to a bigger shape", op: "Add",
			in:   []*compiler.Tensor{i64(sh(1, 2, 1), 1, 2), i64(sh(3, 1, 2), 10, 20, 30, 40, 50, 60)},
			want: []*compiler.Tensor{i64(sh(3, 2, 2), 11, 21, 12, 22, 31, 41, 32, 42, 51, 61, 52, 62)}},
		{name: "add zero-size", op: "Add",
			in:   []*compiler.Tensor{f32(sh(0, 3)), f32(sh(3), 1, 2, 3)},
			want: []*compiler.Tensor{f32(sh(0, 3))}},
		{name: "add uint8 wraps", op: "Add",
			in:   []*compiler.Tensor{u8(sh(2), 250, 1), u8(sh(2), 10, 2)},
			want: []*compiler.Tensor{u8(sh(2), 4, 3)}},
		{name: "add not broadcastable", op: "Add",
			in:      []*compiler.Tensor{f32(sh(2, 3), 1, 2, 3, 4, 5, 6), f32(sh(2), 1, 2)},
			wantErr: compiler.ErrShapeMismatch},
		{name: "add mixed dtypes", op: "Add",
			in:      []*compiler.Tensor{f32(sh(1), 1), i64(sh(1), 1)},
			wantErr: compiler.ErrDTypeMismatch},
		{name: "add bool", op: "Add",
			in:      []*compiler.Tensor{bools(sh(1), true), bools(sh(1), true)},
			wantErr: compiler.ErrDTypeMismatch},
		{name: "sub", op: "Sub",
			in:   []*compiler.Tensor{f32(sh(2), 5, 3), f32(sh(2), 1, 4)},
			want: []*compiler.Tensor{f32(sh(2), 4, -1)}},
		{name: "sub int32 scalar on the left", op: "Sub",
			in:   []*compiler.Tensor{i32(sh(), 1), i32(sh(3), 1, 2, 3)},
			want: []*compiler.Tensor{i32(sh(3), 0, -1, -2)}},
		{name: "mul f64", op: "Mul",
			in:   []*compiler.Tensor{f64(sh(2), 1.5, 2), f64(sh(), 2)},
			want: []*compiler.Tensor{f64(sh(2), 3, 4)}},
		{name: "div f32", op: "Div",
			in:   []*compiler.Tensor{f32(sh(2), 1, 3), f32(sh(2), 2, 4)},
			want: []*compiler.Tensor{f32(sh(2), 0.5, 0.75)}},
		{name: "div f32 by zero", op: "Div",
			in:   []*compiler.Tensor{f32(sh(3), 1, -1, 0), f32(sh(), 0)},
			want: []*compiler.Tensor{f32(sh(3), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))}},
		{name: "div int64 truncates", op: "Div",
			in:   []*compiler.Tensor{i64(sh(2), 7, -7), i64(sh(2), 2, 2)},
			want: []*compiler.Tensor{i64(sh(2), 3, -3)}},
		{name: "div int by zero", op: "Div",
			in:      []*compiler.Tensor{i32(sh(2), 7, 1), i32(sh(2), 2, 0)},
			wantErr: ops.ErrIntDivZero},
	})
}

func TestPow(t *testing.T) {
	runCases(t, []opCase{
		{name: "f32 scalar exponent", op: "Pow",
			in:   []*compiler.Tensor{f32(sh(3), 2, 4, 9), f32(sh(), 0.5)},
			want: []*compiler.Tensor{f32(sh(3), float32(math.Sqrt2), 2, 3)}, tol: 1e-7},
		{name: "f32 squared is exact", op: "Pow",
			in:   []*compiler.Tensor{f32(sh(2), 1.1, -3), f32(sh(), 2)},
			want: []*compiler.Tensor{f32(sh(2), float32(1.1)*float32(1.1), 9)}},
		{name: "f64 squared and cubed", op: "Pow",
			in:   []*compiler.Tensor{f64(sh(2, 1), 1.5, -2), f64(sh(1), 3)},
			want: []*compiler.Tensor{f64(sh(2, 1), 3.375, -8)}},
		{name: "exponent of higher rank broadcasts the base", op: "Pow",
			in:   []*compiler.Tensor{f32(sh(), 3), f32(sh(1, 1), 2)},
			want: []*compiler.Tensor{f32(sh(1, 1), 9)}},
		{name: "f32 base int64 exponent", op: "Pow",
			in:   []*compiler.Tensor{f32(sh(2), 2, 3), i64(sh(2), 3, 2)},
			want: []*compiler.Tensor{f32(sh(2), 8, 9)}},
		{name: "int64 exact", op: "Pow",
			in:   []*compiler.Tensor{i64(sh(3), 2, -3, 3), i64(sh(3), 10, 3, 39)},
			want: []*compiler.Tensor{i64(sh(3), 1024, -27, 4052555153018976267)}},
		{name: "int32 base float exponent truncates", op: "Pow",
			in:   []*compiler.Tensor{i32(sh(2), 2, 3), f32(sh(1), 0.5)},
			want: []*compiler.Tensor{i32(sh(2), 1, 1)}},
		{name: "bool", op: "Pow",
			in:      []*compiler.Tensor{bools(sh(1), true), f32(sh(1), 1)},
			wantErr: compiler.ErrDTypeMismatch},
	})
}

func TestUnary(t *testing.T) {
	round := func(f func(float64) float64, xs ...float32) []float32 {
		out := make([]float32, len(xs))
		for i, x := range xs {
			out[i] = float32(f(float64(x)))
		}
		return out
	}
	xs := []float32{-2.5, -1, -0.1, 0, 0.3, 1, 3}
	sigm := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	geluE := func(x float64) float64 { return x * 0.5 * (1 + math.Erf(x/math.Sqrt(2))) }
	geluT := func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*math.Pow(x, 3))))
	}
	runCases(t, []opCase{
		{name: "sqrt", op: "Sqrt", in: []*compiler.Tensor{f32(sh(3), 4, 2, 0)},
			want: []*compiler.Tensor{f32(sh(3), 2, float32(math.Sqrt2), 0)}},
		{name: "sqrt negative is NaN", op: "Sqrt", in: []*compiler.Tensor{f64(sh(1), -1)},
			want: []*compiler.Tensor{f64(sh(1), math.NaN())}},
		{name: "sqrt int", op: "Sqrt", in: []*compiler.Tensor{i64(sh(1), 4)}, wantErr: compiler.ErrDTypeMismatch},
		{name: "erf", op: "Erf", in: []*compiler.Tensor{f32(sh(7), xs...)},
			want: []*compiler.Tensor{f32(sh(7), round(math.Erf, xs...)...)}},
		{name: "tanh", op: "Tanh", in: []*compiler.Tensor{f32(sh(7), xs...)},
			want: []*compiler.Tensor{f32(sh(7), round(math.Tanh, xs...)...)}},
		{name: "sigmoid", op: "Sigmoid", in: []*compiler.Tensor{f32(sh(7), xs...)},
			want: []*compiler.Tensor{f32(sh(7), round(sigm, xs...)...)}},
		{name: "sigmoid extremes", op: "Sigmoid", in: []*compiler.Tensor{f32(sh(2), -1000, 1000)},
			want: []*compiler.Tensor{f32(sh(2), 0, 1)}},
		{name: "gelu erf", op: "Gelu", in: []*compiler.Tensor{f32(sh(7), xs...)},
			want: []*compiler.Tensor{f32(sh(7), round(geluE, xs...)...)}},
		{name: "gelu tanh", op: "Gelu", attrs: attrs{"approximate": aStr("tanh")}, in: []*compiler.Tensor{f32(sh(7), xs...)},
			want: []*compiler.Tensor{f32(sh(7), round(geluT, xs...)...)}, tol: 1e-7},
		{name: "sqc gelu tanh", op: "sqc.Gelu", attrs: attrs{"approximate": aStr("tanh")}, in: []*compiler.Tensor{f32(sh(7), xs...)},
			want: []*compiler.Tensor{f32(sh(7), round(geluT, xs...)...)}, tol: 1e-7},
		{name: "sqc gelu erf", op: "sqc.Gelu", in: []*compiler.Tensor{f32(sh(7), xs...)},
			want: []*compiler.Tensor{f32(sh(7), round(geluE, xs...)...)}},
		{name: "gelu bad approximate", op: "Gelu", attrs: attrs{"approximate": aStr("fast")},
			in: []*compiler.Tensor{f32(sh(1), 1)}, wantErr: compiler.ErrUnsupportedOp},
		{name: "relu f32", op: "Relu", in: []*compiler.Tensor{f32(sh(3), -1, 0, 2)},
			want: []*compiler.Tensor{f32(sh(3), 0, 0, 2)}},
		{name: "relu int64", op: "Relu", in: []*compiler.Tensor{i64(sh(2), -3, 4)},
			want: []*compiler.Tensor{i64(sh(2), 0, 4)}},
		{name: "neg int32", op: "Neg", in: []*compiler.Tensor{i32(sh(2), 1, -2)},
			want: []*compiler.Tensor{i32(sh(2), -1, 2)}},
		{name: "neg f32", op: "Neg", in: []*compiler.Tensor{f32(sh(2, 1), 1.5, -2)},
			want: []*compiler.Tensor{f32(sh(2, 1), -1.5, 2)}},
		{name: "neg uint8", op: "Neg", in: []*compiler.Tensor{u8(sh(1), 1)}, wantErr: compiler.ErrDTypeMismatch},
		{name: "not", op: "Not", in: []*compiler.Tensor{bools(sh(2), true, false)},
			want: []*compiler.Tensor{bools(sh(2), false, true)}},
		{name: "not f32", op: "Not", in: []*compiler.Tensor{f32(sh(1), 1)}, wantErr: compiler.ErrDTypeMismatch},
	})
}

func TestCompareAndWhere(t *testing.T) {
	runCases(t, []opCase{
		{name: "equal int64 scalar", op: "Equal",
			in:   []*compiler.Tensor{i64(sh(3), 1, 2, 3), i64(sh(), 2)},
			want: []*compiler.Tensor{bools(sh(3), false, true, false)}},
		{name: "equal bool", op: "Equal",
			in:   []*compiler.Tensor{bools(sh(2), true, false), bools(sh(2), true, true)},
			want: []*compiler.Tensor{bools(sh(2), true, false)}},
		{name: "less broadcast", op: "Less",
			in:   []*compiler.Tensor{f32(sh(2, 2), 1, 5, 3, 3), f32(sh(2), 2, 3)},
			want: []*compiler.Tensor{bools(sh(2, 2), true, false, false, false)}},
		{name: "greater broadcast", op: "Greater",
			in:   []*compiler.Tensor{f32(sh(2, 2), 1, 5, 3, 3), f32(sh(2), 2, 3)},
			want: []*compiler.Tensor{bools(sh(2, 2), false, true, true, false)}},
		{name: "greater NaN is false", op: "Greater",
			in:   []*compiler.Tensor{f64(sh(1), math.NaN()), f64(sh(1), 0)},
			want: []*compiler.Tensor{bools(sh(1), false)}},
		{name: "less bool", op: "Less",
			in: []*compiler.Tensor{bools(sh(1), true), bools(sh(1), true)}, wantErr: compiler.ErrDTypeMismatch},
		{name: "where three-way broadcast", op: "Where",
			in:   []*compiler.Tensor{bools(sh(2, 1), true, false), f32(sh(3), 1, 2, 3), f32(sh(), 0)},
			want: []*compiler.Tensor{f32(sh(2, 3), 1, 2, 3, 0, 0, 0)}},
		{name: "where int64 per element", op: "Where",
			in:   []*compiler.Tensor{bools(sh(3), false, true, false), i64(sh(3), 1, 2, 3), i64(sh(3), 7, 8, 9)},
			want: []*compiler.Tensor{i64(sh(3), 7, 2, 9)}},
		{name: "where condition not bool", op: "Where",
			in:      []*compiler.Tensor{i64(sh(1), 1), f32(sh(1), 1), f32(sh(1), 2)},
			wantErr: compiler.ErrDTypeMismatch},
		{name: "where shapes clash", op: "Where",
			in:      []*compiler.Tensor{bools(sh(2), true, false), f32(sh(3), 1, 2, 3), f32(sh(1), 0)},
			wantErr: compiler.ErrShapeMismatch},
	})
}

package interp

import (
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

func TestCumSum(t *testing.T) {
	m := i64(sh(2, 4), 1, 1, 0, 1, 0, 1, 1, 1)
	runCases(t, []opCase{
		{name: "int64 axis 1 (RoBERTa position ids)", op: "CumSum", opset: 17,
			in:   []*compiler.Tensor{m, i64(sh(), 1)},
			want: []*compiler.Tensor{i64(sh(2, 4), 1, 2, 2, 3, 0, 1, 2, 3)}},
		{name: "negative axis", op: "CumSum", opset: 17,
			in:   []*compiler.Tensor{m, i32(sh(1), -1)},
			want: []*compiler.Tensor{i64(sh(2, 4), 1, 2, 2, 3, 0, 1, 2, 3)}},
		{name: "axis 0", op: "CumSum", opset: 17,
			in:   []*compiler.Tensor{m, i64(sh(), 0)},
			want: []*compiler.Tensor{i64(sh(2, 4), 1, 1, 0, 1, 1, 2, 1, 2)}},
		{name: "exclusive", op: "CumSum", opset: 17, attrs: attrs{"exclusive": aInt(1)},
			in:   []*compiler.Tensor{f32(sh(4), 1, 2, 3, 4), i64(sh(), 0)},
			want: []*compiler.Tensor{f32(sh(4), 0, 1, 3, 6)}},
		{name: "reverse", op: "CumSum", opset: 17, attrs: attrs{"reverse": aInt(1)},
			in:   []*compiler.Tensor{i32(sh(4), 1, 2, 3, 4), i64(sh(), 0)},
			want: []*compiler.Tensor{i32(sh(4), 10, 9, 7, 4)}},
		{name: "exclusive reverse f64 middle axis", op: "CumSum", opset: 17, attrs: attrs{"exclusive": aInt(1), "reverse": aInt(1)},
			in:   []*compiler.Tensor{f64(sh(1, 3, 2), 1, 10, 2, 20, 3, 30), i64(sh(), 1)},
			want: []*compiler.Tensor{f64(sh(1, 3, 2), 5, 50, 3, 30, 0, 0)}},
		{name: "axis out of range", op: "CumSum", opset: 17,
			in: []*compiler.Tensor{m, i64(sh(), 2)}, wantErr: compiler.ErrShapeMismatch},
		{name: "axis not a scalar", op: "CumSum", opset: 17,
			in: []*compiler.Tensor{m, i64(sh(2), 0, 1)}, wantErr: compiler.ErrShapeMismatch},
		{name: "bool input", op: "CumSum", opset: 17,
			in: []*compiler.Tensor{bools(sh(2), true, false), i64(sh(), 0)}, wantErr: compiler.ErrDTypeMismatch},
	})
}

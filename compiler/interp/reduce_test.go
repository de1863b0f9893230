package interp

import (
	"math"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

func TestReduce(t *testing.T) {
	x := f32(sh(2, 3), 1, 2, 3, 4, 5, 6)
	cube := f32(sh(2, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7)
	runCases(t, []opCase{
		{name: "mean axis 1 keepdims", op: "ReduceMean", opset: 14, attrs: attrs{"axes": aInts(1)},
			in: []*compiler.Tensor{x}, want: []*compiler.Tensor{f32(sh(2, 1), 2, 5)}},
		{name: "mean negative axis no keepdims", op: "ReduceMean", opset: 14,
			attrs: attrs{"axes": aInts(-2), "keepdims": aInt(0)},
			in:    []*compiler.Tensor{x}, want: []*compiler.Tensor{f32(sh(3), 2.5, 3.5, 4.5)}},
		{name: "mean all axes", op: "ReduceMean", opset: 14,
			in: []*compiler.Tensor{x}, want: []*compiler.Tensor{f32(sh(1, 1), 3.5)}},
		{name: "mean two outer axes", op: "ReduceMean", opset: 14, attrs: attrs{"axes": aInts(0, 2)},
			in: []*compiler.Tensor{cube}, want: []*compiler.Tensor{f32(sh(1, 2, 1), 2.5, 4.5)}},
		{name: "mean axes input (opset 18)", op: "ReduceMean", opset: 18, attrs: attrs{"keepdims": aInt(0)},
			in: []*compiler.Tensor{x, i64(sh(1), 1)}, want: []*compiler.Tensor{f32(sh(2), 2, 5)}},
		{name: "mean of an empty axis is NaN", op: "ReduceMean", opset: 14, attrs: attrs{"axes": aInts(1)},
			in: []*compiler.Tensor{f32(sh(2, 0))}, want: []*compiler.Tensor{f32(sh(2, 1), float32(math.NaN()), float32(math.NaN()))}},
		{name: "sum axes input (opset 13)", op: "ReduceSum", opset: 13, attrs: attrs{"keepdims": aInt(0)},
			in: []*compiler.Tensor{x, i64(sh(1), 1)}, want: []*compiler.Tensor{f32(sh(2), 6, 15)}},
		{name: "sum empty axes input reduces all", op: "ReduceSum", opset: 13,
			in: []*compiler.Tensor{x, i64(sh(0))}, want: []*compiler.Tensor{f32(sh(1, 1), 21)}},
		{name: "sum empty axes noop", op: "ReduceSum", opset: 13, attrs: attrs{"noop_with_empty_axes": aInt(1)},
			in: []*compiler.Tensor{x, i64(sh(0))}, want: []*compiler.Tensor{x}},
		{name: "sum omitted axes noop", op: "ReduceSum", opset: 13, attrs: attrs{"noop_with_empty_axes": aInt(1)},
			in: []*compiler.Tensor{x}, want: []*compiler.Tensor{x}},
		{name: "sum attribute axes (opset 11)", op: "ReduceSum", opset: 11, attrs: attrs{"axes": aInts(0)},
			in: []*compiler.Tensor{x}, want: []*compiler.Tensor{f32(sh(1, 3), 5, 7, 9)}},
		{name: "sum int64", op: "ReduceSum", opset: 13, attrs: attrs{"keepdims": aInt(0)},
			in: []*compiler.Tensor{i64(sh(2, 2), 1, 2, 3, 1<<60)}, want: []*compiler.Tensor{i64(sh(), 1<<60+6)}},
		{name: "sum f32 accumulates in f64", op: "ReduceSum", opset: 13,
			in:   []*compiler.Tensor{f32(sh(3), 1e8, 1, -1e8), i64(sh(1), 0)},
			want: []*compiler.Tensor{f32(sh(1), 1)}},
		{name: "sum axis out of range", op: "ReduceSum", opset: 13,
			in: []*compiler.Tensor{x, i64(sh(1), 2)}, wantErr: compiler.ErrShapeMismatch},
		{name: "sum repeated axis", op: "ReduceSum", opset: 13,
			in: []*compiler.Tensor{x, i64(sh(2), 1, -1)}, wantErr: compiler.ErrShapeMismatch},
	})
}

// layerNormRef is LayerNormalization written out directly for rows of n.
func layerNormRef(x []float32, n int, scale, bias []float32, eps float64) (y, mean, inv []float32) {
	for r := 0; r < len(x)/n; r++ {
		row := x[r*n : (r+1)*n]
		var m, v float64
		for _, e := range row {
			m += float64(e)
		}
		m /= float64(n)
		for _, e := range row {
			v += (float64(e) - m) * (float64(e) - m)
		}
		v /= float64(n)
		is := 1 / math.Sqrt(v+eps)
		for i, e := range row {
			o := (float64(e) - m) * is * float64(scale[i%len(scale)])
			if bias != nil {
				o += float64(bias[i%len(bias)])
			}
			y = append(y, float32(o))
		}
		mean, inv = append(mean, float32(m)), append(inv, float32(is))
	}
	return y, mean, inv
}

func TestLayerNormalization(t *testing.T) {
	xv := []float32{1, 2, 3, 2, 4, 10}
	scale, bias := []float32{1, 2, 0.5}, []float32{0, 1, -1}
	y, mean, inv := layerNormRef(xv, 3, scale, bias, 1e-5)
	yAll, meanAll, invAll := layerNormRef(xv, 6, []float32{3}, nil, 1e-3)
	yNoBias, _, _ := layerNormRef(xv, 3, scale, nil, 1e-5)
	x := f32(sh(2, 3), xv...)
	runCases(t, []opCase{
		{name: "last axis with bias and statistics", op: "LayerNormalization", opset: 17,
			in:   []*compiler.Tensor{x, f32(sh(3), scale...), f32(sh(3), bias...)},
			want: []*compiler.Tensor{f32(sh(2, 3), y...), f32(sh(2, 1), mean...), f32(sh(2, 1), inv...)}, tol: 1e-6},
		{name: "no bias", op: "LayerNormalization", opset: 17,
			in:   []*compiler.Tensor{x, f32(sh(3), scale...)},
			want: []*compiler.Tensor{f32(sh(2, 3), yNoBias...)}, tol: 1e-6},
		{name: "axis 0 normalises everything, scalar-like scale", op: "LayerNormalization", opset: 17,
			attrs: attrs{"axis": aInt(0), "epsilon": aFloat(1e-3)},
			in:    []*compiler.Tensor{x, f32(sh(1), 3)},
			want:  []*compiler.Tensor{f32(sh(2, 3), yAll...), f32(sh(1, 1), meanAll...), f32(sh(1, 1), invAll...)}, tol: 1e-6},
		{name: "constant row gives bias", op: "LayerNormalization", opset: 17,
			in:   []*compiler.Tensor{f32(sh(1, 2), 5, 5), f32(sh(2), 1, 1), f32(sh(2), 0.5, -0.5)},
			want: []*compiler.Tensor{f32(sh(1, 2), 0.5, -0.5)}},
		{name: "scale of the wrong size", op: "LayerNormalization", opset: 17,
			in: []*compiler.Tensor{x, f32(sh(2), 1, 1)}, wantErr: compiler.ErrShapeMismatch},
		{name: "int input", op: "LayerNormalization", opset: 17,
			in: []*compiler.Tensor{i64(sh(1, 2), 1, 2), i64(sh(2), 1, 1)}, wantErr: compiler.ErrDTypeMismatch},
	})
}

func TestSoftmax(t *testing.T) {
	x := f32(sh(1, 2, 3), 1, 2, 3, 4, 5, 6)
	lo, hi := float32(1/(1+math.Exp(3))), float32(1/(1+math.Exp(-3)))
	all := make([]float32, 6)
	var sum float64
	for i := range all {
		sum += math.Exp(float64(i - 5))
	}
	for i := range all {
		all[i] = float32(math.Exp(float64(i-5)) / sum)
	}
	row := func(a, b, c float64) []float32 {
		m := math.Max(a, math.Max(b, c))
		s := math.Exp(a-m) + math.Exp(b-m) + math.Exp(c-m)
		return []float32{float32(math.Exp(a-m) / s), float32(math.Exp(b-m) / s), float32(math.Exp(c-m) / s)}
	}
	runCases(t, []opCase{
		{name: "opset 13 axis 1 is one axis", op: "Softmax", opset: 13, attrs: attrs{"axis": aInt(1)},
			in: []*compiler.Tensor{x}, want: []*compiler.Tensor{f32(sh(1, 2, 3), lo, lo, lo, hi, hi, hi)}, tol: 1e-7},
		{name: "opset 11 axis 1 flattens the rest", op: "Softmax", opset: 11, attrs: attrs{"axis": aInt(1)},
			in: []*compiler.Tensor{x}, want: []*compiler.Tensor{f32(sh(1, 2, 3), all...)}, tol: 1e-7},
		{name: "opset 11 default axis is 1", op: "Softmax", opset: 11,
			in: []*compiler.Tensor{x}, want: []*compiler.Tensor{f32(sh(1, 2, 3), all...)}, tol: 1e-7},
		{name: "opset 13 default axis is last", op: "Softmax", opset: 13,
			in:   []*compiler.Tensor{x},
			want: []*compiler.Tensor{f32(sh(1, 2, 3), append(row(1, 2, 3), row(4, 5, 6)...)...)}, tol: 1e-7},
		{name: "large values are stable", op: "Softmax", opset: 13,
			in: []*compiler.Tensor{f32(sh(2), 1000, 1000)}, want: []*compiler.Tensor{f32(sh(2), 0.5, 0.5)}},
		{name: "float32 min mask gives exact zeros", op: "Softmax", opset: 13,
			in:   []*compiler.Tensor{f32(sh(3), 0.5, -math.MaxFloat32, 0.5)},
			want: []*compiler.Tensor{f32(sh(3), 0.5, 0, 0.5)}},
		{name: "axis out of range", op: "Softmax", opset: 13, attrs: attrs{"axis": aInt(3)},
			in: []*compiler.Tensor{x}, wantErr: compiler.ErrShapeMismatch},
	})
}

package ops

import (
	"math"
	"slices"
	"testing"
)

// TestMinMaxAbs: Min and Max pick per element with broadcasting and give
// NaN for a NaN operand; Abs leaves an integer type's most negative value
// as it is (two's complement), and Log is ln with -Inf at 0.
func TestMinMaxAbs(t *testing.T) {
	nan := float32(math.NaN())
	a := &Tensor{DType: Float32, Shape: []int64{2, 2}, F32: []float32{1, -2, nan, 4}}
	b := &Tensor{DType: Float32, Shape: []int64{2}, F32: []float32{0, 3}}
	for op, want := range map[string][]float32{"Min": {0, -2, nan, 3}, "Max": {1, 3, nan, 4}} {
		got, err := (&Node{Op: op}).Eval([]*Tensor{a, b}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			if g := got[0].F32[i]; g != w && !(g != g && w != w) {
				t.Errorf("%s[%d] = %v, want %v", op, i, g, w)
			}
		}
	}
	i8 := &Tensor{DType: Int8, Shape: []int64{3}, I8: []int8{-128, -5, 7}}
	got, err := (&Node{Op: "Abs"}).Eval([]*Tensor{i8}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int8{-128, 5, 7}; got[0].I8[0] != want[0] || got[0].I8[1] != want[1] || got[0].I8[2] != want[2] {
		t.Errorf("Abs(i8) = %v, want %v", got[0].I8, want)
	}
	got, err = (&Node{Op: "Log"}).Eval([]*Tensor{{DType: Float32, Shape: []int64{2}, F32: []float32{0, math.E}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(float64(got[0].F32[0]), -1) || math.Abs(float64(got[0].F32[1])-1) > 1e-7 {
		t.Errorf("Log(0, e) = %v", got[0].F32)
	}
}

// TestSignCeilFloor: Sign is -1, 0 or 1 (NaN stays NaN) on floats and
// integers; Ceil and Floor round toward +Inf and -Inf, -0.5 to -0.
func TestSignCeilFloor(t *testing.T) {
	nan := float32(math.NaN())
	x := &Tensor{DType: Float32, Shape: []int64{6}, F32: []float32{-2.5, -0.5, 0, 0.25, 3, nan}}
	for op, want := range map[string][]float32{
		"Sign":  {-1, -1, 0, 1, 1, nan},
		"Ceil":  {-2, float32(math.Copysign(0, -1)), 0, 1, 3, nan},
		"Floor": {-3, -1, 0, 0, 3, nan},
	} {
		got, err := (&Node{Op: op}).Eval([]*Tensor{x}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			g := got[0].F32[i]
			if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
				t.Errorf("%s(%v) = %v, want %v", op, x.F32[i], g, w)
			}
		}
	}
	i64 := &Tensor{DType: Int64, Shape: []int64{3}, I64: []int64{-7, 0, 9}}
	got, err := (&Node{Op: "Sign"}).Eval([]*Tensor{i64}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g := got[0].I64; g[0] != -1 || g[1] != 0 || g[2] != 1 {
		t.Errorf("Sign(i64 -7, 0, 9) = %v", g)
	}
}

// TestTile: every axis repeated its count, the input's elements in order
// within each copy; a repeats length other than the rank is refused.
func TestTile(t *testing.T) {
	x := &Tensor{DType: Int64, Shape: []int64{2, 3}, I64: []int64{1, 2, 3, 4, 5, 6}}
	reps := &Tensor{DType: Int64, Shape: []int64{2}, I64: []int64{2, 2}}
	got, err := (&Node{Op: "Tile"}).Eval([]*Tensor{x, reps}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6, 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}
	if g := got[0]; len(g.Shape) != 2 || g.Shape[0] != 4 || g.Shape[1] != 6 || !slices.Equal(g.I64, want) {
		t.Errorf("Tile([[1 2 3] [4 5 6]], [2 2]) = %v %v, want [4 6] %v", g.Shape, g.I64, want)
	}
	if _, err := (&Node{Op: "Tile"}).Eval([]*Tensor{x, {DType: Int64, Shape: []int64{1}, I64: []int64{2}}}, Options{}); err == nil {
		t.Error("Tile with 1 count for a rank-2 input: no error")
	}
}

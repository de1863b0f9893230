package ops

import (
	"errors"
	"math"
	"testing"
)

// TestEinsumOuter: the outer product's element [i][j] is a[i]*b[j] rounded
// once to float32 (torch.outer's bits); other equations are refused.
func TestEinsumOuter(t *testing.T) {
	a := &Tensor{DType: Float32, Shape: []int64{3}, F32: []float32{0, 1, 7}}
	b := &Tensor{DType: Float32, Shape: []int64{2}, F32: []float32{1, float32(1 / math.Pi)}}
	got, err := (&Node{Op: "Einsum", Attrs: Attrs{"equation": {Kind: AttrString, String: "i,j->ij"}}}).Eval([]*Tensor{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := got[0].Shape; len(s) != 2 || s[0] != 3 || s[1] != 2 {
		t.Fatalf("shape %v, want [3 2]", s)
	}
	for i, x := range a.F32 {
		for j, y := range b.F32 {
			if g, w := got[0].F32[2*i+j], x*y; math.Float32bits(g) != math.Float32bits(w) {
				t.Errorf("[%d][%d] = %v, want %v", i, j, g, w)
			}
		}
	}
	_, err = (&Node{Op: "Einsum", Attrs: Attrs{"equation": {Kind: AttrString, String: "i,j->ji"}}}).Eval([]*Tensor{a, b}, Options{})
	if !errors.Is(err, ErrUnsupportedOp) {
		t.Errorf("i,j->ji: err = %v, want ErrUnsupportedOp", err)
	}
}

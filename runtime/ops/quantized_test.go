package ops

import (
	"errors"
	"slices"
	"testing"
)

// TestQuantizedOpsValues: the integer ops on small hand-computed cases:
// per-row and per-column zero points of MatMulInteger, per-axis
// (De)QuantizeLinear with an s8 zero point and clamping, and
// DynamicQuantizeLinear's range, which always holds 0, with ties rounded
// to even.
func TestQuantizedOpsValues(t *testing.T) {
	eval := func(op string, attrs Attrs, in ...*Tensor) []*Tensor {
		t.Helper()
		out, err := (&Node{Op: op, Attrs: attrs}).Eval(in, Options{})
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		return out
	}
	a := FromSlice([]int64{2, 2}, []uint8{10, 20, 30, 40})
	b := FromSlice([]int64{2, 3}, []int8{1, -2, 3, -4, 5, -6})
	got := eval("MatMulInteger", nil, a, b, FromSlice([]int64{2}, []uint8{10, 0}), FromSlice([]int64{3}, []int8{1, 0, -1}))
	// (A - [10; 0] per row) @ (B - [1, 0, -1] per column)
	want := []int32{0*0 + 10*-5, 0*-2 + 10*5, 0*4 + 10*-5, 30*0 + 40*-5, 30*-2 + 40*5, 30*4 + 40*-5}
	if !slices.Equal(got[0].I32, want) {
		t.Errorf("MatMulInteger = %v, want %v", got[0].I32, want)
	}

	x := FromSlice([]int64{2, 2}, []float32{1, -1, 300, 2.5})
	scale := FromSlice([]int64{2}, []float32{0.5, 1})
	q := eval("QuantizeLinear", Attrs{"axis": {Kind: AttrInt, Int: 1}}, x, scale, FromSlice([]int64{2}, []int8{3, -3}))
	// column 0: x/0.5 + 3 = 5, 603 -> 127; column 1: x + -3 = -4, round(2.5)=2 -> -1
	if wantQ := []int8{5, -4, 127, -1}; !slices.Equal(q[0].I8, wantQ) {
		t.Errorf("QuantizeLinear = %v, want %v", q[0].I8, wantQ)
	}
	dq := eval("DequantizeLinear", Attrs{"axis": {Kind: AttrInt, Int: 1}}, q[0], scale, FromSlice([]int64{2}, []int8{3, -3}))
	if wantDQ := []float32{1, -1, 62, 2}; !slices.Equal(dq[0].F32, wantDQ) {
		t.Errorf("DequantizeLinear = %v, want %v", dq[0].F32, wantDQ)
	}

	d := eval("DynamicQuantizeLinear", nil, FromSlice([]int64{3}, []float32{0.5, 1, 2.55}))
	// range [0, 2.55]: scale 0.01, zero point 0; 0.5/0.01 = 50
	if d[1].F32[0] != float32(2.55)/255 || d[2].U8[0] != 0 || d[0].U8[2] != 255 {
		t.Errorf("DynamicQuantizeLinear: codes %v, scale %v, zero point %v", d[0].U8, d[1].F32, d[2].U8)
	}
	d = eval("DynamicQuantizeLinear", nil, FromSlice([]int64{2}, []float32{0, 0}))
	if d[1].F32[0] != 1 || d[2].U8[0] != 0 || !slices.Equal(d[0].U8, []uint8{0, 0}) {
		t.Errorf("DynamicQuantizeLinear of zeros: codes %v, scale %v, zero point %v (want ONNX Runtime's scale 1)", d[0].U8, d[1].F32, d[2].U8)
	}
}

// TestQuantizedOpsRefuse: operands that do not fit are errors of the
// right kind, never panics.
func TestQuantizedOpsRefuse(t *testing.T) {
	u8 := func(shape []int64, v ...uint8) *Tensor { return FromSlice(shape, v) }
	f32 := func(shape []int64, v ...float32) *Tensor { return FromSlice(shape, v) }
	x := f32([]int64{2, 3}, 1, 2, 3, 4, 5, 6)
	for _, c := range []struct {
		name  string
		op    string
		attrs Attrs
		in    []*Tensor
		want  error
	}{
		{"MatMulInteger zero point type", "MatMulInteger", nil, []*Tensor{u8([]int64{1, 2}, 1, 2), u8([]int64{2, 1}, 1, 2), FromSlice([]int64{}, []int8{0})}, ErrDTypeMismatch},
		{"MatMulInteger zero points per row", "MatMulInteger", nil, []*Tensor{u8([]int64{1, 2}, 1, 2), u8([]int64{2, 1}, 1, 2), u8([]int64{3}, 0, 0, 0)}, ErrShapeMismatch},
		{"MatMulInteger float", "MatMulInteger", nil, []*Tensor{x, x}, ErrDTypeMismatch},
		{"DequantizeLinear scales", "DequantizeLinear", nil, []*Tensor{u8([]int64{2, 2}, 1, 2, 3, 4), f32([]int64{3}, 1, 1, 1)}, ErrShapeMismatch},
		{"DequantizeLinear axis", "DequantizeLinear", Attrs{"axis": {Kind: AttrInt, Int: 5}}, []*Tensor{u8([]int64{2, 2}, 1, 2, 3, 4), f32([]int64{2}, 1, 1)}, ErrShapeMismatch},
		{"DequantizeLinear zero points", "DequantizeLinear", nil, []*Tensor{u8([]int64{2}, 1, 2), f32([]int64{}, 1), u8([]int64{2}, 0, 0)}, ErrShapeMismatch},
		{"QuantizeLinear zero points", "QuantizeLinear", nil, []*Tensor{x, f32([]int64{}, 1), u8([]int64{2}, 0, 0)}, ErrShapeMismatch},
		{"QuantizeLinear int data", "QuantizeLinear", nil, []*Tensor{u8([]int64{1}, 1), f32([]int64{}, 1)}, ErrDTypeMismatch},
		{"DynamicQuantizeLinear int", "DynamicQuantizeLinear", nil, []*Tensor{u8([]int64{1}, 1)}, ErrDTypeMismatch},
	} {
		_, err := (&Node{Op: c.op, Attrs: c.attrs}).Eval(c.in, Options{})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
}

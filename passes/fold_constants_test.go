package passes

import (
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// torch's view(x.size(0), x.size(1), 4, 2) chain on x [batch, sequence, 8]
// plus a static dim pick: batch and sequence stay run-time values, the
// constants and Shape(x)[2] fold.
const shapeChain = `graph "shapes" opset 14 {
  input %x: f32[batch, sequence, 8]
  %s = Shape(%x)
  %i0 = Constant() {value=tensor<i64[]> [0]}
  %i1 = Constant() {value=tensor<i64[]> [1]}
  %i2 = Constant() {value=tensor<i64[]> [2]}
  %ax = Constant() {value=tensor<i64[1]> [0]}
  %b = Gather(%s, %i0) {axis=0}
  %q = Gather(%s, %i1) {axis=0}
  %w = Gather(%s, %i2) {axis=0}
  %bu = Unsqueeze(%b, %ax)
  %qu = Unsqueeze(%q, %ax)
  %wu = Unsqueeze(%w, %ax)
  %heads = Constant() {value=tensor<i64[1]> [4]}
  %wh = Div(%wu, %heads)
  %target = Concat(%bu, %qu, %heads, %wh) {axis=0}
  %y = Reshape(%x, %target)
  output %y: f32[batch, sequence, 4, 2]
}`

func TestFoldConstantsKeepsSymbolicDims(t *testing.T) {
	g := parseGraph(t, shapeChain)
	after := applyPass(t, g, FoldConstants)
	wantOps(t, after, map[string]int{"Shape": 1, "Gather": 2, "Unsqueeze": 2, "Concat": 1, "Reshape": 1})
	// Shape(x)[2] / 4 = 2 is now a constant; batch and sequence are not.
	if got := after.Initializers["wh"]; got == nil || !slices.Equal(got.I64, []int64{2}) {
		t.Errorf("Shape(x)[2]/4 folded to %v, want [2]", got)
	}
	for _, name := range []string{"b", "q", "bu", "qu", "target"} {
		if after.Initializers[name] != nil {
			t.Errorf("%s depends on a symbolic dim but was folded", name)
		}
	}
	x := randomF32(2, 3, 5, 8)
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": x}, 0)
}

func TestFoldConstantsStaticShapes(t *testing.T) {
	g := parseGraph(t, `graph "static" opset 14 {
  input %x: f32[2, 3]
  %s = Shape(%x)
  %zeros = ConstantOfShape(%s) {value=tensor<f32[1]> [0.5]}
  %start = Constant() {value=tensor<i64[]> [0]}
  %limit = Constant() {value=tensor<i64[]> [3]}
  %delta = Constant() {value=tensor<i64[]> [1]}
  %r = Range(%start, %limit, %delta)
  %rf = Cast(%r) {to=1}
  %t = Add(%zeros, %rf)
  %y = Add(%x, %t)
  output %y: f32[2, 3]
}`)
	after := applyPass(t, g, FoldConstants)
	wantOps(t, after, map[string]int{"Add": 1})
	if got := after.Initializers["t"]; got == nil || !slices.Equal(got.F32, []float32{0.5, 1.5, 2.5, 0.5, 1.5, 2.5}) {
		t.Errorf("folded t = %v", got)
	}
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": randomF32(3, 2, 3)}, 0)
}

func TestFoldConstantsSliceOfShape(t *testing.T) {
	g := parseGraph(t, `graph "slice" opset 14 {
  input %x: f32[batch, 8, 16]
  input %v: f32[128]
  %s = Shape(%x)
  %st = Constant() {value=tensor<i64[1]> [1]}
  %en = Constant() {value=tensor<i64[1]> [3]}
  %st0 = Constant() {value=tensor<i64[1]> [0]}
  %tail = Slice(%s, %st, %en)
  %head = Slice(%s, %st0, %en)
  %y = Reshape(%x, %head)
  %z = Reshape(%v, %tail)
  output %y: f32[batch, 8, 16]
  output %z: f32[8, 16]
}`)
	after := applyPass(t, g, FoldConstants)
	wantOps(t, after, map[string]int{"Shape": 1, "Slice": 1, "Reshape": 2})
	if got := after.Initializers["tail"]; got == nil || !slices.Equal(got.I64, []int64{8, 16}) {
		t.Errorf("Shape(x)[1:3] folded to %v, want [8 16]", got)
	}
	if after.Initializers["head"] != nil {
		t.Error("Shape(x)[0:3] includes batch but was folded")
	}
	in := map[string]*compiler.Tensor{"x": randomF32(4, 2, 8, 16), "v": randomF32(5, 128)}
	wantEquivalent(t, g, after, in, 0)
}

func TestFoldConstantsLeavesLargeExpansions(t *testing.T) {
	g := parseGraph(t, `graph "big" opset 14 {
  input %x: f32[1000, 1000]
  %v = Constant() {value=tensor<f32[]> [1]}
  %shape = Constant() {value=tensor<i64[2]> [1000, 1000]}
  %ones = Expand(%v, %shape)
  %y = Add(%x, %ones)
  output %y: f32[1000, 1000]
}`)
	after := applyPass(t, g, FoldConstants)
	wantOps(t, after, map[string]int{"Expand": 1, "Add": 1})
}

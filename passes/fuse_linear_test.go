package passes

import (
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

func TestFuseLinearMatMulAdd(t *testing.T) {
	g := parseGraph(t, `graph "dense" opset 14 {
  input %x: f32[batch, sequence, 8]
  init %w1: f32[8, 6] = elided("sha256:0000000000000001")
  init %b1: f32[6] = elided("sha256:0000000000000002")
  init %w2: f32[6, 4] = elided("sha256:0000000000000003")
  %h = MatMul(%x, %w1)
  %hb = Add(%b1, %h)
  %y = MatMul(%hb, %w2)
  output %y: f32[batch, sequence, 4]
}`)
	after := applyPass(t, g, FuseLinear)
	wantOps(t, after, map[string]int{opLinear: 2})
	if n := after.Nodes[0]; len(n.Inputs) != 3 || n.Inputs[1] != "w1" || n.Inputs[2] != "b1" {
		t.Errorf("first Linear reads %v, want [x w1 b1]", n.Inputs)
	}
	if n := after.Nodes[1]; len(n.Inputs) != 2 {
		t.Errorf("bias-free Linear reads %v", n.Inputs)
	}
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": randomF32(21, 2, 3, 8)}, 1e-5)
}

func TestFuseLinearGemm(t *testing.T) {
	g := parseGraph(t, `graph "head" opset 14 {
  input %x: f32[batch, 8]
  init %w: f32[4, 8] = elided("sha256:0000000000000004")
  init %b: f32[4] = elided("sha256:0000000000000005")
  init %w2: f32[4, 2] = elided("sha256:0000000000000006")
  init %b2: f32[2] = [0.5, -0.5]
  %h = Gemm(%x, %w, %b) {alpha=1.0, beta=1.0, transB=1}
  %y = Gemm(%h, %w2, %b2)
  output %y: f32[batch, 2]
}`)
	after := applyPass(t, g, FuseLinear)
	wantOps(t, after, map[string]int{opLinear: 2})
	w := after.Initializers[after.Nodes[0].Inputs[1]]
	if w == nil || w.Shape[0] != 8 || w.Shape[1] != 4 {
		t.Errorf("transB weight not transposed to [in, out]: %v", w)
	}
	if _, ok := after.Initializers["w"]; ok {
		t.Error("the [out, in] original of a transposed weight was kept")
	}
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": randomF32(22, 3, 8)}, 1e-5)
}

func TestFuseLinearLeavesOtherProducts(t *testing.T) {
	g := parseGraph(t, `graph "not-dense" opset 14 {
  input %x: f32[batch, 8]
  input %z: f32[8, 8]
  init %w: f32[8, 8] = elided("sha256:0000000000000007")
  init %b: f32[8] = elided("sha256:0000000000000008")
  %scaled = Gemm(%x, %w, %b) {alpha=0.5}
  %act = MatMul(%scaled, %z)
  %transA = Gemm(%w, %act) {transA=1}
  output %transA: f32[8, 8]
}`)
	if runPasses(t, g, FuseLinear) {
		t.Errorf("fused a product that is not x·W + b:\n%s", g.Text())
	}
}

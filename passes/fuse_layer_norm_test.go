package passes

import (
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// The decomposed LayerNorm torch.onnx emits below opset 17 (BERT's).
const decomposedLayerNorm = `graph "ln" opset 14 {
  input %x: f32[batch, sequence, 8]
  init %gamma: f32[8] = elided("sha256:00000000000000a1")
  init %beta: f32[8] = elided("sha256:00000000000000b2")
  init %two: f32[] = [2]
  init %eps: f32[] = [1e-12]
  %m = ReduceMean(%x) {axes=[-1]}
  %d = Sub(%x, %m)
  %p = Pow(%d, %two)
  %v = ReduceMean(%p) {axes=[-1]}
  %ve = Add(%v, %eps)
  %s = Sqrt(%ve)
  %n = Div(%d, %s)
  %g = Mul(%n, %gamma)
  %y = Add(%g, %beta)
  output %y: f32[batch, sequence, 8]
}`

func TestFuseLayerNorm(t *testing.T) {
	g := parseGraph(t, decomposedLayerNorm)
	after := applyPass(t, g, FuseLayerNorm)
	wantOps(t, after, map[string]int{"LayerNormalization": 1})
	ln := after.Nodes[0]
	if ln.Inputs[0] != "x" || ln.Inputs[1] != "gamma" || ln.Inputs[2] != "beta" ||
		ln.AttrFloat("epsilon", 0) != 1e-12 || ln.AttrInt("axis", 0) != -1 {
		t.Errorf("fused node %v %v", ln.Inputs, ln.Attrs)
	}
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": randomF32(7, 2, 5, 8)}, 1e-5)
}

func TestFuseLayerNormSwappedOperandsAndNoAffine(t *testing.T) {
	src := strings.NewReplacer(
		"%ve = Add(%v, %eps)", "%ve = Add(%eps, %v)",
		"%g = Mul(%n, %gamma)\n", "",
		"%y = Add(%g, %beta)", "%y = Identity(%n)",
	).Replace(decomposedLayerNorm)
	g := parseGraph(t, src)
	after := applyPass(t, g, FuseLayerNorm)
	wantOps(t, after, map[string]int{"LayerNormalization": 1, "Identity": 1})
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": randomF32(8, 1, 3, 8)}, 1e-5)
}

func TestFuseLayerNormRejectsOtherAxes(t *testing.T) {
	src := strings.ReplaceAll(decomposedLayerNorm, "{axes=[-1]}", "{axes=[1]}")
	g := parseGraph(t, src)
	if runPasses(t, g, FuseLayerNorm) {
		t.Errorf("normalising over axis 1 was fused:\n%s", g.Text())
	}
}

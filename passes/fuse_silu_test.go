package passes

import (
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

func siluGraph(body string) string {
	return `graph "silu" opset 14 {
  input %x: f32[batch, 16]
` + body + `
  output %y: f32[batch, 16]
}`
}

// TestFuseSilu: torch.onnx's F.silu, Mul(x, Sigmoid(x)), fuses with the
// product's operands in either order, and the interpreter's result stays
// within float32 rounding of the unfused graph's. A Sigmoid with another
// reader stays for it.
func TestFuseSilu(t *testing.T) {
	for name, c := range map[string]struct {
		body string
		want map[string]int
	}{
		"x-first":       {"  %s = Sigmoid(%x)\n  %y = Mul(%x, %s)", map[string]int{"sqc.Silu": 1}},
		"sigmoid-first": {"  %s = Sigmoid(%x)\n  %y = Mul(%s, %x)", map[string]int{"sqc.Silu": 1}},
		"sigmoid-read-again": {"  %s = Sigmoid(%x)\n  %m = Mul(%x, %s)\n  %y = Add(%m, %s)",
			map[string]int{"sqc.Silu": 1, "Sigmoid": 1, "Add": 1}},
	} {
		t.Run(name, func(t *testing.T) {
			g := parseGraph(t, siluGraph(c.body))
			after := applyPass(t, g, FuseSilu, EliminateDeadNodes)
			wantOps(t, after, c.want)
			wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": randomF32(13, 3, 16)}, 1e-6)
		})
	}
}

// TestFuseSiluRejectsNearMisses: the sigmoid of another value, a product
// of the sigmoid with itself, and a Tanh in its place are no SiLU.
func TestFuseSiluRejectsNearMisses(t *testing.T) {
	for name, body := range map[string]string{
		"other-x":     "  %n = Neg(%x)\n  %s = Sigmoid(%n)\n  %y = Mul(%x, %s)",
		"squared":     "  %s = Sigmoid(%x)\n  %y = Mul(%s, %s)",
		"tanh-gate":   "  %s = Tanh(%x)\n  %y = Mul(%x, %s)",
		"sigmoid-mul": "  %s = Sigmoid(%x)\n  %n = Neg(%x)\n  %y = Mul(%n, %s)",
	} {
		t.Run(name, func(t *testing.T) {
			g := parseGraph(t, siluGraph(body))
			if runPasses(t, g, FuseSilu) {
				t.Errorf("fused a non-SiLU:\n%s", g.Text())
			}
		})
	}
}

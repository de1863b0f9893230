package passes

import (
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

func geluGraph(body string) string { return geluGraphOf(geluConsts32, body) }

// The GELU constants as float32 exporters write them, and as a float16
// model holds them (float32 rounded to float16, read widened).
const (
	geluConsts32 = `  init %sqrt2: f32[] = [1.4142135]
  init %invsqrt2: f32[] = [0.70710677]
  init %c: f32[] = [0.044715]
  init %k: f32[] = [0.7978846]
`
	geluConsts16 = `  init %sqrt2: f32[] = [1.4140625]
  init %invsqrt2: f32[] = [0.70703125]
  init %c: f32[] = [0.044708252]
  init %k: f32[] = [0.79785156]
`
)

func geluGraphOf(consts, body string) string {
	return `graph "gelu" opset 14 {
  input %x: f32[batch, 16]
` + consts + `  init %one: f32[] = [1]
  init %half: f32[] = [0.5]
  init %three: f32[] = [3]
` + body + `
  output %y: f32[batch, 16]
}`
}

// torchGeluErf is torch.onnx's nn.GELU(): Div Erf Add Mul(x, .) Mul(., 0.5).
const torchGeluErf = `  %a = Div(%x, %sqrt2)
  %e = Erf(%a)
  %f = Add(%e, %one)
  %m = Mul(%x, %f)
  %y = Mul(%m, %half)`

// geluTanhBody is the tanh form with x^3 as Pow(x, 3).
const geluTanhBody = `  %cube = Pow(%x, %three)
  %cc = Mul(%c, %cube)
  %inner = Add(%x, %cc)
  %sc = Mul(%inner, %k)
  %th = Tanh(%sc)
  %f = Add(%th, %one)
  %h = Mul(%half, %x)
  %y = Mul(%h, %f)`

func TestFuseGeluErfForms(t *testing.T) {
	forms := map[string]string{
		"torch": torchGeluErf,
		// HF's x * 0.5 * (1.0 + erf(x / sqrt(2.0))), multiply by 1/sqrt2
		"half-first": `  %a = Mul(%x, %invsqrt2)
  %e = Erf(%a)
  %f = Add(%one, %e)
  %h = Mul(%x, %half)
  %y = Mul(%h, %f)`,
		// x * ((1 + erf) * 0.5)
		"factor-half": `  %a = Div(%x, %sqrt2)
  %e = Erf(%a)
  %f = Add(%e, %one)
  %h = Mul(%half, %f)
  %y = Mul(%h, %x)`,
	}
	for name, body := range forms {
		t.Run(name, func(t *testing.T) {
			g := parseGraph(t, geluGraph(body))
			after := applyPass(t, g, FuseGelu, EliminateDeadNodes)
			wantOps(t, after, map[string]int{opGelu: 1})
			wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": randomF32(11, 3, 16)}, 1e-6)
		})
	}
}

func TestFuseGeluTanhForm(t *testing.T) {
	g := parseGraph(t, geluGraph(geluTanhBody))
	after := applyPass(t, g, FuseGelu)
	wantOps(t, after, map[string]int{opGelu: 1})
	for _, n := range after.Nodes {
		if compiler.GeluApproximate(n) != compiler.GeluTanh {
			t.Errorf("fused %s has approximate %q, want %q", n.Op, compiler.GeluApproximate(n), compiler.GeluTanh)
		}
	}
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": randomF32(12, 3, 16)}, 1e-6)
}

func TestFuseGeluRejectsNearMisses(t *testing.T) {
	for name, body := range map[string]string{
		"plus-two": `  %two = Add(%one, %one)
  %a = Div(%x, %sqrt2)
  %e = Erf(%a)
  %f = Add(%e, %two)
  %m = Mul(%x, %f)
  %y = Mul(%m, %half)`,
		"other-x": `  %a = Div(%x, %sqrt2)
  %e = Erf(%a)
  %f = Add(%e, %one)
  %x2 = Neg(%x)
  %m = Mul(%x2, %f)
  %y = Mul(%m, %half)`,
		"erf-reused": `  %a = Div(%x, %sqrt2)
  %e = Erf(%a)
  %f = Add(%e, %one)
  %m = Mul(%x, %f)
  %h = Mul(%m, %half)
  %y = Add(%h, %e)`,
	} {
		t.Run(name, func(t *testing.T) {
			g := parseGraph(t, geluGraph(body))
			if runPasses(t, g, FuseGelu) {
				t.Errorf("fused a non-GELU:\n%s", g.Text())
			}
		})
	}
}

// TestFuseGeluFloat16Constants: a float16 model's GELU (its constants
// rounded to float16) fuses in both forms, into the exact GELU, which
// differs from the file's by less than float16 arithmetic itself would;
// a constant off by as much but not float16's rounding (1.4140, or the
// next float16 above sqrt(2)) does not.
func TestFuseGeluFloat16Constants(t *testing.T) {
	for name, body := range map[string]string{"erf": torchGeluErf, "tanh": geluTanhBody} {
		t.Run(name, func(t *testing.T) {
			g := parseGraph(t, geluGraphOf(geluConsts16, body))
			after := applyPass(t, g, FuseGelu, EliminateDeadNodes)
			wantOps(t, after, map[string]int{opGelu: 1})
			wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": randomF32(13, 3, 16)}, 1e-3)
		})
	}
	for _, sqrt2 := range []string{"1.4140", "1.4150391"} {
		consts := strings.Replace(geluConsts16, "1.4140625", sqrt2, 1)
		g := parseGraph(t, geluGraphOf(consts, torchGeluErf))
		if runPasses(t, g, FuseGelu) {
			t.Errorf("fused x / %s as GELU's x / sqrt(2)", sqrt2)
		}
	}
}

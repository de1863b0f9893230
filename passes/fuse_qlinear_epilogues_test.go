package passes

import (
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// qffn is a BERT feed-forward block after quantisation: LayerNorm, the
// expanding QLinear, GELU, the contracting QLinear and the residual Add
// before the next LayerNorm (the residual on the left, as BERT's ONNX
// export has it). MODE is replaced by the activation attributes.
const qffn = `graph "qffn" opset 17 {
  input %x: f32[batch, seq, 16]
  init %g: f32[16] = splat(1)
  init %w1: i8[16, 48] = elided("sha256:00000000000000e1")
  init %s1: f32[48] = splat(0.002)
  init %b1: f32[48] = elided("sha256:00000000000000e2")
  init %w2: i8[48, 16] = elided("sha256:00000000000000e3")
  init %s2: f32[16] = splat(0.001)
  %h = LayerNormalization(%x, %g) {axis=-1, epsilon=1e-12}
  %f1 = sqc.QLinear(%h, %w1, %s1, %b1) {MODE1} @ffn1
  %a = sqc.Gelu(%f1)
  %f2 = sqc.QLinear(%a, %w2, %s2) {MODE2} @ffn2
  %r = Add(%h, %f2)
  %y = LayerNormalization(%r, %g) {axis=-1, epsilon=1e-12}
  output %y: f32[batch, seq, 16]
}`

var (
	staticModes  = strings.NewReplacer("MODE1", `act_scale=0.03, act_zero_point=128`, "MODE2", `act_scale=0.004, act_zero_point=20`)
	dynamicModes = strings.NewReplacer("MODE1", `act_mode="dynamic"`, "MODE2", `act_mode="dynamic"`)
)

// fusionInputs are two batches of the 16-wide input x.
func fusionInputs(width int64) []map[string]*compiler.Tensor {
	return []map[string]*compiler.Tensor{
		{"x": randomF32(1, 2, 5, width)},
		{"x": randomF32(2, 3, 1, width)},
	}
}

func TestFuseQLinearEpilogues(t *testing.T) {
	for mode, r := range map[string]*strings.Replacer{"static": staticModes, "dynamic": dynamicModes} {
		t.Run(mode, func(t *testing.T) {
			g := parseGraph(t, r.Replace(qffn))
			fused := applyPass(t, g, FuseQLinearEpilogues)
			wantOps(t, fused, map[string]int{"LayerNormalization": 2, opQLinear: 2})
			ffn1, ffn2 := nodeByName(t, fused, "ffn1"), nodeByName(t, fused, "ffn2")
			if actOf(t, ffn1) != qgemm.ActGelu || ffn1.Outputs[0] != "a" || qlinearResidual(ffn1) != "" {
				t.Errorf("ffn1 = %s, want act gelu producing %%a", nodeText(fused, ffn1))
			}
			if actOf(t, ffn2) != qgemm.ActNone || qlinearResidual(ffn2) != "h" || ffn2.Outputs[0] != "r" || ffn2.Inputs[3] != "" {
				t.Errorf("ffn2 = %s, want residual %%h, no bias, producing %%r", nodeText(fused, ffn2))
			}
			// The epilogue computes what the separate Gelu and Add steps do:
			// same bits.
			checkFusedEquivalent(t, g, fused, fusionInputs(16), 0.02, 0.02)
			if runPasses(t, fused, FuseQLinearEpilogues) {
				t.Error("a second run changed the graph")
			}
		})
	}
}

// actOf is a QLinear's epilogue activation.
func actOf(t *testing.T, n *compiler.Node) qgemm.Act {
	t.Helper()
	act, err := compiler.QLinearAct(n)
	if err != nil {
		t.Fatalf("node %q: %v", n.Name, err)
	}
	return act
}

// TestFuseQLinearEpiloguesRelu: a ReLU FFN (some sentence encoders have
// them) fuses as the GELU one does, with act "relu", and lowers to the
// same program as the unfused graph.
func TestFuseQLinearEpiloguesRelu(t *testing.T) {
	for mode, r := range map[string]*strings.Replacer{"static": staticModes, "dynamic": dynamicModes} {
		t.Run(mode, func(t *testing.T) {
			g := parseGraph(t, r.Replace(strings.Replace(qffn, "sqc.Gelu(%f1)", "Relu(%f1)", 1)))
			fused := applyPass(t, g, FuseQLinearEpilogues)
			wantOps(t, fused, map[string]int{"LayerNormalization": 2, opQLinear: 2})
			ffn1 := nodeByName(t, fused, "ffn1")
			if actOf(t, ffn1) != qgemm.ActRelu || ffn1.Outputs[0] != "a" || ffn1.Attrs["act"].String != "relu" {
				t.Errorf("ffn1 = %s, want act relu producing %%a", nodeText(fused, ffn1))
			}
			checkFusedEquivalent(t, g, fused, fusionInputs(16), 0.02, 0.02)
		})
	}
}

// TestFuseQLinearEpiloguesGeluTanh: a tanh-GELU FFN (gelu_new,
// gelu_pytorch_tanh) fuses with act "gelu_tanh", and lowers to the same
// program as the unfused graph (whose standalone step is nn.GeluTanh).
func TestFuseQLinearEpiloguesGeluTanh(t *testing.T) {
	for mode, r := range map[string]*strings.Replacer{"static": staticModes, "dynamic": dynamicModes} {
		t.Run(mode, func(t *testing.T) {
			g := parseGraph(t, r.Replace(strings.Replace(qffn, "sqc.Gelu(%f1)", `sqc.Gelu(%f1) {approximate="tanh"}`, 1)))
			fused := applyPass(t, g, FuseQLinearEpilogues)
			wantOps(t, fused, map[string]int{"LayerNormalization": 2, opQLinear: 2})
			ffn1 := nodeByName(t, fused, "ffn1")
			if actOf(t, ffn1) != qgemm.ActGeluTanh || ffn1.Outputs[0] != "a" || ffn1.Attrs["act"].String != "gelu_tanh" {
				t.Errorf("ffn1 = %s, want act gelu_tanh producing %%a", nodeText(fused, ffn1))
			}
			checkFusedEquivalent(t, g, fused, fusionInputs(16), 0.02, 0.02)
		})
	}
}

// TestFuseQLinearEpiloguesGeluThenResidual: a QLinear whose GELU output
// is added to the residual stream takes both into its epilogue, GELU
// first, as the op defines.
func TestFuseQLinearEpiloguesGeluThenResidual(t *testing.T) {
	g := parseGraph(t, `graph "gr" opset 17 {
  input %x: f32[batch, seq, 16]
  init %w: i8[16, 16] = elided("sha256:00000000000000e4")
  init %s: f32[16] = splat(0.002)
  %q = sqc.QLinear(%x, %w, %s) {act_scale=0.02, act_zero_point=100} @q
  %a = sqc.Gelu(%q)
  %y = Add(%a, %x)
  output %y: f32[batch, seq, 16]
}`)
	fused := applyPass(t, g, FuseQLinearEpilogues)
	wantOps(t, fused, map[string]int{opQLinear: 1})
	q := nodeByName(t, fused, "q")
	if actOf(t, q) != qgemm.ActGelu || qlinearResidual(q) != "x" || q.Outputs[0] != "y" {
		t.Errorf("q = %s", nodeText(fused, q))
	}
	checkFusedEquivalent(t, g, fused, fusionInputs(16), 0.02, 0.02)
}

// TestFuseQLinearEpiloguesLeavesUnsafeForms: each graph holds a pattern the
// pass must not fuse, because exec would not have (the bits or the order
// would change).
func TestFuseQLinearEpiloguesLeavesUnsafeForms(t *testing.T) {
	const head = `graph "neg" opset 17 {
  input %x: f32[batch, seq, 16]
  init %w: i8[16, 16] = elided("sha256:00000000000000e5")
  init %s: f32[16] = splat(0.002)
  init %bias: f32[16] = elided("sha256:00000000000000e6")
`
	for name, body := range map[string]string{
		// The QLinear's output is read twice: GELU cannot absorb it.
		"shared output": `
  %q = sqc.QLinear(%x, %w, %s) {act_scale=0.02, act_zero_point=100}
  %a = sqc.Gelu(%q)
  %y = Add(%a, %q)
  output %y: f32[batch, seq, 16]`,
		// The pre-activation value is a graph output.
		"output": `
  %q = sqc.QLinear(%x, %w, %s) {act_scale=0.02, act_zero_point=100}
  %y = sqc.Gelu(%q)
  output %y: f32[batch, seq, 16]
  output %q: f32[batch, seq, 16]`,
		// The residual is computed after the QLinear: moving the Add into
		// its epilogue would read it before it exists.
		"late residual": `
  %q = sqc.QLinear(%x, %w, %s) {act_scale=0.02, act_zero_point=100}
  %late = Relu(%x)
  %y = Add(%q, %late)
  output %y: f32[batch, seq, 16]`,
		// A broadcast bias is not a residual of the output's shape.
		"broadcast": `
  %q = sqc.QLinear(%x, %w, %s) {act_scale=0.02, act_zero_point=100}
  %y = Add(%q, %bias)
  output %y: f32[batch, seq, 16]`,
		// GELU after a residual would apply it to the sum: not the op's order.
		"gelu after residual": `
  %q = sqc.QLinear(%x, %w, %s, _, %x) {act_scale=0.02, act_zero_point=100}
  %y = sqc.Gelu(%q)
  output %y: f32[batch, seq, 16]`,
	} {
		t.Run(name, func(t *testing.T) {
			g := parseGraph(t, head+body+"\n}")
			fused := g.Clone()
			if runPasses(t, fused, FuseQLinearEpilogues) {
				t.Errorf("fused an unsafe form:\n%s", fused.Text())
			}
			checkFusedEquivalent(t, g, fused, fusionInputs(16), 0, 0.02)
		})
	}
}

// nodeByName returns the node of that name, failing the test if absent.
func nodeByName(t *testing.T, g *compiler.Graph, name string) *compiler.Node {
	t.Helper()
	for _, n := range g.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %q in\n%s", name, g.Text())
	return nil
}

// nodeText is one node's line of g's text form.
func nodeText(g *compiler.Graph, n *compiler.Node) string {
	for _, line := range strings.Split(g.Text(), "\n") {
		if strings.Contains(line, "@"+n.Name) || strings.Contains(line, "= "+n.Op+"(") && strings.Contains(line, "%"+n.Outputs[0]+" =") {
			return strings.TrimSpace(line)
		}
	}
	return n.Op + " " + strings.Join(n.Inputs, ", ")
}

// qglu is a gated feed-forward after quantisation (JinaBERT's GEGLU,
// ModernBERT's GLU): the act half's QLinear and GELU, the gate half's
// QLinear after it, their product, the contracting QLinear.
const qglu = `graph "qglu" opset 17 {
  input %x: f32[batch, seq, 16]
  init %g: f32[16] = splat(1)
  init %w1: i8[16, 24] = elided("sha256:00000000000000f1")
  init %s1: f32[24] = splat(0.002)
  init %w2: i8[16, 24] = elided("sha256:00000000000000f2")
  init %s2: f32[24] = splat(0.003)
  init %w3: i8[24, 16] = elided("sha256:00000000000000f3")
  init %s3: f32[16] = splat(0.001)
  %h = LayerNormalization(%x, %g) {axis=-1, epsilon=1e-12}
  %f1 = sqc.QLinear(%h, %w1, %s1) {MODE1} @act_half
  %a = sqc.Gelu(%f1)
  %f2 = sqc.QLinear(%h, %w2, %s2) {MODE1} @gate_half
  %p = Mul(%a, %f2)
  %f3 = sqc.QLinear(%p, %w3, %s3) {MODE2} @ffn2
  output %f3: f32[batch, seq, 16]
}`

// TestFuseQLinearEpiloguesGatedProduct: the product of a gated
// feed-forward fuses into the epilogue of the QLinear that runs second
// (residual_op "mul", the first's activation output its multiplier), with
// the bits of the separate Mul, static and dynamic; the first QLinear
// takes the GELU.
func TestFuseQLinearEpiloguesGatedProduct(t *testing.T) {
	for mode, r := range map[string]*strings.Replacer{"static": staticModes, "dynamic": dynamicModes} {
		t.Run(mode, func(t *testing.T) {
			g := parseGraph(t, r.Replace(qglu))
			fused := applyPass(t, g, FuseQLinearEpilogues)
			wantOps(t, fused, map[string]int{"LayerNormalization": 1, opQLinear: 3})
			first, second := nodeByName(t, fused, "act_half"), nodeByName(t, fused, "gate_half")
			if actOf(t, first) != qgemm.ActGelu || first.Outputs[0] != "a" || qlinearResidual(first) != "" {
				t.Errorf("act_half = %s, want act gelu producing %%a", nodeText(fused, first))
			}
			if actOf(t, second) != qgemm.ActNone || qlinearResidual(second) != "a" || !compiler.QLinearMulResidual(second) || second.Outputs[0] != "p" {
				t.Errorf("gate_half = %s, want %%a multiplying, producing %%p", nodeText(fused, second))
			}
			checkFusedEquivalent(t, g, fused, fusionInputs(16), 0.02, 0.02)
		})
	}
	// The gate half first: the act half runs second and multiplies its
	// GELU output by the gate's (the epilogue applies the activation before
	// the residual).
	for mode, r := range map[string]*strings.Replacer{"static": staticModes, "dynamic": dynamicModes} {
		t.Run("gate first/"+mode, func(t *testing.T) {
			src := strings.Replace(r.Replace(qglu), "  %f2 = sqc.QLinear(%h, %w2, %s2) {"+r.Replace("MODE1")+"} @gate_half\n", "", 1)
			src = strings.Replace(src, "  %f1 = sqc.QLinear", "  %f2 = sqc.QLinear(%h, %w2, %s2) {"+r.Replace("MODE1")+"} @gate_half\n  %f1 = sqc.QLinear", 1)
			g := parseGraph(t, src)
			fused := applyPass(t, g, FuseQLinearEpilogues)
			first, second := nodeByName(t, fused, "gate_half"), nodeByName(t, fused, "act_half")
			if qlinearResidual(first) != "" || actOf(t, second) != qgemm.ActGelu || qlinearResidual(second) != "f2" || !compiler.QLinearMulResidual(second) {
				t.Errorf("want act_half gelu times %%f2, got\n%s\n%s", nodeText(fused, first), nodeText(fused, second))
			}
			checkFusedEquivalent(t, g, fused, fusionInputs(16), 0.02, 0.02)
		})
	}
}

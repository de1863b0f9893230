package passes

import (
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
)

// qffnNext is qffn (static) with the LayerNorm after the residual read by
// the next layer's QLinear as well as being the output: the form in which
// BERT's LayerNorms run quantised. extra adds lines before the closing
// brace.
func qffnNext(extra string) string {
	return strings.NewReplacer(
		`  init %s2: f32[16] = splat(0.001)`, `  init %s2: f32[16] = splat(0.001)
  init %w3: i8[16, 24] = elided("sha256:00000000000000e4")
  init %s3: f32[24] = splat(0.003)`,
		`{axis=-1, epsilon=1e-12}
  output %y: f32[batch, seq, 16]`, `{axis=-1, epsilon=1e-12} @ln
  %z = sqc.QLinear(%y, %w3, %s3) {act_scale=0.02, act_zero_point=100} @next
  output %y: f32[batch, seq, 16]
  output %z: f32[batch, seq, 24]`+extra,
	).Replace(staticModes.Replace(qffn))
}

// beforeLayerNormFusion is qffnNext (with extra outputs) through the
// passes FuseLayerNormIntoQLinear follows.
func beforeLayerNormFusion(t *testing.T, extra string) *compiler.Graph {
	t.Helper()
	g := parseGraph(t, qffnNext(extra))
	return applyPass(t, g, FuseQLinearEpilogues, MaterializeQuantize, DeduplicateQuantize, WriteU8Directly)
}

func TestFuseLayerNormIntoQLinear(t *testing.T) {
	unfused := beforeLayerNormFusion(t, "")
	ln := nodeByName(t, unfused, "ln")
	if ln.Op != "sqc.LayerNorm" || compiler.InProducer(ln) {
		t.Fatalf("before the pass: %s, want an sqc.LayerNorm not in its producer", nodeText(unfused, ln))
	}
	fused := applyPass(t, unfused, FuseLayerNormIntoQLinear)
	if ln := nodeByName(t, fused, "ln"); !compiler.InProducer(ln) {
		t.Fatalf("after the pass: %s, want in_producer=1", nodeText(fused, ln))
	}
	if runPasses(t, fused, FuseLayerNormIntoQLinear) {
		t.Error("a second run changed the graph")
	}
	// The fused program has one step fewer, a GEMM running the LayerNorm,
	// and the same bits (checkFusedEquivalent also runs the interpreter,
	// for which in_producer changes nothing).
	pu, pf := execProgram(t, unfused), execProgram(t, fused)
	if len(pf.Steps()) != len(pu.Steps())-1 {
		t.Errorf("%d steps fused, %d unfused; want one fewer:\n%s", len(pf.Steps()), len(pu.Steps()), pf)
	}
	norms := 0
	for _, s := range pf.Steps() {
		if g, ok := s.(*exec.GEMMStep); ok && g.Norm != nil {
			norms++
			if g.Source() != "ffn2" || g.Call() != "nn.LinearLayerNorm" {
				t.Errorf("the LayerNorm runs in %s %q, want nn.LinearLayerNorm of ffn2", g.Call(), g.Source())
			}
			// Buffer planning sees what the LayerNorm writes.
			if w := g.Operands().Writes; !slices.Contains(w, g.Norm.Out) || !slices.Contains(w, g.Norm.OutU8) || !slices.Contains(w, g.Out) {
				t.Errorf("the fused step writes %v, want its output %d and the LayerNorm's %d and %d", w, g.Out, g.Norm.Out, g.Norm.OutU8)
			}
		}
	}
	if norms != 1 {
		t.Errorf("%d GEMMs run a LayerNorm, want 1:\n%s", norms, pf)
	}
	checkFusedEquivalent(t, unfused, fused, fusionInputs(16), 0, 0)
}

// TestFuseLayerNormIntoQLinearLeavesOtherForms: the LayerNorm stays a
// step of its own when its input is also read elsewhere (here a graph
// output), and the verifier rejects in_producer where the form is not met.
func TestFuseLayerNormIntoQLinearLeavesOtherForms(t *testing.T) {
	g := beforeLayerNormFusion(t, "\n  output %r: f32[batch, seq, 16]")
	if runPasses(t, g, FuseLayerNormIntoQLinear) {
		t.Errorf("fused a LayerNorm whose input is a graph output:\n%s", g.Text())
	}
	compiler.SetInProducer(nodeByName(t, g, "ln"))
	if err := g.VerifyAt(compiler.VerifyQuantized); err == nil || !strings.Contains(err.Error(), "in_producer") {
		t.Errorf("verifier on in_producer with a second reader: %v, want an in_producer error", err)
	}
	// The first LayerNorm's input is the graph input, not a QLinear's.
	g = beforeLayerNormFusion(t, "")
	for _, n := range g.Nodes {
		if n.Op == "sqc.LayerNorm" && n.Inputs[0] == "x" {
			compiler.SetInProducer(n)
		}
	}
	if err := g.VerifyAt(compiler.VerifyQuantized); err == nil || !strings.Contains(err.Error(), "not an sqc.QLinear's output") {
		t.Errorf("verifier on in_producer after a graph input: %v, want an error naming it", err)
	}
}

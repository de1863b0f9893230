package passes

import (
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// qshared reads one LayerNorm output %h with four QLinears: two of one
// static quantisation (A), one of another (B), one dynamic, and an Add
// reads it in f32 too. %a (from the first A) is read only by a static
// QLinear, %b by a static and a dynamic one.
const qshared = `graph "qshared" opset 17 {
  input %x: f32[batch, seq, 16]
  init %g: f32[16] = splat(1)
  init %w: i8[16, 16] = elided("sha256:00000000000000f1")
  init %s: f32[16] = splat(0.002)
  %h = LayerNormalization(%x, %g) {axis=-1, epsilon=1e-12}
  %a = sqc.QLinear(%h, %w, %s) {act_scale=0.03, act_zero_point=128} @qa1
  %a2 = sqc.QLinear(%h, %w, %s) {act_scale=0.03, act_zero_point=128} @qa2
  %b = sqc.QLinear(%h, %w, %s) {act_scale=0.02, act_zero_point=120} @qb
  %d = sqc.QLinear(%h, %w, %s) {act_mode="dynamic"} @qd
  %e = sqc.QLinear(%a, %w, %s) {act_scale=0.01, act_zero_point=100} @qe
  %f = sqc.QLinear(%b, %w, %s) {act_scale=0.01, act_zero_point=100} @qf
  %f2 = sqc.QLinear(%b, %w, %s) {act_mode="dynamic"} @qf2
  %r = Add(%h, %a2)
  output %r: f32[batch, seq, 16]
  output %d: f32[batch, seq, 16]
  output %e: f32[batch, seq, 16]
  output %f: f32[batch, seq, 16]
  output %f2: f32[batch, seq, 16]
}`

func TestExplicitQuantisation(t *testing.T) {
	g := parseGraph(t, qshared)
	m := applyPass(t, g, MaterializeQuantize)
	wantOps(t, m, map[string]int{"LayerNormalization": 1, opQLinear: 7, "sqc.Quantize": 7, "Add": 1})
	if runPasses(t, m.Clone(), MaterializeQuantize) {
		t.Error("a second MaterializeQuantize changed the graph")
	}
	d := applyPass(t, m, DeduplicateQuantize)
	// %h: A, B, dynamic; %a: one; %b: static and dynamic.
	wantOps(t, d, map[string]int{"LayerNormalization": 1, opQLinear: 7, "sqc.Quantize": 6, "Add": 1})
	w := applyPass(t, d, WriteU8Directly)
	// The LayerNorm writes A (first in node order) beside its f32 output;
	// qa1 writes %a's only quantised form; %b keeps its two Quantizes.
	wantOps(t, w, map[string]int{"sqc.LayerNorm": 1, opQLinear: 7, "sqc.Quantize": 4, "Add": 1})
	ln := w.Nodes[slicesIndexOp(w, "sqc.LayerNorm")]
	if s, z, ok := compiler.U8Output(ln); !ok || s != 0.03 || z != 128 || len(ln.Outputs) != 2 || ln.Outputs[1] != "h" {
		t.Errorf("LayerNorm %s, want u8 output with scale 0.03, zero point 128, and %%h kept", nodeText(w, ln))
	}
	if s, z, ok := compiler.U8Output(nodeByName(t, w, "qa1")); !ok || s != 0.01 || z != 100 {
		t.Errorf("qa1 = %s, want writing qe's u8 input", nodeText(w, nodeByName(t, w, "qa1")))
	}
	if _, _, ok := compiler.U8Output(nodeByName(t, w, "qb")); ok {
		t.Error("qb writes u8 although a dynamic QLinear reads its output")
	}
	if runPasses(t, w.Clone(), DeduplicateQuantize, WriteU8Directly) {
		t.Error("a second run changed the graph")
	}
	for _, in := range fusionInputs(16) {
		// The same bits as the QLinears quantising their f32 inputs
		// themselves, in the interpreter (the engine lowers only the
		// explicit form).
		wantEquivalent(t, g, w, in, 0)
	}
	steps := map[string]int{}
	for _, s := range execProgram(t, w).Steps() {
		steps[s.Call()]++
	}
	if steps["nn.LayerNormU8"] != 1 || steps["nn.QuantizeU8Parallel"] != 2 || steps["nn.QuantizeRowsU8Parallel"] != 2 || steps["qgemm.GEMM"] != 7 {
		t.Errorf("steps %v, want one nn.LayerNormU8, 2 static and 2 dynamic quantise steps, 7 GEMMs", steps)
	}
}

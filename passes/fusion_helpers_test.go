package passes

import (
	"math"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/interp"
)

// Helpers of the fusion tests (FuseQLinearEpilogues, FuseQKV): the fused
// graph must give compiler/exec's bits of the unfused one, and stay close
// to the FP32 interpreter.

// execProgram lowers g with compiler/exec on one thread, after the
// quantisation passes (explicitQuant): lowering makes no quantisation of
// its own.
func execProgram(t *testing.T, g *compiler.Graph) *exec.Program {
	t.Helper()
	p, err := exec.Compile(explicitQuant(t, g), exec.Options{Threads: 1})
	if err != nil {
		t.Fatalf("exec.Compile: %v\n%s", err, g.Text())
	}
	t.Cleanup(p.Close)
	return p
}

// execRun runs a program, failing the test on error.
func execRun(t *testing.T, p *exec.Program, in map[string]*compiler.Tensor) map[string]*compiler.Tensor {
	t.Helper()
	out, err := p.Run(in)
	if err != nil {
		t.Fatalf("exec run: %v\n%s", err, p)
	}
	return out
}

// wantSameBits fails unless got and want hold the same outputs bit for bit.
func wantSameBits(t *testing.T, what string, got, want map[string]*compiler.Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs, want %d", what, len(got), len(want))
	}
	for name, w := range want {
		g := got[name]
		if g == nil || g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) {
			t.Fatalf("%s: output %s is %v, want %s%v", what, name, g, w.DType, w.Shape)
		}
		for i := range w.F32 {
			if math.Float32bits(g.F32[i]) != math.Float32bits(w.F32[i]) {
				t.Fatalf("%s: %s[%d] = %g, want %g bit for bit", what, name, i, g.F32[i], w.F32[i])
			}
		}
	}
}

// maxRelDiff is max |got - want| over all outputs divided by max |want|.
func maxRelDiff(t *testing.T, got, want map[string]*compiler.Tensor) float64 {
	t.Helper()
	var diff, scale float64
	for name, w := range want {
		g := got[name]
		if g == nil || !slices.Equal(g.Shape, w.Shape) {
			t.Fatalf("output %s: %v, want shape %v", name, g, w.Shape)
		}
		for i := range w.F32 {
			diff = max(diff, math.Abs(float64(g.F32[i])-float64(w.F32[i])))
			scale = max(scale, math.Abs(float64(w.F32[i])))
		}
	}
	return diff / max(scale, 1e-30)
}

// checkFusedEquivalent runs unfused and fused through exec and the
// interpreter on every input set: exec must give the same bits for both
// (it runs what each graph says, fused in the GEMM epilogue or as steps of
// their own); the fused graph must stay within interpTol (relative) of the
// unfused one in the interpreter, and exec within execTol of the
// interpreter.
func checkFusedEquivalent(t *testing.T, unfused, fused *compiler.Graph, inputs []map[string]*compiler.Tensor, interpTol, execTol float64) {
	t.Helper()
	pu, pf := execProgram(t, unfused), execProgram(t, fused)
	for _, in := range inputs {
		want := execRun(t, pu, in)
		got := execRun(t, pf, in)
		wantSameBits(t, "exec, fused vs unfused", got, want)
		iu, err := interp.Run(unfused, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		ifu, err := interp.Run(fused, in, nil)
		if err != nil {
			t.Fatalf("interpreter on the fused graph: %v\n%s", err, fused.Text())
		}
		if d := maxRelDiff(t, ifu, iu); d > interpTol {
			t.Errorf("interpreter: fused vs unfused differ by %.3g (relative), tolerance %g", d, interpTol)
		}
		if d := maxRelDiff(t, got, ifu); d > execTol {
			t.Errorf("exec vs interpreter on the fused graph: %.3g (relative), tolerance %g", d, execTol)
		}
	}
}

// explicitQuant returns a copy of g after MaterializeQuantize,
// DeduplicateQuantize and WriteU8Directly, the form QuantPipeline gives
// the INT8 engine (g itself when it has no sqc.QLinear).
func explicitQuant(t *testing.T, g *compiler.Graph) *compiler.Graph {
	t.Helper()
	if slicesIndexOp(g, opQLinear) < 0 {
		return g
	}
	q := g.Clone()
	if err := Run(q, []Pass{MaterializeQuantize, DeduplicateQuantize, WriteU8Directly}, Options{CheckIR: true, Level: compiler.VerifyQuantized}); err != nil {
		t.Fatalf("quantisation passes: %v", err)
	}
	return q
}

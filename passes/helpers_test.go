package passes

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
)

// parseGraph parses IR text and infers shapes, as a frontend would leave it.
func parseGraph(t *testing.T, src string) *compiler.Graph {
	t.Helper()
	g, err := compiler.ParseText(src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := g.InferShapes(); err != nil {
		t.Fatalf("infer shapes: %v", err)
	}
	if err := g.Verify(); err != nil {
		t.Fatalf("test graph does not verify: %v", err)
	}
	return g
}

// runPasses runs the passes with the IR checked after each and returns
// whether any changed the graph.
func runPasses(t *testing.T, g *compiler.Graph, list ...Pass) bool {
	t.Helper()
	changed := false
	err := Run(g, list, Options{CheckIR: true, Log: func(_ string, c bool, _ string) { changed = changed || c }})
	if err != nil {
		t.Fatalf("%v\n%s", err, g.Text())
	}
	return changed
}

// wantOps fails unless g's op histogram is exactly want.
func wantOps(t *testing.T, g *compiler.Graph, want map[string]int) {
	t.Helper()
	if got := OpHistogram(g); !maps.Equal(got, want) {
		t.Errorf("ops = %s, want %s\n%s", histogramString(got), histogramString(want), g.Text())
	}
}

// wantEquivalent runs before and after on the same inputs through the FP32
// interpreter and fails if any output differs by more than tol.
func wantEquivalent(t *testing.T, before, after *compiler.Graph, inputs map[string]*compiler.Tensor, tol float64) {
	t.Helper()
	want, err := interp.Run(before, inputs, nil)
	if err != nil {
		t.Fatalf("running the original graph: %v", err)
	}
	got, err := interp.Run(after, inputs, nil)
	if err != nil {
		t.Fatalf("running the rewritten graph: %v\n%s", err, after.Text())
	}
	for _, o := range before.Outputs {
		w, g := want[o.Name], got[o.Name]
		if g == nil || !slices.Equal(w.Shape, g.Shape) {
			t.Fatalf("output %s: shape %v, want %v", o.Name, g.Shape, w.Shape)
		}
		worst := 0.0
		for i := range w.F32 {
			worst = max(worst, math.Abs(float64(w.F32[i]-g.F32[i])))
		}
		if worst > tol {
			t.Errorf("output %s differs by %.3g after the rewrite (tolerance %g)", o.Name, worst, tol)
		}
	}
}

// randomF32 is a deterministic tensor uniform in [-2, 2).
func randomF32(seed uint64, shape ...int64) *compiler.Tensor {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	t := compiler.NewTensor(compiler.Float32, shape...)
	for i := range t.F32 {
		t.F32[i] = float32(r.Float64()*4 - 2)
	}
	return t
}

// int64Tensor builds an i64 tensor from values.
func int64Tensor(shape []int64, v ...int64) *compiler.Tensor {
	t := compiler.NewTensor(compiler.Int64, shape...)
	copy(t.I64, v)
	return t
}

// applyPass clones g, runs p on the clone and returns it (the original is
// kept for equivalence checks).
func applyPass(t *testing.T, g *compiler.Graph, list ...Pass) *compiler.Graph {
	t.Helper()
	c := g.Clone()
	runPasses(t, c, list...)
	return c
}

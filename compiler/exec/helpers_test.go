package exec

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// parse parses IR text, infers shapes and verifies it.
func parse(t *testing.T, src string) *compiler.Graph {
	t.Helper()
	g, err := compiler.ParseText(src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := g.InferShapes(); err != nil {
		t.Fatalf("infer shapes: %v", err)
	}
	if err := g.Verify(); err != nil {
		t.Fatalf("verify: %v", err)
	}
	return g
}

// randF32 is a deterministic f32 tensor uniform in [lo, hi).
func randF32(seed uint64, lo, hi float32, shape ...int64) *compiler.Tensor {
	r := rand.New(rand.NewPCG(seed, 0xe8ec))
	t := compiler.NewTensor(compiler.Float32, shape...)
	for i := range t.F32 {
		t.F32[i] = lo + (hi-lo)*r.Float32()
	}
	return t
}

// variants is every qgemm variant this process can run, fastest first,
// then, on a CPU without AMX that can emulate it, the AMX variant with its
// tile instructions emulated (qgemm.EmulatedAMX), so that the AMX paths
// (fused pipelined epilogue, AMX block plans, INT8 attention on tiles) run
// end to end here too.
func variants() []qgemm.Variant { return qgemm.WithEmulatedAMX(qgemm.Variants()) }

// endVariants picks from variants the ones tests that cannot afford them
// all run: the fastest, the pure-Go one (the last of qgemm.Variants) and
// the emulated AMX one where there is one.
func endVariants() []qgemm.Variant {
	real := qgemm.Variants()
	ends := []qgemm.Variant{real[0]}
	if len(real) > 1 {
		ends = append(ends, real[len(real)-1])
	}
	if vs := variants(); len(vs) > len(real) {
		ends = append(ends, vs[len(vs)-1])
	}
	return ends
}

// compile compiles g for variant v (nil: default) with threads workers,
// after the passes that make its quantisation explicit (on a copy), as
// the INT8 pipeline leaves every graph it gives the engine.
func compile(t *testing.T, g *compiler.Graph, v *qgemm.Variant, threads int) *Program {
	t.Helper()
	p, err := Compile(explicitQuant(t, g), Options{Variant: v, Threads: threads})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

func run(t *testing.T, p *Program, in map[string]*compiler.Tensor) map[string]*compiler.Tensor {
	t.Helper()
	out, err := p.Run(in)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, p)
	}
	return out
}

func interpRun(t *testing.T, g *compiler.Graph, in map[string]*compiler.Tensor) map[string]*compiler.Tensor {
	t.Helper()
	out, err := interp.Run(g, in, &interp.Options{Threads: 2})
	if err != nil {
		t.Fatalf("interp: %v", err)
	}
	return out
}

// sameBits fails unless every output of got equals want bit for bit.
func sameBits(t *testing.T, what string, got, want map[string]*compiler.Tensor) {
	t.Helper()
	for name, w := range want {
		g := got[name]
		if g == nil || g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) {
			t.Fatalf("%s: output %s is %v, want %s%v", what, name, g, w.DType, w.Shape)
		}
		bad := 0
		for i := range w.F32 {
			if math.Float32bits(g.F32[i]) != math.Float32bits(w.F32[i]) {
				if bad < 3 {
					t.Errorf("%s: %s[%d] = %g, want %g", what, name, i, g.F32[i], w.F32[i])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Fatalf("%s: %s: %d of %d values differ", what, name, bad, len(w.F32))
		}
	}
}

// maxDiff is the largest |got - want| over all outputs, and the largest |want|.
func maxDiff(t *testing.T, got, want map[string]*compiler.Tensor) (diff, scale float64) {
	t.Helper()
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
	return diff, scale
}

// explicitQuant returns g after passes.FuseQLinearEpilogues, MaterializeQuantize,
// DeduplicateQuantize and WriteU8Directly (g itself when it has no
// QLinear), checked at the quantised level.
func explicitQuant(t *testing.T, g *compiler.Graph) *compiler.Graph {
	t.Helper()
	if !slices.ContainsFunc(g.Nodes, func(n *compiler.Node) bool { return n.Op == "sqc.QLinear" }) {
		return g
	}
	// A copy sharing g's initializers and nodes (the passes replace the
	// nodes they change): the tests compare what the engine holds with
	// g's tensors.
	q := g.Clone()
	q.Initializers = maps.Clone(g.Initializers)
	q.Nodes = slices.Clone(g.Nodes)
	list := []passes.Pass{passes.FuseQLinearEpilogues, passes.MaterializeQuantize, passes.DeduplicateQuantize, passes.WriteU8Directly}
	if err := passes.Run(q, list, passes.Options{CheckIR: true, Level: compiler.VerifyQuantized}); err != nil {
		t.Fatalf("quantisation passes: %v", err)
	}
	return q
}

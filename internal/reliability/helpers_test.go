package reliability

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/internal/demomodel"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/qgemm"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// The INT8 engine under test: the embedded demo model (sst2-distilbert-
// tiny, always available), quantised the way `sqc compile` does it:
// canonicalised, calibrated with the FP32 interpreter on a few sentences,
// SmoothQuant alpha 0.5, weights per channel, activations static or
// dynamic.

// sentences are inputs of different lengths (3 to 27 tokens with [CLS] and
// [SEP]); the first four calibrate.
var sentences = []string{
	"a gorgeous, witty, seductive movie.",
	"the plot is nothing but boilerplate clichés from start to finish.",
	"an utterly charming and hilarious film that reminded me why i love the movies.",
	"it's a dull, lifeless and instantly forgettable affair.",
	"fine.",
	"not bad at all, though the second half drags on and on without any real sense of where it wants to go.",
	"superb",
	"i have seen better, i have seen worse; this one sits comfortably in the middle.",
}

// demo is the demo model's directory and tokenizer.
type demo struct {
	dir string
	tok *tokenizer.Tokenizer
}

func loadDemo(t testing.TB) demo {
	t.Helper()
	dir, err := demomodel.Extract(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return demo{dir: dir, tok: tok}
}

// encode tokenizes texts.
func (d demo) encode(texts []string) [][]int64 {
	ids := make([][]int64, len(texts))
	for i, s := range texts {
		ids[i] = d.tok.Encode(s).InputIDs
	}
	return ids
}

// batch builds input_ids and attention_mask [len(ids), longest], right-
// padded with id 0 and mask 0.
func batch(ids [][]int64) map[string]*compiler.Tensor {
	seq := 0
	for _, s := range ids {
		seq = max(seq, len(s))
	}
	in := compiler.NewTensor(compiler.Int64, int64(len(ids)), int64(seq))
	mask := compiler.NewTensor(compiler.Int64, int64(len(ids)), int64(seq))
	for i, s := range ids {
		copy(in.I64[i*seq:], s)
		for j := range s {
			mask.I64[i*seq+j] = 1
		}
	}
	return map[string]*compiler.Tensor{"input_ids": in, "attention_mask": mask}
}

// quantizedDemo returns the demo model's INT8 graph with activations in
// act mode (compiler.QLinearStatic or QLinearDynamic).
func quantizedDemo(t testing.TB, d demo, act string) *compiler.Graph {
	t.Helper()
	g, err := frontend.Load(d.dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		t.Fatal(err)
	}
	ids := d.encode(sentences[:4])
	stats, err := calib.Collect(g, []calib.Batch{batch(ids[:2]), batch(ids[2:])}, calib.Options{})
	if err != nil {
		t.Fatal(err)
	}
	report := &passes.QuantReport{}
	opts := passes.QuantOptions{Alpha: 0.5, Act: act, Report: report}
	if err := passes.Run(g, passes.QuantPipeline(stats, opts), passes.Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	if len(report.Quantized) == 0 {
		t.Fatal("quantisation left no QLinear")
	}
	return g
}

// compileProgram compiles g for an ISA ceiling ("" for the default) and a
// worker count, closing the program when the test ends.
func compileProgram(t testing.TB, g *compiler.Graph, isa string, threads int) *exec.Program {
	t.Helper()
	p, err := exec.Compile(g, exec.Options{ISA: isa, Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// isaAvailable reports whether this process can run the named kernel
// family (pure Go always can).
func isaAvailable(name string) bool {
	isa, err := qgemm.ParseISA(name)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(qgemm.Variants(), func(v qgemm.Variant) bool { return v.ISA == isa })
}

// availableISAs lists the kernel families this process can run.
func availableISAs() []string {
	var names []string
	for _, v := range qgemm.Variants() {
		names = append(names, v.ISA.String())
	}
	return names
}

// diffBits returns a description of the first difference in bits between
// two output maps, or "" when every output is bitwise identical.
func diffBits(got, want map[string]*compiler.Tensor) string {
	if len(got) != len(want) {
		return "different output sets"
	}
	for name, w := range want {
		g := got[name]
		if g == nil || g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || len(g.F32) != len(w.F32) {
			return "output " + name + ": different dtype or shape"
		}
		for i := range w.F32 {
			if math.Float32bits(g.F32[i]) != math.Float32bits(w.F32[i]) {
				return fmt.Sprintf("output %s: element %d is %g, want %g", name, i, g.F32[i], w.F32[i])
			}
		}
	}
	return ""
}

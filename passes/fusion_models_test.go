package passes

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/internal/demomodel"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// Acceptance of the fusion passes on real models: the embedded demo model
// (always there) and ../shared's sst2-bert-mini (when present). After the
// whole pipeline — canonicalisation, SmoothQuant and quantisation, fusion —
// each encoder layer is one QKV QLinear feeding a packed Attention, the
// output projection with its residual, the FFN's two QLinears (GELU and
// residual in their epilogues) and two LayerNorms; and compiler/exec gives
// the bits of the unfused quantised graph.

// fusionPassNames are the passes this test switches off to get the
// unfused graph.
var fusionPassNames = []string{FuseQLinearEpilogues.Name, FuseQKV.Name, MergeSmoothedLayerNorms.Name}

// explicitQuantNames are the passes after the fusions that make the
// quantisation explicit (materialize_quantize.go and after), and the
// LayerNorm fusion that needs its u8 forms.
var explicitQuantNames = []string{MaterializeQuantize.Name, DeduplicateQuantize.Name, WriteU8Directly.Name, FuseLayerNormIntoQLinear.Name}

// precisionPassNames are the passes that change what a step computes,
// within its precision, and so its bits: not fusion, which keeps them.
var precisionPassNames = []string{ShortenGeluForU8.Name}

// without is list less the named passes.
func without(list []Pass, names []string) []Pass {
	var out []Pass
	for _, p := range list {
		if !slices.Contains(names, p.Name) {
			out = append(out, p)
		}
	}
	return out
}

// fusionModel is a canonical FP32 graph with calibration batches and
// test inputs.
type fusionModel struct {
	g      *compiler.Graph
	calib  []calib.Batch
	inputs []map[string]*compiler.Tensor
}

func demoFusionModel(t *testing.T) *fusionModel {
	t.Helper()
	dir, err := demomodel.Extract(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := loadCanonical(t, dir)
	// Random token ids, right-padded: the embedded model has no reference
	// inputs beside it, and the comparison is exec against exec.
	batch := func(seed uint64, lens ...int) map[string]*compiler.Tensor {
		rng := rand.New(rand.NewPCG(seed, 7))
		seq := slices.Max(lens)
		ids := compiler.NewTensor(compiler.Int64, int64(len(lens)), int64(seq))
		mask := compiler.NewTensor(compiler.Int64, int64(len(lens)), int64(seq))
		for b, n := range lens {
			for j := range n {
				ids.I64[b*seq+j], mask.I64[b*seq+j] = 1000+rng.Int64N(20000), 1
			}
		}
		return map[string]*compiler.Tensor{"input_ids": ids, "attention_mask": mask}
	}
	return &fusionModel{
		g:      g,
		calib:  []calib.Batch{batch(1, 12, 9, 12, 5), batch(2, 7, 7)},
		inputs: []map[string]*compiler.Tensor{batch(3, 11, 4, 8), batch(4, 1)},
	}
}

func sharedFusionModel(t *testing.T, name string) *fusionModel {
	t.Helper()
	dir := testmodels.ModelDir(t, name)
	g := loadCanonical(t, dir)
	ref, err := testmodels.LoadReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := &fusionModel{g: g}
	for lo := 0; lo < 48; lo += 16 {
		in, err := testmodels.Inputs(g, ref.Examples[lo:lo+16])
		if err != nil {
			t.Fatal(err)
		}
		if lo < 32 {
			m.calib = append(m.calib, in)
		} else {
			m.inputs = append(m.inputs, in)
		}
	}
	return m
}

func loadCanonical(t *testing.T, dir string) *compiler.Graph {
	t.Helper()
	g, err := frontend.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := RunPipeline(g, Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestFusionOnModels(t *testing.T) {
	models := map[string]func(*testing.T) *fusionModel{
		demomodel.Name:   demoFusionModel,
		"sst2-bert-mini": func(t *testing.T) *fusionModel { return sharedFusionModel(t, "sst2-bert-mini") },
	}
	for _, name := range []string{demomodel.Name, "sst2-bert-mini"} {
		t.Run(name, func(t *testing.T) {
			m := models[name](t)
			// The FP32 graph has no QLinear: fusion leaves it as it is.
			if runPasses(t, m.g.Clone(), FuseQLinearEpilogues, FuseQKV, MergeSmoothedLayerNorms) {
				t.Error("fusion changed the FP32 graph")
			}
			stats, err := calib.Collect(m.g, m.calib, calib.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, act := range []string{compiler.QLinearStatic, compiler.QLinearDynamic} {
				t.Run(act, func(t *testing.T) {
					// A fresh list per run: SmoothQuant records statistics in
					// the copy its list shares.
					list := func() []Pass { return QuantPipeline(stats, QuantOptions{Alpha: 0.5, Act: act}) }
					unfused := m.g.Clone()
					runPasses(t, unfused, without(list(), slices.Concat(fusionPassNames, explicitQuantNames, precisionPassNames))...)
					fused := unfused.Clone()
					runPasses(t, fused, FuseQLinearEpilogues, FuseQKV, MergeSmoothedLayerNorms, EliminateDeadNodes)
					explicit := fused.Clone()
					runPasses(t, explicit, MaterializeQuantize, DeduplicateQuantize, WriteU8Directly, FuseLayerNormIntoQLinear, EliminateDeadNodes)
					// QuantPipeline as registered runs the same fusions, makes
					// the quantisation explicit, and shortens the GELUs that
					// write u8 (which commutes with FuseLayerNormIntoQLinear:
					// no residual QLinear has a GELU).
					shortened := explicit.Clone()
					shortenedGelu := runPasses(t, shortened, ShortenGeluForU8)
					whole := m.g.Clone()
					runPasses(t, whole, list()...)
					if whole.Text() != shortened.Text() {
						t.Error("QuantPipeline does not end with the fusion passes, the explicit quantisation and ShortenGeluForU8")
					}
					if shortenedGelu != (act == compiler.QLinearStatic) {
						t.Errorf("ShortenGeluForU8 changed the graph: %v, want %v (static quantisation writes the GELUs' u8 outputs)", shortenedGelu, act == compiler.QLinearStatic)
					}
					before, after := encoderOps(t, unfused), encoderOps(t, fused)
					t.Logf("encoder ops before fusion: %s", histogramString(before))
					t.Logf("encoder ops after fusion:  %s", histogramString(after))
					checkFusedEncoder(t, fused, after)
					pu, pf, ps := execProgram(t, unfused), execProgram(t, explicit), execProgram(t, shortened)
					for i, in := range m.inputs {
						want := execRun(t, pu, in)
						wantSameBits(t, fmt.Sprintf("%s logits, batch %d", act, i), execRun(t, pf, in), want)
						// The short GELU moves a u8 code by one at most,
						// where the value lies within 1% of a step of a
						// rounding boundary.
						if d := maxRelDiff(t, execRun(t, ps, in), want); d > 1e-2 {
							t.Errorf("%s logits, batch %d: the short GELU moved them by %.3g (relative), want at most 1e-2", act, i, d)
						}
					}
				})
			}
		})
	}
}

// encoderOps is the op histogram of the nodes from the first to the last
// LayerNorm (LayerNormalization or sqc.LayerNormDual).
func encoderOps(t *testing.T, g *compiler.Graph) map[string]int {
	t.Helper()
	first, last := -1, -1
	for i, n := range g.Nodes {
		if n.Op == "LayerNormalization" || n.Op == opLayerNormDual {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		t.Fatal("no LayerNormalization")
	}
	h := map[string]int{}
	for _, n := range g.Nodes[first : last+1] {
		h[n.Op]++
	}
	return h
}

// checkFusedEncoder asserts the fused encoder's shape: per layer one
// packed Attention reading one QLinear of N = 3 x hidden, four QLinears in
// all, two LayerNorms (each with its smoothed twin merged into it),
// nothing standalone left to fuse.
func checkFusedEncoder(t *testing.T, g *compiler.Graph, ops map[string]int) {
	t.Helper()
	for _, op := range []string{"Add", "sqc.Gelu", "Softmax", "Erf", "ReduceMean", "sqc.Linear"} {
		if ops[op] > 0 {
			t.Errorf("%d standalone %s left in the encoder", ops[op], op)
		}
	}
	layers := ops["sqc.Attention"]
	if layers == 0 {
		t.Fatal("no attention in the encoder")
	}
	// LayerNorms: the embeddings' and two per layer, those whose output
	// is also the residual stream merged with SmoothQuant's smoothed
	// copy; the mask is built where the exporter put it.
	for op, n := range ops {
		switch op {
		case opQLinear, "sqc.Attention", "LayerNormalization", opLayerNormDual, "sqc.AttentionMask":
		default:
			t.Errorf("%d %s in the fused encoder", n, op)
		}
	}
	if ops[opQLinear] != 4*layers || ops["LayerNormalization"]+ops[opLayerNormDual] != 2*layers+1 {
		t.Errorf("encoder ops %s, want per layer 4 QLinear, 1 Attention, 2 LayerNorms (and the embeddings' one)", histogramString(ops))
	}
	lnInputs := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Op == "LayerNormalization" || n.Op == opLayerNormDual {
			if lnInputs[n.Inputs[0]] {
				t.Errorf("two LayerNorms of %s left unmerged", n.Inputs[0])
			}
			lnInputs[n.Inputs[0]] = true
		}
	}
	ix := newIndex(g)
	for _, n := range g.Nodes {
		if n.Op != "sqc.Attention" {
			continue
		}
		qkv := ix.producedBy(n.Inputs[0], opQLinear)
		if !compiler.AttentionPacked(n) || qkv == nil {
			t.Errorf("attention %s does not read one packed QKV projection", n.Name)
			continue
		}
		hidden := valueInfo(g, n.Outputs[0]).Shape[2].Size
		if w := g.Initializers[qkv.Inputs[1]]; w.Shape[1] != 3*hidden {
			t.Errorf("%s: QKV width %d, want 3 x %d", qkv.Name, w.Shape[1], hidden)
		}
	}
}

package exec

import (
	"math"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
)

// The shared SST-2 models, canonicalised: in FP32 (sqc.Linear run by
// nn.LinearF32) against PyTorch's logits, and quantised by a naive
// test-only quantiser (max-abs calibration, per-channel weights) through
// the real INT8 kernels against the interpreter's QLinear reference.

const (
	modelSentences = 32
	modelBatch     = 16
)

func canonicalModel(t testing.TB, name string) (*compiler.Graph, *testmodels.Reference) {
	t.Helper()
	dir := testmodels.ModelDir(t, name)
	g, err := onnx.Load(dir + "/model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		t.Fatal(err)
	}
	ref, err := testmodels.LoadReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	return g, ref
}

// batches runs f on the first modelSentences dev examples in batches.
func batches(t *testing.T, g *compiler.Graph, ref *testmodels.Reference, f func(lo int, in map[string]*compiler.Tensor)) {
	for lo := 0; lo < modelSentences; lo += modelBatch {
		in, err := testmodels.Inputs(g, ref.Examples[lo:lo+modelBatch])
		if err != nil {
			t.Fatal(err)
		}
		f(lo, in)
	}
}

func logitRows(t *compiler.Tensor) [][]float32 {
	rows := make([][]float32, t.Shape[0])
	for i := range rows {
		rows[i] = t.F32[i*2 : i*2+2]
	}
	return rows
}

func TestSharedModelsFP32(t *testing.T) {
	for _, name := range testmodels.Models {
		t.Run(name, func(t *testing.T) {
			g, ref := canonicalModel(t, name)
			p := compile(t, g, nil, 0)
			it, err := interp.New(g)
			if err != nil {
				t.Fatal(err)
			}
			worstRef, worstInterp := 0.0, 0.0
			batches(t, g, ref, func(lo int, in map[string]*compiler.Tensor) {
				got := run(t, p, in)
				want, err := it.Run(in, nil)
				if err != nil {
					t.Fatal(err)
				}
				d, _ := maxDiff(t, got, want)
				worstInterp = max(worstInterp, d)
				worstRef = max(worstRef, testmodels.MaxAbsDiff(logitRows(got[g.Outputs[0].Name]), ref.Logits[lo:lo+modelBatch]))
			})
			t.Logf("max |logit| difference: %.3g vs the interpreter, %.3g vs PyTorch", worstInterp, worstRef)
			if worstInterp > 1e-4 || worstRef > 1e-4 {
				t.Errorf("FP32 logits differ by %.3g from the interpreter and %.3g from PyTorch, want <= 1e-4", worstInterp, worstRef)
			}
		})
	}
}

func TestSharedModelsINT8(t *testing.T) {
	for _, name := range testmodels.Models {
		t.Run(name, func(t *testing.T) {
			g, ref := canonicalModel(t, name)
			q := quantizeForTest(t, g, ref)
			it, err := interp.New(q)
			if err != nil {
				t.Fatal(err)
			}
			vs := endVariants()
			var progs []*Program
			for i := range vs {
				progs = append(progs, compile(t, q, &vs[i], 0))
			}
			worst, agree, n := 0.0, 0, 0
			batches(t, q, ref, func(lo int, in map[string]*compiler.Tensor) {
				want, err := it.Run(in, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := run(t, progs[0], in)
				for _, p := range progs[1:] {
					sameBits(t, p.Engine().ISA().String()+" vs "+progs[0].Engine().ISA().String(), run(t, p, in), got)
				}
				d, _ := maxDiff(t, got, want)
				worst = max(worst, d)
				for i, row := range logitRows(got[q.Outputs[0].Name]) {
					if testmodels.Argmax(row) == testmodels.Argmax(ref.Logits[lo+i]) {
						agree++
					}
					n++
				}
			})
			t.Logf("%s: INT8 (%s) vs interpreter QLinear reference: max |logit diff| %.3g; argmax agrees with FP32 PyTorch on %d of %d", name, progs[0].Engine().Describe(), worst, agree, n)
			if worst > 0.01 {
				t.Errorf("INT8 logits differ from the interpreter's reference by %.3g, want <= 0.01", worst)
			}
			if agree*10 < n*9 {
				t.Errorf("INT8 argmax agrees with FP32 on only %d of %d sentences", agree, n)
			}
		})
	}
}

// quantizeForTest replaces the encoder's sqc.Linear nodes (between the
// first and last LayerNormalization) with sqc.QLinear: weights symmetric
// per output channel, activations static u8 (zero point 128, scale
// max|x|/127 over the first dev batch), except the FFN's second Linear
// (after sqc.Gelu), which is dynamic.
func quantizeForTest(t testing.TB, g *compiler.Graph, ref *testmodels.Reference) *compiler.Graph {
	t.Helper()
	q := g.Clone()
	first, last := -1, -1
	for i, n := range q.Nodes {
		if n.Op == "LayerNormalization" {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	targets := map[string]bool{}
	for _, n := range q.Nodes[first:last] {
		if n.Op == "sqc.Linear" {
			targets[n.Inputs[0]] = true
		}
	}
	maxAbs := map[string]float64{}
	in, err := testmodels.Inputs(g, ref.Examples[:modelBatch])
	if err != nil {
		t.Fatal(err)
	}
	observe := func(name string, v *compiler.Tensor) error {
		if targets[name] {
			for _, x := range v.F32 {
				maxAbs[name] = max(maxAbs[name], math.Abs(float64(x)))
			}
		}
		return nil
	}
	if _, err := interp.Run(g, in, &interp.Options{OnValue: observe}); err != nil {
		t.Fatal(err)
	}
	producer := q.Producers()
	for _, n := range q.Nodes[first:last] {
		if n.Op != "sqc.Linear" {
			continue
		}
		w := q.Initializers[n.Inputs[1]]
		k, cols := int(w.Shape[0]), int(w.Shape[1])
		wq := compiler.NewTensor(compiler.Int8, w.Shape...)
		ws := compiler.NewTensor(compiler.Float32, int64(cols))
		for j := range cols {
			m := 0.0
			for p := range k {
				m = max(m, math.Abs(float64(w.F32[p*cols+j])))
			}
			ws.F32[j] = float32(m / 127)
			for p := range k {
				wq.I8[p*cols+j] = int8(math.RoundToEven(float64(w.F32[p*cols+j]) / float64(ws.F32[j])))
			}
		}
		q.Initializers[n.Name+"/w_i8"], q.Initializers[n.Name+"/w_scale"] = wq, ws
		bias := ""
		if len(n.Inputs) > 2 {
			bias = n.Inputs[2]
		}
		x := n.Inputs[0]
		n.Op = "sqc.QLinear"
		n.Inputs = []string{x, n.Name + "/w_i8", n.Name + "/w_scale", bias}
		if p := producer[x]; p != nil && p.Op == "sqc.Gelu" {
			n.Attrs = map[string]compiler.Attr{"act_mode": {Kind: compiler.AttrString, String: "dynamic"}}
		} else {
			n.Attrs = map[string]compiler.Attr{
				"act_scale":      {Kind: compiler.AttrFloat, Float: float32(maxAbs[x] / 127)},
				"act_zero_point": {Kind: compiler.AttrInt, Int: 128},
			}
		}
	}
	if err := q.Verify(); err != nil {
		t.Fatal(err)
	}
	return q
}

// BenchmarkSharedModelINT8 runs BERT-mini quantised on 16 dev sentences
// per iteration with the fastest variant.
func BenchmarkSharedModelINT8(b *testing.B) {
	g, ref := canonicalModel(b, testmodels.BertMini)
	q := quantizeForTest(b, g, ref)
	p, err := Compile(q, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	in, err := testmodels.Inputs(q, ref.Examples[:modelBatch])
	if err != nil {
		b.Fatal(err)
	}
	b.Log(p.Engine().Describe())
	for b.Loop() {
		if _, err := p.Run(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(modelBatch*b.N)/b.Elapsed().Seconds(), "sentences/s")
}

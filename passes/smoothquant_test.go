package passes

import (
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// encoderBlock is one post-LN BERT layer in canonical form: the LayerNorm
// %h0 feeds Q/K/V and the residual, %h1 feeds the FFN and the residual.
const encoderBlock = `graph "block" opset 17 {
  input %x: f32[batch, sequence, 8]
  input %attention_mask: i64[batch, sequence]
  init %g0: f32[8] = elided("sha256:00000000000000a0")
  init %b0: f32[8] = elided("sha256:00000000000000a1")
  init %wq: f32[8, 8] = elided("sha256:00000000000000a2")
  init %bq: f32[8] = elided("sha256:00000000000000a3")
  init %wk: f32[8, 8] = elided("sha256:00000000000000a4")
  init %bk: f32[8] = elided("sha256:00000000000000a5")
  init %wv: f32[8, 8] = elided("sha256:00000000000000a6")
  init %bv: f32[8] = elided("sha256:00000000000000a7")
  init %wo: f32[8, 8] = elided("sha256:00000000000000a8")
  init %bo: f32[8] = elided("sha256:00000000000000a9")
  init %g1: f32[8] = elided("sha256:00000000000000aa")
  init %b1: f32[8] = elided("sha256:00000000000000ab")
  init %w1: f32[8, 16] = elided("sha256:00000000000000ac")
  init %bf1: f32[16] = elided("sha256:00000000000000ad")
  init %w2: f32[16, 8] = elided("sha256:00000000000000ae")
  init %bf2: f32[8] = elided("sha256:00000000000000af")
  %m = sqc.AttentionMask(%attention_mask)
  %h0 = LayerNormalization(%x, %g0, %b0) {axis=-1, epsilon=1e-12}
  %q = sqc.Linear(%h0, %wq, %bq) @q
  %k = sqc.Linear(%h0, %wk, %bk) @k
  %v = sqc.Linear(%h0, %wv, %bv) @v
  %a = sqc.Attention(%q, %k, %v, %m) {heads=2, scale=0.5}
  %o = sqc.Linear(%a, %wo, %bo) @out
  %r1 = Add(%o, %h0)
  %h1 = LayerNormalization(%r1, %g1, %b1) {axis=-1, epsilon=1e-12}
  %f1 = sqc.Linear(%h1, %w1, %bf1) @ffn1
  %ge = sqc.Gelu(%f1)
  %f2 = sqc.Linear(%ge, %w2, %bf2) @ffn2
  %r2 = Add(%f2, %h1)
  output %r2: f32[batch, sequence, 8]
}`

// outlierBlock parses encoderBlock and gives its LayerNorms an outlier
// channel, as trained transformers have, so smoothing has work to do.
func outlierBlock(t *testing.T) *compiler.Graph {
	t.Helper()
	g := parseGraph(t, encoderBlock)
	g.Initializers["g0"].F32[3] = 12
	g.Initializers["b0"].F32[5] = -6
	g.Initializers["g1"].F32[6] = 15
	return g
}

// blockBatches makes n calibration batches of 3 sequences with padding.
func blockBatches(seed uint64, n int) []calib.Batch {
	r := rand.New(rand.NewPCG(seed, 7))
	var out []calib.Batch
	for range n {
		lengths := []int{5, 2 + r.IntN(4), 1 + r.IntN(5)}
		x := randomF32(r.Uint64(), 3, 5, 8)
		m := compiler.NewTensor(compiler.Int64, 3, 5)
		for b, l := range lengths {
			for s := range l {
				m.I64[b*5+s] = 1
			}
		}
		out = append(out, calib.Batch{"x": x, "attention_mask": m})
	}
	return out
}

func collect(t *testing.T, g *compiler.Graph, batches []calib.Batch, opts calib.Options) *calib.Stats {
	t.Helper()
	stats, err := calib.Collect(g, batches, opts)
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

// wantRelativelyEqual runs both graphs on the batches and fails if any
// output differs by more than tol relative to the output's largest value.
func wantRelativelyEqual(t *testing.T, before, after *compiler.Graph, batches []calib.Batch, tol float64) {
	t.Helper()
	worst := 0.0
	for _, b := range batches {
		want, err := interp.Run(before, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := interp.Run(after, b, nil)
		if err != nil {
			t.Fatalf("%v\n%s", err, after.Text())
		}
		for _, o := range before.Outputs {
			worst = max(worst, relDiff(got[o.Name].F32, want[o.Name].F32))
		}
	}
	if worst > tol {
		t.Errorf("outputs differ by %.3g relative after the rewrite, want <= %g", worst, tol)
	}
}

// relDiff is max|a - b| / max|b|.
func relDiff(a, b []float32) float64 {
	var d, m float64
	for i := range b {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
		m = max(m, math.Abs(float64(b[i])))
	}
	return d / max(m, math.SmallestNonzeroFloat64)
}

func opsOf(g *compiler.Graph, op string) []*compiler.Node {
	var out []*compiler.Node
	for _, n := range g.Nodes {
		if n.Op == op {
			out = append(out, n)
		}
	}
	return out
}

func nodeNamed(g *compiler.Graph, name string) *compiler.Node {
	for _, n := range g.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

func TestSmoothQuantFoldsIntoProducers(t *testing.T) {
	g := outlierBlock(t)
	batches := blockBatches(1, 4)
	stats := collect(t, g, batches, calib.Options{})
	var rep QuantReport
	after := g.Clone()
	runPasses(t, after, SmoothQuant(stats.Clone(), QuantOptions{Alpha: 0.5, Report: &rep}))

	// Both LayerNorms feed a residual too, so each gets a smoothed twin;
	// nothing else is added.
	wantOps(t, after, map[string]int{"LayerNormalization": 4, opLinear: 6, "sqc.Attention": 1, "sqc.AttentionMask": 1, "sqc.Gelu": 1, "Add": 2})
	q, k, v, ffn1 := nodeNamed(after, "q"), nodeNamed(after, "k"), nodeNamed(after, "v"), nodeNamed(after, "ffn1")
	if q.Inputs[0] == "h0" || q.Inputs[0] != k.Inputs[0] || k.Inputs[0] != v.Inputs[0] {
		t.Errorf("Q/K/V read %s, %s, %s: want one smoothed LayerNorm output", q.Inputs[0], k.Inputs[0], v.Inputs[0])
	}
	if ffn1.Inputs[0] == "h1" {
		t.Error("the FFN input was not smoothed")
	}
	if r1 := opsOf(after, "Add")[0]; !slices.Contains(r1.Inputs, "h0") {
		t.Errorf("the residual reads %v, want the unsmoothed h0", r1.Inputs)
	}
	if nodeNamed(after, "out").Inputs[1] == "wo" || v.Inputs[2] == "bv" {
		t.Error("the attention output projection was not smoothed into V's columns")
	}
	if nodeNamed(after, "ffn2").Inputs[1] != "w2" {
		t.Error("the FFN output projection was smoothed, but no producer can absorb its scale")
	}
	wantRelativelyEqual(t, g, after, blockBatches(2, 3), 1e-5)

	// The report: three smoothed groups and the GELU one left alone.
	var absorbers []string
	for _, r := range rep.Smooth {
		absorbers = append(absorbers, r.Absorber)
		if r.Smoothed && !(r.MinScale < r.MaxScale) {
			t.Errorf("group %v: scale range [%g, %g]", r.Nodes, r.MinScale, r.MaxScale)
		}
	}
	if want := []string{"LayerNorm", "V projection", "LayerNorm", "none"}; !slices.Equal(absorbers, want) {
		t.Errorf("absorbers %v, want %v", absorbers, want)
	}
}

func TestSmoothQuantStatsFollowTheRewrite(t *testing.T) {
	g := outlierBlock(t)
	batches := blockBatches(3, 3)
	stats := collect(t, g, batches, calib.Options{SampleRows: 10})
	work := stats.Clone()
	after := g.Clone()
	runPasses(t, after, SmoothQuant(work, QuantOptions{Alpha: 0.8}))
	// What SmoothQuant recorded for the smoothed activations must be what
	// calibrating the smoothed graph measures.
	fresh := collect(t, after, batches, calib.Options{SampleRows: 10})
	for _, name := range calib.Targets(after) {
		got, want := work.Values[name], fresh.Values[name]
		if got == nil {
			t.Errorf("no statistics recorded for %q", name)
			continue
		}
		if d := relDiff(got.ChannelMax, want.ChannelMax); d > 1e-5 {
			t.Errorf("%s: recorded channel maxima differ by %.3g from recalibration", name, d)
		}
		if d := relDiff(got.ChannelMin, want.ChannelMin); d > 1e-5 {
			t.Errorf("%s: recorded channel minima differ by %.3g", name, d)
		}
		if d := relDiff(got.Rows, want.Rows); d > 1e-5 {
			t.Errorf("%s: recorded row sample differs by %.3g", name, d)
		}
	}
	if len(stats.Values) != len(calib.Targets(g)) {
		t.Errorf("the caller's statistics were modified: %d values", len(stats.Values))
	}
	// Smoothing flattened the outlier channel of the LayerNorm output.
	h0 := nodeNamed(after, "q").Inputs[0]
	ratio := func(v *calib.ValueStats) float32 {
		a := v.AbsMax()
		return slices.Max(a) / slices.Min(a)
	}
	if before, now := ratio(stats.Values["h0"]), ratio(work.Values[h0]); now >= before/2 {
		t.Errorf("max/min channel range %.3g after smoothing, %.3g before: outliers not migrated", now, before)
	}
}

func TestSmoothQuantUnsharedLayerNormIsRewrittenInPlace(t *testing.T) {
	g := parseGraph(t, `graph "ln-linear" opset 17 {
  input %x: f32[batch, 6]
  init %g: f32[6] = [1, 2, 30, 0.5, 1, 1]
  init %b: f32[6] = [0, 0.1, 5, 0, -1, 0]
  init %w: f32[6, 4] = elided("sha256:00000000000000b0")
  init %w2: f32[6, 3] = elided("sha256:00000000000000b1")
  %h = LayerNormalization(%x, %g, %b) {axis=-1}
  %y = sqc.Linear(%h, %w) @a
  %z = sqc.Linear(%h, %w2) @b
  output %y: f32[batch, 4]
  output %z: f32[batch, 3]
}`)
	batches := []calib.Batch{{"x": randomF32(5, 7, 6)}, {"x": randomF32(6, 3, 6)}}
	stats := collect(t, g, batches, calib.Options{})
	// Rank-2 inputs are the classifier head, FP32 by default, and a group
	// with no quantised Linear is not smoothed.
	if runPasses(t, g.Clone(), SmoothQuant(stats.Clone(), QuantOptions{Alpha: 0.5})) {
		t.Error("smoothed a group of FP32 head Linears")
	}
	// The same with a sequence axis: the LayerNorm feeds only the group,
	// so its gamma and beta are rewritten, no twin is made.
	g3 := parseGraph(t, strings.NewReplacer("batch, 6", "batch, 2, 6", "batch, 4", "batch, 2, 4", "batch, 3", "batch, 2, 3").Replace(g.Text()))
	batches = []calib.Batch{{"x": randomF32(5, 7, 2, 6)}}
	stats = collect(t, g3, batches, calib.Options{})
	after := g3.Clone()
	runPasses(t, after, SmoothQuant(stats.Clone(), QuantOptions{Alpha: 0.5}))
	wantOps(t, after, map[string]int{"LayerNormalization": 1, opLinear: 2})
	if ln := opsOf(after, "LayerNormalization")[0]; ln.Inputs[1] == "g" || ln.Inputs[2] == "b" {
		t.Errorf("LayerNorm still reads %v", ln.Inputs)
	}
	wantRelativelyEqual(t, g3, after, []calib.Batch{{"x": randomF32(8, 4, 2, 6)}}, 1e-5)
}

func TestSmoothQuantAlphaZeroIsOff(t *testing.T) {
	g := outlierBlock(t)
	if runPasses(t, g, SmoothQuant(nil, QuantOptions{Alpha: 0})) {
		t.Error("alpha 0 changed the graph")
	}
}

func TestSmoothQuantAutoAlpha(t *testing.T) {
	g := outlierBlock(t)
	batches := blockBatches(4, 6)
	stats := collect(t, g, batches, calib.Options{SampleRows: 64})
	k := testKernels(t)
	for _, act := range []string{compiler.QLinearStatic, compiler.QLinearDynamic} {
		t.Run(act, func(t *testing.T) {
			var rep QuantReport
			after := g.Clone()
			runPasses(t, after, SmoothQuant(stats.Clone(), QuantOptions{AutoAlpha: true, Act: act, Report: &rep, Kernels: k}))
			wantRelativelyEqual(t, g, after, blockBatches(5, 2), 1e-5)
			picked := map[string]float64{}
			for _, r := range rep.Smooth {
				if r.Absorber != "none" {
					picked[r.Input] = r.Alpha
				}
			}
			if len(picked) != 3 {
				t.Fatalf("report %+v: want three searched groups", rep.Smooth)
			}
			// With a 12x and a 15x outlier channel, per-tensor static
			// quantisation of the LayerNorm outputs is far better smoothed.
			if act == compiler.QLinearStatic && (picked["h0"] == 0 || picked["h1"] == 0) {
				t.Errorf("auto alpha left an outlier LayerNorm unsmoothed: %v", picked)
			}
			t.Logf("picked alphas: %v", picked)
		})
	}
	if _, err := SmoothQuant(stats.Clone(), QuantOptions{AutoAlpha: true, AlphaGrid: []float64{0.5, 2}, Kernels: k}).Run(g.Clone()); !errors.Is(err, compiler.ErrInvalidRequest) {
		t.Errorf("grid value 2: err = %v", err)
	}
	noRows := collect(t, g, batches, calib.Options{})
	if _, err := SmoothQuant(noRows, QuantOptions{AutoAlpha: true, Kernels: k}).Run(g.Clone()); err == nil || !strings.Contains(err.Error(), "SampleRows") {
		t.Errorf("auto alpha without samples: err = %v", err)
	}
	if _, err := SmoothQuant(stats.Clone(), QuantOptions{AutoAlpha: true}).Run(g.Clone()); !errors.Is(err, compiler.ErrInvalidRequest) || !strings.Contains(err.Error(), "Kernels") {
		t.Errorf("auto alpha without kernels: err = %v", err)
	}
}

// testKernels are kernels for the auto-alpha search, closed when the test
// ends.
func testKernels(t *testing.T) *Kernels {
	t.Helper()
	k, err := NewKernels(2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}

// TestSmoothQuantSearchScoresRealINT8 checks the search's score against
// an independent float64 simulation of the INT8 Linear for one alpha.
func TestSmoothQuantSearchScoresRealINT8(t *testing.T) {
	g := outlierBlock(t)
	stats := collect(t, g, blockBatches(6, 4), calib.Options{SampleRows: 32})
	grp := smoothGroups(g, func(*compiler.Node) bool { return false })[0]
	xs := stats.Values[grp.x]
	kern := testKernels(t)
	s := &searcher{pool: kern.Pool, gemm: kern.GEMM}
	scales := smoothScales(g, grp.linears, xs.AbsMax(), 0.5)
	a, q, err := s.quantizeRows(xs, scales, compiler.QLinearStatic)
	if err != nil {
		t.Fatal(err)
	}
	w := g.Initializers[grp.linears[0].Inputs[1]]
	rows, k, n := xs.SampleRows(), 8, 8
	ref := make([]float32, rows*n)
	for i := range rows {
		for j := range n {
			var acc float64
			for c := range k {
				acc += float64(xs.Rows[i*k+c]) * float64(w.F32[c*n+j])
			}
			ref[i*n+j] = float32(acc)
		}
	}
	got, err := s.linearError(a, q, w, scales, ref)
	if err != nil {
		t.Fatal(err)
	}
	// Simulate: smoothed rows quantised with the static range, smoothed
	// weights per column, products in float64.
	ws := w.Clone()
	scaleRows(ws, scales)
	wq, wscale := QuantizeWeights(ws)
	var want float64
	for i := range rows {
		for j := range n {
			var acc float64
			for c := range k {
				xq := float64(a[i*q.lda+c]) - float64(q.zeroPoint)
				acc += xq * float64(wq.I8[c*n+j])
			}
			d := acc*float64(q.scale)*float64(wscale.F32[j]) - float64(ref[i*n+j])
			want += d * d
		}
	}
	if math.Abs(got-want) > 1e-3*want {
		t.Errorf("search error %g, simulation %g", got, want)
	}
	// Quantised rows decode to the smoothed rows within half a step.
	for i := range rows {
		for c := range k {
			x := float64(xs.Rows[i*k+c]) / float64(scales[c])
			dec := (float64(a[i*q.lda+c]) - float64(q.zeroPoint)) * float64(q.scale)
			if math.Abs(dec-x) > 0.5001*float64(q.scale) {
				t.Fatalf("row %d channel %d: %g quantised to %g (step %g)", i, c, x, dec, q.scale)
			}
		}
	}
}

func TestSmoothQuantErrors(t *testing.T) {
	g := outlierBlock(t)
	if _, err := SmoothQuant(nil, QuantOptions{Alpha: 0.5}).Run(g.Clone()); !errors.Is(err, compiler.ErrInvalidRequest) {
		t.Errorf("no statistics: %v", err)
	}
	if _, err := SmoothQuant(&calib.Stats{Values: map[string]*calib.ValueStats{}}, QuantOptions{Alpha: 0.5}).Run(g.Clone()); !errors.Is(err, compiler.ErrMissingTensor) {
		t.Errorf("statistics without the activation: %v", err)
	}
	if _, err := SmoothQuant(&calib.Stats{}, QuantOptions{Alpha: 1.5}).Run(g.Clone()); !errors.Is(err, compiler.ErrInvalidRequest) {
		t.Errorf("alpha 1.5: %v", err)
	}
	if _, err := SmoothQuant(&calib.Stats{}, QuantOptions{Alpha: 0.5, KeepFP32: "("}).Run(g.Clone()); !errors.Is(err, compiler.ErrInvalidRequest) {
		t.Errorf("bad pattern: %v", err)
	}
}

// sharedCalibration tokenises the first n sentences of SST-2's train split
// (never the dev sentences the tests evaluate on) into length-sorted
// batches for g.
func sharedCalibration(t *testing.T, g *compiler.Graph, modelDir string, n int) []calib.Batch {
	t.Helper()
	shared, _ := testmodels.SharedDir()
	exs, err := dataio.ReadTexts(filepath.Join(shared, "data", "glue-sst2", "train.tsv"))
	if err != nil {
		t.Skipf("skipping: SST-2 train split not found: %v", err)
	}
	tok, err := tokenizer.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := infer.Encode(tok, exs[:n])
	if err != nil {
		t.Fatal(err)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(enc[a].IDs) - len(enc[b].IDs) })
	var out []calib.Batch
	for lo := 0; lo < n; lo += 32 {
		feeds, _, err := infer.MakeBatch(g, enc, order[lo:min(lo+32, n)])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, feeds)
	}
	return out
}

// TestSmoothQuantSharedModelsComputeTheSameFunction: on both SST-2 models
// the smoothed FP32 graph gives the original logits within 1e-5 relative,
// for a fixed alpha and for the searched ones.
func TestSmoothQuantSharedModelsComputeTheSameFunction(t *testing.T) {
	for _, name := range testmodels.Models {
		t.Run(name, func(t *testing.T) {
			dir := testmodels.ModelDir(t, name)
			g, err := onnx.Load(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			if err := RunPipeline(g, Options{CheckIR: true}); err != nil {
				t.Fatal(err)
			}
			stats := collect(t, g, sharedCalibration(t, g, dir, 64), calib.Options{SampleRows: 128})
			ref, err := testmodels.LoadReference(dir)
			if err != nil {
				t.Fatal(err)
			}
			var dev []calib.Batch
			for lo := 0; lo < 64; lo += 16 {
				in, err := testmodels.Inputs(g, ref.Examples[lo:lo+16])
				if err != nil {
					t.Fatal(err)
				}
				dev = append(dev, in)
			}
			for _, opts := range []QuantOptions{{Alpha: 0.5}, {AutoAlpha: true, Kernels: testKernels(t)}} {
				var rep QuantReport
				opts.Report = &rep
				after := g.Clone()
				runPasses(t, after, SmoothQuant(stats.Clone(), opts))
				smoothed := 0
				for _, r := range rep.Smooth {
					if r.Smoothed {
						smoothed++
					}
				}
				layers := strings.Count(g.Text(), "sqc.Attention(")
				// Q/K/V, the attention output and the FFN input of every
				// layer are smoothable (the search may leave some alone).
				if smoothed == 0 || smoothed > 3*layers || (!opts.AutoAlpha && smoothed != 3*layers) {
					t.Errorf("alpha %v, auto %v: %d groups smoothed in %d layers", opts.Alpha, opts.AutoAlpha, smoothed, layers)
				}
				wantRelativelyEqual(t, g, after, dev, 1e-5)
			}
		})
	}
}

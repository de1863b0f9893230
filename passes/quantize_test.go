package passes

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/compiler/interp"
)

func TestQuantizeWeights(t *testing.T) {
	w := &compiler.Tensor{DType: compiler.Float32, Shape: []int64{3, 3}, F32: []float32{
		1, 0, -0.5,
		-2, 0, 0.25,
		0.5, 0, 1,
	}}
	wq, s := QuantizeWeights(w)
	if want := []float32{2.0 / 127, 1, 1.0 / 127}; !slices.Equal(s.F32, want) {
		t.Errorf("scales %v, want %v", s.F32, want)
	}
	// 1/(2/127) = 63.5 rounds to even 64; 0.25*127 = 31.75 -> 32.
	if want := []int8{64, 0, -64, -127, 0, 32, 32, 0, 127}; !slices.Equal(wq.I8, want) {
		t.Errorf("quantised %v, want %v", wq.I8, want)
	}
}

func TestStaticQuantParams(t *testing.T) {
	for _, c := range []struct {
		lo, hi float32
		scale  float32
		zp     int32
	}{
		{-1, 3, 4.0 / 255, 64}, // -(-1)/(4/255) = 63.75
		{2, 5, 5.0 / 255, 0},   // widened to [0, 5]
		{-6, -1, 6.0 / 255, 255},
		{0, 0, 1, 0},
	} {
		s, z := StaticQuantParams(c.lo, c.hi)
		if s != c.scale || z != c.zp {
			t.Errorf("[%g, %g]: scale %g zero point %d, want %g %d", c.lo, c.hi, s, z, c.scale, c.zp)
		}
	}
}

// smoothQuantize is SmoothQuant and Quantize sharing a copy of stats, as in
// QuantPipeline, without the fusions QuantPipeline may run after them.
func smoothQuantize(stats *calib.Stats, opts QuantOptions) []Pass {
	if stats != nil {
		stats = stats.Clone()
	}
	return []Pass{SmoothQuant(stats, opts), Quantize(stats, opts), EliminateDeadNodes}
}

// quantizeBlock calibrates outlierBlock and quantises a copy.
func quantizeBlock(t *testing.T, opts QuantOptions) (before, after *compiler.Graph, stats *calib.Stats) {
	t.Helper()
	before = outlierBlock(t)
	stats = collect(t, before, blockBatches(11, 6), calib.Options{SampleRows: 64})
	after = before.Clone()
	runPasses(t, after, smoothQuantize(stats, opts)...)
	return before, after, stats
}

func TestQuantizeStatic(t *testing.T) {
	var rep QuantReport
	before, after, stats := quantizeBlock(t, QuantOptions{Alpha: 0.5, Report: &rep})
	wantOps(t, after, map[string]int{"LayerNormalization": 4, opQLinear: 6, "sqc.Attention": 1, "sqc.AttentionMask": 1, "sqc.Gelu": 1, "Add": 2})
	for _, n := range opsOf(after, opQLinear) {
		if w := after.Initializers[n.Inputs[1]]; w == nil || w.DType != compiler.Int8 {
			t.Errorf("%s: weight %v is not an i8 initializer", n.Name, n.Inputs[1])
		}
		if compiler.QLinearMode(n) != compiler.QLinearStatic || !n.HasAttr("act_scale") || !n.HasAttr("act_zero_point") {
			t.Errorf("%s: attrs %v, want static with scale and zero point", n.Name, n.Attrs)
		}
	}
	// No FP32 weight survives: the smoothed copies and the originals were
	// swept.
	for name, w := range after.Initializers {
		if w.DType == compiler.Float32 && len(w.Shape) == 2 {
			t.Errorf("f32 matrix %s left in the INT8 graph", name)
		}
	}
	// Static parameters come from the statistics of the (smoothed) input:
	// the FFN2 input is not smoothed, so its range is the calibrated one.
	ffn2 := nodeNamed(after, "ffn2")
	lo, hi := stats.Values["ge"].MinMax()
	scale, zp := StaticQuantParams(lo, hi)
	if ffn2.AttrFloat("act_scale", 0) != scale || ffn2.AttrInt("act_zero_point", -1) != int64(zp) {
		t.Errorf("ffn2: scale %g zp %d, want %g %d", ffn2.AttrFloat("act_scale", 0), ffn2.AttrInt("act_zero_point", -1), scale, zp)
	}
	if len(rep.Quantized) != 6 || len(rep.Smooth) != 4 {
		t.Errorf("report: %d quantised, %d smoothing groups; want 6 and 4", len(rep.Quantized), len(rep.Smooth))
	}
	wantClose(t, before, after, blockBatches(12, 3), 0.01)
}

func TestQuantizeDynamic(t *testing.T) {
	before, after, _ := quantizeBlock(t, QuantOptions{Alpha: 0.5, Act: compiler.QLinearDynamic})
	for _, n := range opsOf(after, opQLinear) {
		if compiler.QLinearMode(n) != compiler.QLinearDynamic || n.HasAttr("act_scale") {
			t.Errorf("%s: attrs %v, want dynamic without a scale", n.Name, n.Attrs)
		}
	}
	wantClose(t, before, after, blockBatches(12, 3), 0.003)
	// Dynamic needs no statistics at all when nothing is smoothed.
	g := outlierBlock(t)
	runPasses(t, g, smoothQuantize(nil, QuantOptions{Act: compiler.QLinearDynamic})...)
	if len(opsOf(g, opQLinear)) != 6 {
		t.Error("dynamic quantisation without calibration did not quantise")
	}
}

func TestSmoothingHelpsStaticQuantisation(t *testing.T) {
	errFor := func(alpha float64) float64 {
		before, after, _ := quantizeBlock(t, QuantOptions{Alpha: alpha})
		return outputError(t, before, after, blockBatches(13, 4))
	}
	plain, smoothed := errFor(0), errFor(0.5)
	t.Logf("relative squared output error: alpha 0 %.3g, alpha 0.5 %.3g", plain, smoothed)
	if smoothed >= plain {
		t.Errorf("smoothing did not reduce the INT8 error on outlier channels: %.4f >= %.4f", smoothed, plain)
	}
}

func TestQuantizeKeepFP32(t *testing.T) {
	var rep QuantReport
	_, after, _ := quantizeBlock(t, QuantOptions{Alpha: 0.5, KeepFP32: "^(ffn2|k)$", Report: &rep})
	if n := nodeNamed(after, "ffn2"); n.Op != opLinear {
		t.Errorf("ffn2 is %s, want it kept as %s", n.Op, opLinear)
	}
	if n := nodeNamed(after, "k"); n.Op != opLinear || after.Initializers[n.Inputs[1]].DType != compiler.Float32 {
		t.Errorf("k is %s, want FP32", n.Op)
	}
	if !slices.Equal(rep.KeptFP32, []string{"k", "ffn2"}) {
		t.Errorf("report keeps %v", rep.KeptFP32)
	}
	if _, err := Quantize(nil, QuantOptions{KeepFP32: "[", Act: compiler.QLinearDynamic}).Run(outlierBlock(t)); !errors.Is(err, compiler.ErrInvalidRequest) {
		t.Errorf("bad pattern: %v", err)
	}
}

func TestQuantizeKeepsTheHead(t *testing.T) {
	g := parseGraph(t, `graph "head" opset 17 {
  input %x: f32[batch, sequence, 4]
  init %w: f32[4, 4] = elided("sha256:00000000000000c0")
  init %i0: i64[] = [0]
  init %wc: f32[4, 2] = elided("sha256:00000000000000c1")
  %h = sqc.Linear(%x, %w) @encoder
  %cls = Gather(%h, %i0) {axis=1}
  %y = sqc.Linear(%cls, %wc) @classifier
  output %y: f32[batch, 2]
}`)
	runPasses(t, g, smoothQuantize(nil, QuantOptions{Act: compiler.QLinearDynamic})...)
	if nodeNamed(g, "encoder").Op != opQLinear || nodeNamed(g, "classifier").Op != opLinear {
		t.Errorf("want the encoder Linear quantised and the pooled classifier FP32:\n%s", g.Text())
	}
}

func TestQuantizePercentile(t *testing.T) {
	g := outlierBlock(t)
	batches := blockBatches(14, 6)
	copts := calib.Options{Percentile: 99}
	stats := collect(t, g, batches, copts)
	// Smoothing drops histograms: without Recalibrate that is an error.
	_, err := Quantize(stats.Clone(), QuantOptions{Percentile: 99}).Run(g.Clone())
	if err != nil {
		t.Fatalf("unsmoothed graph with histograms: %v", err)
	}
	list := smoothQuantize(stats, QuantOptions{Alpha: 0.5, Percentile: 99})
	if err := Run(g.Clone(), list, Options{}); !errors.Is(err, compiler.ErrInvalidRequest) || !strings.Contains(err.Error(), "Recalibrate") {
		t.Errorf("percentile after smoothing without Recalibrate: %v", err)
	}
	calls := 0
	recal := func(sg *compiler.Graph) (*calib.Stats, error) {
		calls++
		return calib.Collect(sg, batches, copts)
	}
	var rep QuantReport
	after := g.Clone()
	runPasses(t, after, smoothQuantize(stats, QuantOptions{Alpha: 0.5, Percentile: 99, Recalibrate: recal, Report: &rep})...)
	if calls != 1 {
		t.Errorf("Recalibrate called %d times, want once", calls)
	}
	// The percentile range is inside the min/max one.
	var minmax QuantReport
	quantizeBlockWith(t, g, batches, QuantOptions{Alpha: 0.5, Report: &minmax})
	for i, r := range rep.Quantized {
		if r.ActScale > minmax.Quantized[i].ActScale {
			t.Errorf("%s: percentile scale %g above the min/max scale %g", r.Node, r.ActScale, minmax.Quantized[i].ActScale)
		}
	}
}

func quantizeBlockWith(t *testing.T, g *compiler.Graph, batches []calib.Batch, opts QuantOptions) *compiler.Graph {
	t.Helper()
	stats := collect(t, g, batches, calib.Options{})
	after := g.Clone()
	runPasses(t, after, smoothQuantize(stats, opts)...)
	return after
}

func TestQuantizeErrors(t *testing.T) {
	g := outlierBlock(t)
	if _, err := Quantize(nil, QuantOptions{}).Run(g.Clone()); !errors.Is(err, compiler.ErrInvalidRequest) {
		t.Errorf("static without statistics: %v", err)
	}
	if _, err := Quantize(nil, QuantOptions{Act: "per-channel"}).Run(g.Clone()); !errors.Is(err, compiler.ErrInvalidRequest) {
		t.Errorf("unknown act mode: %v", err)
	}
	if _, err := Quantize(&calib.Stats{Values: map[string]*calib.ValueStats{}}, QuantOptions{}).Run(g.Clone()); !errors.Is(err, compiler.ErrMissingTensor) {
		t.Errorf("statistics without the inputs: %v", err)
	}
}

// outputError is the relative squared error of after's outputs against
// before's, sum (a - b)^2 / sum b^2 (the inverse of the SQNR), over the
// real tokens: padding rows, which calibration leaves out, are skipped.
func outputError(t *testing.T, before, after *compiler.Graph, batches []calib.Batch) float64 {
	t.Helper()
	var num, den float64
	for _, b := range batches {
		want, err := interp.Run(before, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := interp.Run(after, b, nil)
		if err != nil {
			t.Fatalf("%v\n%s", err, after.Text())
		}
		mask := b["attention_mask"]
		for _, o := range before.Outputs {
			w, g := want[o.Name], got[o.Name]
			row := int(w.Shape[len(w.Shape)-1])
			for i, v := range w.F32 {
				if mask != nil && len(w.Shape) == 3 && mask.I64[i/row] == 0 {
					continue
				}
				d := float64(g.F32[i]) - float64(v)
				num += d * d
				den += float64(v) * float64(v)
			}
		}
	}
	return num / den
}

// wantClose fails unless the INT8 graph's relative squared error against
// FP32 is at most tol, and not 0 (which would mean nothing was quantised).
func wantClose(t *testing.T, before, after *compiler.Graph, batches []calib.Batch, tol float64) {
	t.Helper()
	e := outputError(t, before, after, batches)
	t.Logf("relative squared output error %.3g (SQNR %.1f dB)", e, -10*math.Log10(e))
	if e > tol || e == 0 || math.IsNaN(e) {
		t.Errorf("INT8 relative squared output error %.3g, want in (0, %g]", e, tol)
	}
}

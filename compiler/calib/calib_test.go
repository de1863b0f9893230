package calib

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// twoLinears reads x through a Linear, a Relu and another Linear; the mask
// input marks padding.
const twoLinears = `graph "calib" opset 17 {
  input %x: f32[batch, sequence, 4]
  input %attention_mask: i64[batch, sequence]
  init %w: f32[4, 3] = [1, 0, 0.5, 0, 1, -1, 2, 0, 0, 0, 1, 1]
  init %w2: f32[3, 2] = [1, 2, 3, 4, 5, 6]
  %h = sqc.Linear(%x, %w)
  %r = Relu(%h)
  %y = sqc.Linear(%r, %w2)
  output %y: f32[batch, sequence, 2]
}`

func parse(t *testing.T, src string) *compiler.Graph {
	t.Helper()
	g, err := compiler.ParseText(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	if err := g.Verify(); err != nil {
		t.Fatal(err)
	}
	return g
}

// batchOf makes a [b, s, 4] input uniform in [-scale, scale) and a mask
// whose row i has lengths[i] real tokens.
func batchOf(seed uint64, scale float32, lengths ...int) Batch {
	r := rand.New(rand.NewPCG(seed, 1))
	b, s := len(lengths), slices.Max(lengths)
	x := compiler.NewTensor(compiler.Float32, int64(b), int64(s), 4)
	for i := range x.F32 {
		x.F32[i] = (r.Float32()*2 - 1) * scale
	}
	m := compiler.NewTensor(compiler.Int64, int64(b), int64(s))
	for i, n := range lengths {
		for j := range n {
			m.I64[i*s+j] = 1
		}
	}
	return Batch{"x": x, "attention_mask": m}
}

// realRows lists the x rows of the batches that are not padding.
func realRows(batches []Batch) [][]float32 {
	var out [][]float32
	for _, b := range batches {
		x, m := b["x"], b["attention_mask"]
		for tok, keep := range m.I64 {
			if keep != 0 {
				out = append(out, x.F32[tok*4:(tok+1)*4])
			}
		}
	}
	return out
}

func TestTargets(t *testing.T) {
	g := parse(t, twoLinears)
	if got := Targets(g); !slices.Equal(got, []string{"x", "r"}) {
		t.Errorf("Targets = %v, want [x r]", got)
	}
}

func TestCollectChannelRangesSkipPadding(t *testing.T) {
	g := parse(t, twoLinears)
	batches := []Batch{batchOf(1, 1, 3, 1, 2), batchOf(2, 1, 2, 2)}
	// Padding rows hold huge values: counting them would show at once.
	for _, b := range batches {
		x, m := b["x"], b["attention_mask"]
		for tok, keep := range m.I64 {
			if keep == 0 {
				for j := range 4 {
					x.F32[tok*4+j] = 1000
				}
			}
		}
	}
	stats, err := Collect(g, batches, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Batches != 2 || stats.Sequences != 5 || stats.Tokens != 10 {
		t.Errorf("counted %d batches, %d sequences, %d tokens; want 2, 5, 10", stats.Batches, stats.Sequences, stats.Tokens)
	}
	rows := realRows(batches)
	xs := stats.Values["x"]
	for j := range 4 {
		lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
		for _, r := range rows {
			lo, hi = min(lo, r[j]), max(hi, r[j])
		}
		if xs.ChannelMin[j] != lo || xs.ChannelMax[j] != hi {
			t.Errorf("channel %d: range [%g, %g], want [%g, %g]", j, xs.ChannelMin[j], xs.ChannelMax[j], lo, hi)
		}
	}
	// r = relu(x·w): check channel 1 (= relu(x1 - ... )) by recomputing.
	w := g.Initializers["w"].F32
	rs := stats.Values["r"]
	for c := range 3 {
		hi := float32(0)
		for _, r := range rows {
			var v float32
			for k := range 4 {
				v += r[k] * w[k*3+c]
			}
			hi = max(hi, v)
		}
		if d := math.Abs(float64(rs.ChannelMax[c] - hi)); d > 1e-5 {
			t.Errorf("relu channel %d: max %g, want %g", c, rs.ChannelMax[c], hi)
		}
		if rs.ChannelMin[c] < 0 {
			t.Errorf("relu channel %d: min %g < 0", c, rs.ChannelMin[c])
		}
	}
	abs := xs.AbsMax()
	for j := range 4 {
		want := max(-xs.ChannelMin[j], xs.ChannelMax[j])
		if abs[j] != want {
			t.Errorf("AbsMax[%d] = %g, want %g", j, abs[j], want)
		}
	}
}

func TestCollectSamplesSameTokensForEveryValue(t *testing.T) {
	g := parse(t, twoLinears)
	var batches []Batch
	for i := range 6 {
		batches = append(batches, batchOf(uint64(10+i), 1, 4, 2, 3))
	}
	const k = 7
	stats, err := Collect(g, batches, Options{SampleRows: k})
	if err != nil {
		t.Fatal(err)
	}
	xs, rs := stats.Values["x"], stats.Values["r"]
	if xs.SampleRows() != k || rs.SampleRows() != k {
		t.Fatalf("sampled %d and %d rows, want %d", xs.SampleRows(), rs.SampleRows(), k)
	}
	real := realRows(batches)
	w := g.Initializers["w"].F32
	for i := range k {
		row := xs.Rows[i*4 : (i+1)*4]
		if !slices.ContainsFunc(real, func(r []float32) bool { return slices.Equal(r, row) }) {
			t.Errorf("sampled row %d %v is not a real token", i, row)
		}
		for c := range 3 {
			var v float32
			for kk := range 4 {
				v += row[kk] * w[kk*3+c]
			}
			if d := math.Abs(float64(max(v, 0) - rs.Rows[i*3+c])); d > 1e-5 {
				t.Errorf("row %d of r is not relu(row %d of x · w): channel %d %g vs %g", i, i, c, rs.Rows[i*3+c], max(v, 0))
			}
		}
	}
	// Same data, same options: same sample.
	again, err := Collect(g, batches, Options{SampleRows: k})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Values["x"].Rows, xs.Rows) {
		t.Error("sampling is not deterministic")
	}
	// Fewer tokens than k: every real row, in order.
	few, err := Collect(g, batches[:1], Options{SampleRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := few.Values["x"].Rows, slices.Concat(realRows(batches[:1])...); !slices.Equal(got, want) {
		t.Errorf("with room for all, sample = %v, want every real row %v", got, want)
	}
}

func TestPercentileRange(t *testing.T) {
	g := parse(t, twoLinears)
	var batches []Batch
	for i := range 20 {
		batches = append(batches, batchOf(uint64(100+i), 1, 50, 50, 50, 50))
	}
	// One outlier token far out in channel 0.
	batches[7]["x"].F32[0] = 40
	stats, err := Collect(g, batches, Options{Percentile: 99.9})
	if err != nil {
		t.Fatal(err)
	}
	xs := stats.Values["x"]
	lo, hi, err := xs.Range(0)
	if err != nil || lo < -1 || hi != 40 {
		t.Errorf("min/max range = [%g, %g] (%v), want [>= -1, 40]", lo, hi, err)
	}
	plo, phi, err := xs.Range(99.9)
	if err != nil {
		t.Fatal(err)
	}
	// 16000 values: the 0.05% tails are 8 values each side; uniform in
	// [-1, 1) puts the cut near ±0.999, the outlier is ignored.
	if phi > 1.05 || phi < 0.95 || plo < -1.05 || plo > -0.95 {
		t.Errorf("99.9%% range = [%g, %g], want about [-1, 1]", plo, phi)
	}
	if _, _, err := xs.Range(101); err == nil {
		t.Error("percentile 101 accepted")
	}
	scaled, err := xs.Scaled([]float32{2, 1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := scaled.Range(99.9); err == nil || !strings.Contains(err.Error(), "histogram") {
		t.Errorf("percentile range after Scaled: err = %v, want one about the histogram", err)
	}
}

func TestScaledIsExact(t *testing.T) {
	g := parse(t, twoLinears)
	batches := []Batch{batchOf(3, 2, 5, 3), batchOf(4, 2, 4, 4)}
	stats, err := Collect(g, batches, Options{SampleRows: 4})
	if err != nil {
		t.Fatal(err)
	}
	s := []float32{0.5, 2, 4, 1}
	xs := stats.Values["x"]
	sc, err := xs.Scaled(s)
	if err != nil {
		t.Fatal(err)
	}
	// Recollect on x/s directly: identical ranges and sample.
	var div []Batch
	for _, b := range batches {
		x := b["x"].Clone()
		for i := range x.F32 {
			x.F32[i] /= s[i%4]
		}
		div = append(div, Batch{"x": x, "attention_mask": b["attention_mask"]})
	}
	direct, err := Collect(g, div, Options{SampleRows: 4})
	if err != nil {
		t.Fatal(err)
	}
	d := direct.Values["x"]
	if !slices.Equal(sc.ChannelMin, d.ChannelMin) || !slices.Equal(sc.ChannelMax, d.ChannelMax) || !slices.Equal(sc.Rows, d.Rows) {
		t.Errorf("Scaled differs from collecting x/s:\n%+v\n%+v", sc, d)
	}
	if xs.ChannelMax[1] == sc.ChannelMax[1] {
		t.Error("Scaled modified nothing, or modified its receiver")
	}
	if _, err := xs.Scaled([]float32{1, 0, 1, 1}); err == nil {
		t.Error("zero scale accepted")
	}
	if _, err := xs.Scaled([]float32{1}); err == nil {
		t.Error("wrong scale count accepted")
	}
}

func TestCollectErrors(t *testing.T) {
	g := parse(t, twoLinears)
	if _, err := Collect(g, nil, Options{}); !errors.Is(err, ErrNoData) {
		t.Errorf("no batches: %v", err)
	}
	if _, err := Collect(g, []Batch{batchOf(1, 1, 0, 0)}, Options{}); !errors.Is(err, ErrNoData) {
		t.Errorf("all padding: %v", err)
	}
	b := batchOf(1, 1, 2)
	b["x"].F32[1] = float32(math.NaN())
	if _, err := Collect(g, []Batch{b}, Options{}); err == nil || !strings.Contains(err.Error(), "non-finite") {
		t.Errorf("NaN activation: %v", err)
	}
	var progress [][2]int
	_, err := Collect(g, []Batch{batchOf(1, 1, 2, 2), batchOf(2, 1, 1)}, Options{Progress: func(d, n int) { progress = append(progress, [2]int{d, n}) }})
	if err != nil || !slices.Equal(progress, [][2]int{{2, 3}, {3, 3}}) {
		t.Errorf("progress = %v (%v), want [[2 3] [3 3]]", progress, err)
	}
}

func TestHistogramGrowsAndKeepsCounts(t *testing.T) {
	h := newHistogram(64)
	h.add([]float32{0, 1, 2, 3}, 0, 3)
	h.add([]float32{-10, 10}, -10, 10)
	if h.Total != 6 || h.Lo > -10 || h.Hi < 10 {
		t.Fatalf("total %d range [%g, %g]", h.Total, h.Lo, h.Hi)
	}
	var sum uint64
	for _, c := range h.Counts {
		sum += c
	}
	if sum != 6 {
		t.Errorf("counts sum to %d after growing, want 6", sum)
	}
	if q := h.Quantile(0.5); q < -1 || q > 3.5 {
		t.Errorf("median %g, want within the middle values", q)
	}
	if q := h.Quantile(1); q < 9 {
		t.Errorf("max quantile %g, want about 10", q)
	}
}

// Package calib gathers the activation statistics INT8 quantisation needs:
// it runs the FP32 reference interpreter (compiler/interp) over calibration
// batches and, through interp.Options.OnValue, watches the activation input
// of every sqc.Linear.
//
// For each such value it records
//
//   - per-input-channel minimum and maximum (the last axis is the channel),
//     from which SmoothQuant takes max|X_j| and from which the per-tensor
//     range of a smoothed activation follows exactly (smoothing divides
//     channel j by s_j > 0, so its range becomes [min_j/s_j, max_j/s_j]);
//   - optionally a histogram, for percentile ranges (Options.Percentile);
//   - optionally a reservoir sample of whole rows (tokens), which the
//     automatic SmoothQuant alpha search replays (Options.SampleRows).
//
// Padding tokens are left out: rows of a [batch, sequence, ...] activation
// whose attention_mask entry is 0 are not counted, so statistics do not
// depend on how calibration inputs were batched.
//
// Usage:
//
//	stats, err := calib.Collect(g, batches, calib.Options{SampleRows: 512})
//	abs := stats.Values["x"].AbsMax()           // per channel
//	lo, hi, err := stats.Values["x"].Range(0)   // min/max over the tensor
package calib

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Stats are the statistics of one calibration run, by value name.
type Stats struct {
	// Batches, Sequences and Tokens count what was seen: interpreter runs,
	// input rows (sentences) and non-padding tokens.
	Batches, Sequences, Tokens int
	// Values holds one entry per observed activation (every f32 value read
	// as the input of an sqc.Linear).
	Values map[string]*ValueStats
}

// Clone returns a copy whose Values map can be changed without touching
// s's; the *ValueStats it points to are shared and, by convention, never
// modified after Collect returns (passes replace entries instead).
func (s *Stats) Clone() *Stats {
	c := *s
	c.Values = maps.Clone(s.Values)
	return &c
}

// ValueStats are one activation's statistics over the calibration tokens.
// The channel axis is the last one; rows are all the others flattened
// (tokens for [batch, sequence, hidden] activations).
type ValueStats struct {
	Channels   int
	ChannelMin []float32 // per channel: smallest value seen
	ChannelMax []float32 // per channel: largest value seen
	// Hist, when collected, is the distribution of all elements; nil when
	// Options.Percentile was 0 or after a per-channel rescaling (Scaled),
	// which a per-tensor histogram cannot follow.
	Hist *Histogram
	// Rows, when collected, is a uniform sample of rows: len(Rows)/Channels
	// rows of Channels values, in the order they were kept.
	Rows []float32
}

// AbsMax returns max|x| per channel.
func (v *ValueStats) AbsMax() []float32 {
	out := make([]float32, v.Channels)
	for j := range out {
		out[j] = max(float32(math.Abs(float64(v.ChannelMin[j]))), float32(math.Abs(float64(v.ChannelMax[j]))))
	}
	return out
}

// MinMax returns the smallest and largest element over all channels.
func (v *ValueStats) MinMax() (lo, hi float32) {
	if v.Channels == 0 {
		return 0, 0
	}
	return slices.Min(v.ChannelMin), slices.Max(v.ChannelMax)
}

// Range returns the per-tensor range to quantise with: the plain min/max
// when percentile is 0, otherwise the central percentile% of the
// histogram (both tails cut by (100-percentile)/2 %), clamped to the
// min/max. A percentile range needs a histogram: it is an error to ask for
// one after Scaled dropped it (recollect on the rescaled graph instead).
func (v *ValueStats) Range(percentile float64) (lo, hi float32, err error) {
	lo, hi = v.MinMax()
	if percentile == 0 {
		return lo, hi, nil
	}
	if percentile < 0 || percentile > 100 {
		return 0, 0, fmt.Errorf("percentile %g is outside (0, 100]", percentile)
	}
	if v.Hist == nil {
		return 0, 0, fmt.Errorf("no histogram was collected for this value (collect with Options.Percentile, after any smoothing)")
	}
	tail := (100 - percentile) / 200
	plo, phi := v.Hist.Quantile(tail), v.Hist.Quantile(1-tail)
	return max(lo, plo), min(hi, phi), nil
}

// Scaled returns the statistics of x/s, channel j divided by s[j] > 0:
// exact for the channel ranges and the row sample; the histogram is
// dropped. v is not modified.
func (v *ValueStats) Scaled(s []float32) (*ValueStats, error) {
	if len(s) != v.Channels {
		return nil, fmt.Errorf("calib: %d scales for %d channels", len(s), v.Channels)
	}
	out := &ValueStats{
		Channels:   v.Channels,
		ChannelMin: make([]float32, v.Channels),
		ChannelMax: make([]float32, v.Channels),
		Rows:       make([]float32, len(v.Rows)),
	}
	for j, sj := range s {
		if !(sj > 0) || math.IsInf(float64(sj), 0) {
			return nil, fmt.Errorf("calib: scale %g of channel %d is not a positive finite number", sj, j)
		}
		out.ChannelMin[j] = v.ChannelMin[j] / sj
		out.ChannelMax[j] = v.ChannelMax[j] / sj
	}
	for i, x := range v.Rows {
		out.Rows[i] = x / s[i%v.Channels]
	}
	return out, nil
}

// SampleRows returns the number of sampled rows.
func (v *ValueStats) SampleRows() int {
	if v.Channels == 0 {
		return 0
	}
	return len(v.Rows) / v.Channels
}

package bench

import (
	"math"
	"slices"
)

// Summary describes a sample of measurements (all in one unit).
type Summary struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	P25    float64 `json:"p25"`
	P75    float64 `json:"p75"`
}

// Summarize returns the summary of xs (which it does not modify). An empty
// sample gives a Summary with N = 0 and NaN statistics.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		nan := math.NaN()
		return Summary{Min: nan, Max: nan, Median: nan, Mean: nan, P25: nan, P75: nan}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Summary{
		N: len(s), Min: s[0], Max: s[len(s)-1],
		Median: Quantile(s, 0.5), Mean: sum / float64(len(s)),
		P25: Quantile(s, 0.25), P75: Quantile(s, 0.75),
	}
}

// Quantile returns the q-quantile (0 <= q <= 1) of sorted, interpolating
// linearly between order statistics (numpy's default, and the peer
// harness's report.py). sorted must be in increasing order and non-empty.
func Quantile(sorted []float64, q float64) float64 {
	k := float64(len(sorted)-1) * q
	lo := int(k)
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(k-float64(lo))
}

// Throughput converts a latency summary (milliseconds per call of batch
// sequences) into sequences per second: the median of throughput is batch
// over the median latency, its minimum comes from the slowest call and its
// maximum from the fastest.
func Throughput(latencyMs Summary, batch int) Summary {
	rate := func(ms float64) float64 { return float64(batch) * 1000 / ms }
	return Summary{
		N: latencyMs.N, Min: rate(latencyMs.Max), Max: rate(latencyMs.Min),
		Median: rate(latencyMs.Median), Mean: rate(latencyMs.Mean),
		P25: rate(latencyMs.P75), P75: rate(latencyMs.P25),
	}
}

package bench

import (
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{5, 1, 4, 2, 3})
	want := Summary{N: 5, Min: 1, Max: 5, Median: 3, Mean: 3, P25: 2, P75: 4}
	if s != want {
		t.Errorf("Summarize = %+v, want %+v", s, want)
	}
	// Even count: the median interpolates; quantiles as numpy's default
	// (np.percentile([1,2,3,10], [25,50,75]) = 1.75, 2.5, 4.75).
	s = Summarize([]float64{10, 1, 3, 2})
	if s.Median != 2.5 || s.P25 != 1.75 || s.P75 != 4.75 || s.Mean != 4 {
		t.Errorf("Summarize even = %+v", s)
	}
	if s := Summarize(nil); s.N != 0 || !math.IsNaN(s.Median) {
		t.Errorf("Summarize(nil) = %+v, want N 0 and NaN", s)
	}
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 || in[1] != 1 {
		t.Errorf("Summarize sorted its input: %v", in)
	}
}

func TestThroughput(t *testing.T) {
	lat := Summary{N: 3, Min: 10, Max: 40, Median: 20, Mean: 25, P25: 15, P75: 30}
	tp := Throughput(lat, 8)
	// 8 sequences in 20 ms = 400 seq/s; the slowest call (40 ms) is the
	// minimum throughput.
	if tp.Median != 400 || tp.Min != 200 || tp.Max != 800 || tp.P25 != 8000.0/30 || tp.P75 != 8000.0/15 {
		t.Errorf("Throughput = %+v", tp)
	}
}

package lnstats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestStatsAccuracy checks Stats against a compensated (Neumaier) float64
// reference on rows whose naive sums lose bits: a large mean over small
// deviations, and long rows. The blocked order must stay within a few
// float64 ulps of the exact statistics.
func TestStatsAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 31, 32, 33, 768, 1000, 4096} {
		for _, offset := range []float64{0, 1000, -3e5} {
			x := make([]float32, n)
			for j := range x {
				x[j] = float32(offset + r.NormFloat64())
			}
			mean, inv := Stats(x, 1e-12)
			wantMean := kahanSum(x, func(v float64) float64 { return v }) / float64(n)
			wantVar := kahanSum(x, func(v float64) float64 { d := v - wantMean; return d * d }) / float64(n)
			wantInv := 1 / math.Sqrt(wantVar+1e-12)
			if d := math.Abs(mean - wantMean); d > 1e-14*math.Max(1, math.Abs(wantMean)) {
				t.Errorf("n=%d offset=%g: mean %v, compensated %v", n, offset, mean, wantMean)
			}
			if n > 1 && math.Abs(inv-wantInv) > 1e-9*wantInv {
				t.Errorf("n=%d offset=%g: inv %v, compensated %v", n, offset, inv, wantInv)
			}
		}
	}
}

func kahanSum(x []float32, f func(float64) float64) float64 {
	var s, c float64
	for _, v := range x {
		y := f(float64(v))
		t := s + y
		if math.Abs(s) >= math.Abs(y) {
			c += (s - t) + y
		} else {
			c += (y - t) + s
		}
		s = t
	}
	return s + c
}

// TestStatsOrder pins the order itself: values chosen so that adding them
// in another order (sequentially, or lanes combined differently) gives
// other bits. Column j of a 64-column row holds 2^53 in sum lane 0's
// first column and ones elsewhere, so every lane's total and the tree
// decide which ones are absorbed by rounding.
func TestStatsOrder(t *testing.T) {
	x := make([]float64, 64)
	for j := range x {
		x[j] = 1
	}
	x[0] = 1 << 53
	// Lane 0 gets 2^53 + 1 (rounds to 2^53, the 1 lost: ties to even);
	// the other lanes 2 each, or 1 for lanes 32..63 wrapped: every lane l
	// gets columns l and l+32.
	var s [Lanes]float64
	for j, v := range x {
		s[j%Lanes] += v
	}
	mean, _ := Stats(x, 0)
	if want := Combine(&s) / 64; mean != want {
		t.Fatalf("mean %v, Combine of the lane sums %v", mean, want)
	}
	var seq float64
	for _, v := range x {
		seq += v
	}
	// Sequentially every 1 after 2^53 is lost; in lanes, the 62 ones of
	// lanes 1..31 are summed among themselves first and survive.
	if seq == Combine(&s) {
		t.Fatalf("the sequential sum %v equals the blocked one: the test pins nothing", seq)
	}
	if got, want := Combine(&s), float64(1<<53)+62; got != want {
		t.Fatalf("Combine = %v, want %v", got, want)
	}
}

func TestStatsEmpty(t *testing.T) {
	mean, inv := Stats([]float32{}, 1e-5)
	if !math.IsNaN(mean) || !math.IsNaN(inv) {
		t.Fatalf("empty row: mean %v inv %v, want NaN", mean, inv)
	}
}

// Package lnstats is the one definition of how sqc computes a LayerNorm
// row's statistics: the order of the float64 sums that give its mean and
// 1/sqrt(variance+epsilon). The FP32 interpreter (runtime/ops
// LayerNormalization) and the engine's LayerNorm (runtime/nn: its Go
// reference and its AVX-512 and AVX2 kernels, emitted by asmgen/nn) all
// follow it, so the engine's LayerNorm outputs have the interpreter's
// bits.
//
// Order. Column j of a row is added to running sum j % Lanes (each
// starting at +0, columns ascending); Combine then adds the Lanes sums in
// a fixed tree. A vector kernel keeps the sums in the float64 lanes of
// Lanes/8 zmm (or Lanes/4 ymm) accumulators and needs no transpose: it
// runs along the row, Lanes/8 independent add chains deep instead of one
// chain of n. (The order this replaced was one sequential sum per row,
// which vector code could only follow by running 16 rows at once down
// transposed columns, latency-bound on the single chain per row: about
// 160 ns per row of 768 on one Zen 5 core.) A kernel's masked tail may
// add +0 to the sums of columns past the end: a sum that starts at +0 is
// never -0, so adding +0 leaves it unchanged.
package lnstats

import "math"

// Lanes is the number of running sums per row: four zmm (eight ymm)
// registers of float64 lanes.
const Lanes = 32

// Stats returns the mean of x and 1/sqrt(variance + eps), both in
// float64 in the package's order:
//
//	mean = Combine(sums of x_j) / n
//	inv  = 1 / sqrt(Combine(sums of d_j*d_j) / n + eps),  d_j = x_j - mean
//
// with every product rounded on its own (no fused multiply-add). An empty
// x gives NaN for both.
func Stats[T float32 | float64](x []T, eps float64) (mean, inv float64) {
	var s [Lanes]float64
	for j, v := range x {
		s[j%Lanes] += float64(v)
	}
	n := float64(len(x))
	mean = Combine(&s) / n
	s = [Lanes]float64{}
	for j, v := range x {
		d := float64(v) - mean
		s[j%Lanes] += float64(d * d) // float64(): rounded, never fused
	}
	return mean, 1 / math.Sqrt(Combine(&s)/n+eps)
}

// Combine returns the total of the Lanes running sums in the vector
// kernels' order: lane-wise, (s[l] + s[l+8]) + (s[l+16] + s[l+24]) for the
// 8 lanes l of a zmm register (its four accumulators added in pairs), then
// halves added until one lane is left: a[l] + a[l+4], then + the lane 2
// away, then the two remaining lanes.
func Combine(s *[Lanes]float64) float64 {
	var a [8]float64
	for l := range a {
		a[l] = (s[l] + s[l+8]) + (s[l+16] + s[l+24])
	}
	var h4 [4]float64
	for l := range h4 {
		h4[l] = a[l] + a[l+4]
	}
	return (h4[0] + h4[2]) + (h4[1] + h4[3])
}

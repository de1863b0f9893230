// Package lnstats is the one definition of how sqc computes a LayerNorm
// row: the order of the float64 sums that give its mean and
// 1/sqrt(variance+epsilon) (Stats), and the float32 arithmetic that
// normalises each value with them (Normalize, Affine). The FP32
// interpreter (runtime/ops LayerNormalization) and the engine's LayerNorm
// (runtime/nn: its Go reference and its AVX-512 and AVX2 kernels, emitted
// by asmgen/nn) all follow it, so the engine's LayerNorm outputs have the
// interpreter's bits.
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
//
// Normalising. The statistics stay float64 (two passes, 2n adds per row)
// but each value is normalised in float32, as ONNX Runtime and PyTorch
// do, with the statistics rounded to float32 once per row (Row32): z =
// ((x - MeanHi) - MeanLo) * Inv and y = z*gamma + beta, each operation
// rounded on its own (no fused multiply-add, which Go code could not
// follow cheaply on every architecture). float64 normalising cost 2-3x as
// much in the vector kernels (each 16 values widened in two halves, with
// gamma, beta and the result converted too: about 274 ns per row of 768
// for the dual LayerNorm on one Zen 5 core) and bought little the float32
// outputs keep: the roundings leave y within a few float32 ulps of
// |z*gamma| + |y| of the float64 result (runtime/nn's TestLayerNorm
// bounds it), against activations quantised to 8 bits next.
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

// Row32 is a row's statistics as the float32 normalisation uses them:
// the mean as the unevaluated sum MeanHi + MeanLo of two float32 (MeanHi
// the mean rounded, MeanLo the rest rounded) and Inv rounded. Subtracting
// the two halves in turn keeps the float64 mean's accuracy where the mean
// is large against the spread (a row of values near 1000 with a standard
// deviation of 2: the rounded mean alone would be off by up to 3e-5, a
// shift of 1.5e-5 in every z), for one more operation per value.
type Row32 struct{ MeanHi, MeanLo, Inv float32 }

// NewRow32 rounds a row's float64 statistics (from Stats) to Row32.
func NewRow32(mean, inv float64) Row32 {
	hi := float32(mean)
	return Row32{MeanHi: hi, MeanLo: float32(mean - float64(hi)), Inv: float32(inv)}
}

// Normalize returns z = ((x - MeanHi) - MeanLo) * Inv in float32, each
// operation rounded. The conversions keep a compiler from fusing the
// multiply with a caller's add.
func (r Row32) Normalize(x float32) float32 {
	return float32(float32(float32(x-r.MeanHi)-r.MeanLo) * r.Inv)
}

// Affine returns z*gamma + beta in float32, the product rounded before
// the add.
func Affine(z, gamma, beta float32) float32 { return float32(float32(z*gamma) + beta) }

// Scale returns z*gamma in float32: Affine without a beta (adding +0
// would turn a -0 into +0).
func Scale(z, gamma float32) float32 { return float32(z * gamma) }

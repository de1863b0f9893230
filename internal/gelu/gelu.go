// Package gelu is sqc's float32 erf-GELU, gelu(x) = x*Phi(x) with Phi the
// standard normal CDF: the one Go definition that the GEMM epilogue
// (runtime/qgemm, ActGelu) and the standalone activation (runtime/nn.Gelu)
// share, and the table that their AVX-512 versions (emitted by
// asmgen/geluavo) evaluate. The vector code computes Gelu's float32
// operations in the same order, with a fused multiply-add exactly where
// Gelu calls FMA32, so both give the same bits.
//
// Method. gelu(x) - gelu(-x) = x, so gelu(x) = max(x, 0) + g(|x|) with
// g(u) = gelu(-u) = -u*Phi(-u), a smooth function of u >= 0 that decays
// to 0 (|g| < 2e-8 from u = 5.8 on). With b = min(|x|*InvWidth, Clamp)
// (InvWidth = 2.5: intervals 0.4 wide), i = roundEven(b) in [0, 15] picks
// an interval and r = b - i in [-0.5, 0.5] is the position in it (exact:
// VREDUCEPS); g is then a degree-5 polynomial in r with the coefficients
// Coeffs[k][i] (one VPERMPS per coefficient: a 16-entry table fits one
// zmm register), evaluated by Horner's rule with fused multiply-adds.
// Interval 15 (|x| >= 5.8) is all zeros, so gelu(x) = max(x, 0) there,
// and interval 0 has no constant term, so small x keep their relative
// accuracy (gelu(x) ~ x/2). The absolute error against 0.5*x*(1 +
// erf(x/sqrt2)) is below 3e-7 everywhere (TestAccuracy), half a float32
// ulp of the largest results it affects.
//
// About 18 vector operations per 16 values, against ~80 and a division for
// the erfc-and-exp formulation this replaced.
package gelu

import "math"

// Parameters of the interval split (see the package comment).
const (
	// InvWidth is 1 / the interval width (0.4), exact in float32.
	InvWidth float32 = 2.5
	// Clamp bounds |x|*InvWidth: it selects interval 15, all zeros, for
	// |x| >= 14.5/InvWidth = 5.8, for infinities and for NaN (MINPS gives
	// its second operand for a NaN).
	Clamp float32 = 15
	// Degree is the degree of the polynomial on each interval.
	Degree = 5
	// Intervals is the number of table entries: one zmm register of
	// float32 coefficients, indexed by VPERMPS.
	Intervals = 16
)

// Coeffs[k][i] is the coefficient of r^k of interval i: a least-squares
// fit in float64 of g((i + r)/InvWidth) over 64 Chebyshev nodes of r in
// [-0.5, 0.5] ([0, 0.5] with no constant term for interval 0), rounded to
// float32 (fit_test.go refits and compares).
var Coeffs = [Degree + 1][Intervals]float32{
	{0, -0.13783129, -0.16948433, -0.13808362, -0.08767887, -0.045500264, -0.019674081, -0.0071543623, -0.0021988407, -0.00057279115, -0.00012668526, -2.3815348e-05, -3.8080295e-06, -5.181644e-07, -6.0021435e-08, 0},
	{-0.19999997, -0.078908086, 0.00795913, 0.04718144, 0.04906962, 0.034092724, 0.018219735, 0.007843252, 0.002776777, 0.00081749517, 0.00020145992, 4.17338e-05, 7.288396e-06, 1.0752481e-06, 1.3420615e-07, 0},
	{0.063829884, 0.054208614, 0.031518918, 0.008700509, -0.004968711, -0.008638617, -0.006736559, -0.0036982882, -0.0015716391, -0.00053649984, -0.00014986859, -3.4628956e-05, -6.6637494e-06, -1.0728977e-06, -1.4500719e-07, 0},
	{8.095987e-06, -0.0060334727, -0.00830581, -0.0063631004, -0.0027261374, -9.956964e-08, 0.0010090041, 0.00090784195, 0.0005078155, 0.00021053929, 6.8519366e-05, 1.7978757e-05, 3.8606195e-06, 6.84781e-07, 1.0096366e-07, 0},
	{-0.0017346721, -0.0011333663, 1.664201e-05, 0.0008194502, 0.0008657749, 0.00046138917, 7.810216e-05, -8.735572e-05, -9.403135e-05, -5.3195497e-05, -2.1354452e-05, -6.591626e-06, -1.6200541e-06, -3.230557e-07, -5.287524e-08, 0},
	{5.9532173e-05, 0.00020233553, 0.00022303837, 8.427741e-05, -5.343779e-05, -9.1347516e-05, -5.5843397e-05, -1.3090099e-05, 6.4615024e-06, 8.111677e-06, 4.4904655e-06, 1.7016935e-06, 4.8765736e-07, 1.10121746e-07, 2.0026953e-08, 0},
}

// AbsMask clears a float32's sign bit (VANDPS).
const AbsMask uint32 = 0x7FFFFFFF

// Gelu returns the float32 erf-GELU of x (see the package comment):
// gelu(±Inf) = +Inf / 0, gelu(NaN) = NaN. Every step is one vector
// instruction of the assembly, in this order. It is not inlined: FMA32's
// float64 arithmetic stays out of its callers, whose listings runtime/nn's
// TestNoFusedMultiplyAdd searches for fused multiply-adds.
//
//go:noinline
func Gelu(x float32) float32 {
	y := x * InvWidth                                                    // VMULPS
	b := MinPS(math.Float32frombits(math.Float32bits(y)&AbsMask), Clamp) // VANDPS, VMINPS
	i := int32(math.RoundToEven(float64(b)))                             // VCVTPS2DQ: 0..15
	r := b - float32(i)                                                  // VREDUCEPS: exact
	p := Coeffs[Degree][i]                                               // VPERMPS (each coefficient)
	for k := Degree - 1; k >= 0; k-- {
		p = FMA32(p, r, Coeffs[k][i]) // VFMADD213PS
	}
	return MaxPS(0, x) + p // VMAXPS, VADDPS
}

// FMA32 returns a*b + c rounded once to float32, as VFMADD*PS does. The
// product is exact in float64; the sum is rounded to float64 with round
// to odd (nearest, then the odd neighbour if inexact), which makes the
// final rounding to float32 correct: float32(math.FMA(a, b, c)) would
// round twice and can differ in the last bit.
func FMA32(a, b, c float32) float32 {
	p := float64(a) * float64(b) // exact: 48 significant bits
	fc := float64(c)
	s := p + fc
	// Two-sum: e = (p + fc) - s exactly.
	bp := s - fc
	bc := s - bp
	e := (p - bp) + (fc - bc)
	if bits := math.Float64bits(s); e != 0 && bits&1 == 0 {
		// Inexact and even: step one ulp towards the exact sum (s != 0
		// here, and the neighbour is odd).
		if (e > 0) == (s > 0) {
			bits++
		} else {
			bits--
		}
		s = math.Float64frombits(bits)
	}
	return float32(s)
}

// MinPS and MaxPS are the x86 MINPS/MAXPS lane operations: if either
// operand is NaN (or both are zeros), the second operand is returned. Go
// references of assembly that uses them (here, runtime/qgemm's epilogue)
// call these so that NaNs and signed zeros come out the same.
func MinPS(a, b float32) float32 {
	if a < b {
		return a
	}
	return b
}

func MaxPS(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

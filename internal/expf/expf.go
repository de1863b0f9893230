// Package expf is sqc's float32 exp and the SiLU built on it, with a fixed
// operation order so that every architecture, and the assembly that
// asmgen/expavo emits for the softmax (asmgen/nn) and the GEMM epilogue
// (asmgen/qgemm), gives the same bits. Not math.Exp: that is float64, its
// result rounded to float32 differs from any vector form in the last bit
// now and then, and that would break the engines' bit-for-bit agreement.
package expf

import "math"

// Constants of Exp, read by asmgen/expavo too: log2(e); ln2 split into a
// 9-bit high part (k*Ln2Hi is exact for |k| < 2^15) and the rest; the
// range where exp(x) is a normal float32 or overflows.
const (
	Log2E float32 = 1.44269504088896341
	Ln2Hi float32 = 0.693359375
	Ln2Lo float32 = -2.12194440e-4
	// Min: below it exp(x) < 2^-126 (the smallest normal) and Exp
	// returns 0, flushing what would be subnormal; softmax weights that
	// small are 1e-38 of the row's largest and change no sum.
	Min float32 = -87.33654
	// Max: above it exp(x) overflows float32.
	Max float32 = 88.72283
)

// Poly are the Taylor coefficients of exp(r) for |r| <= ln2/2, highest
// degree first, down to degree 2 (Exp's last two Horner steps multiply by
// r and add 1): truncation after degree 7 leaves a relative error of
// 5e-9, a tenth of a float32 ulp.
var Poly = [...]float32{1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5}

// Exp returns e**x in float32 within 2 ulp: k = roundEven(x*log2e),
// r = (x - k*ln2Hi) - k*ln2Lo, exp = P(r) * 2^k with P the degree-7 Taylor
// polynomial in Horner form. It returns 0 below Min (including -Inf), +Inf
// above Max, and NaN for NaN.
func Exp(x float32) float32 {
	switch {
	case x != x:
		return x
	case x < Min:
		return 0
	case x > Max:
		return float32(math.Inf(1))
	}
	kf := float32(math.RoundToEven(float64(float32(x * Log2E))))
	r := float32(x-float32(kf*Ln2Hi)) - float32(kf*Ln2Lo)
	p := Poly[0]
	for _, c := range Poly[1:] {
		p = float32(p*r) + c
	}
	p = float32(p*r) + 1
	p = float32(p*r) + 1
	k := int32(kf) // in [-126, 128]
	if k > 127 {
		return float32(float32(p*2) * pow2(127))
	}
	// float32(): the result must not fuse into a caller's add once inlined.
	return float32(p * pow2(k))
}

// pow2 is 2^k for k in [-126, 127].
func pow2(k int32) float32 { return math.Float32frombits(uint32(k+127) << 23) }

// SignBit is a float32's sign bit: x | SignBit is -|x|.
const SignBit = 1 << 31

// Silu returns x·sigmoid(x) = x / (1 + e^-x) (PyTorch's silu, the SwiGLU
// gate of NomicBERT) within 4 ulp. With t = Exp(-|x|) in (0, 1], never
// overflowing:
//
//	silu(x) = x / (1 + t)       for x >= 0
//	        = (x·t) / (1 + t)   for x < 0 (and NaN)
//
// Each step rounds once: asmgen/expavo's SiluZMM and SiluYMM are these
// operations in this order. Silu(x) is -0 below Min (where t flushes to
// 0; the true value is under 1e-36 in magnitude there), x itself above
// about 17, and NaN for NaN and for -Inf (as PyTorch's -Inf / (1 + Inf)).
func Silu(x float32) float32 {
	t := Exp(math.Float32frombits(math.Float32bits(x) | SignBit))
	n := x
	if !(x >= 0) {
		n = float32(x * t)
	}
	return float32(n / float32(1+t))
}

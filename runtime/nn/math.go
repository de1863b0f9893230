package nn

import "math"

// Float32 exp and tanh with a fixed operation order, the same bits on every
// architecture (see the package comment on why not math.Exp).

// Constants of Exp (duplicated in asmgen/nn/tables.go for the AVX-512
// softmax; TestAttnSoftmaxExp compares the two): log2(e); ln2 split into a 9-bit high part (k*expLn2Hi
// is exact for |k| < 2^15) and the rest; the range where exp(x) is a
// normal float32 or overflows.
const (
	expLog2E float32 = 1.44269504088896341
	expLn2Hi float32 = 0.693359375
	expLn2Lo float32 = -2.12194440e-4
	// expMin: below it exp(x) < 2^-126 (the smallest normal) and Exp
	// returns 0, flushing what would be subnormal; softmax weights that
	// small are 1e-38 of the row's largest and change no sum.
	expMin float32 = -87.33654
	// expMax: above it exp(x) overflows float32.
	expMax float32 = 88.72283
)

// expPoly are the Taylor coefficients of exp(r) for |r| <= ln2/2, highest
// degree first, down to degree 2: truncation after degree 7 leaves a
// relative error of 5e-9, a tenth of a float32 ulp.
var expPoly = [...]float32{1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5}

// Exp returns e**x in float32 within 2 ulp: k = roundEven(x*log2e),
// r = (x - k*ln2Hi) - k*ln2Lo, exp = P(r) * 2^k with P the degree-7 Taylor
// polynomial in Horner form. It returns 0 below -87.33654 (including -Inf),
// +Inf above 88.72283, and NaN for NaN.
func Exp(x float32) float32 {
	switch {
	case x != x:
		return x
	case x < expMin:
		return 0
	case x > expMax:
		return float32(math.Inf(1))
	}
	kf := float32(math.RoundToEven(float64(float32(x * expLog2E))))
	r := float32(x-float32(kf*expLn2Hi)) - float32(kf*expLn2Lo)
	p := expPoly[0]
	for _, c := range expPoly[1:] {
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

// tanhSmall is where Tanh switches from its Taylor series to the exp form,
// and tanhOne where tanh(x) rounds to ±1 in float32 (tanh(9.01) = 1 - 3e-8).
const (
	tanhSmall float32 = 0.5
	tanhOne   float32 = 9.01
)

// tanhPoly are the Taylor coefficients of tanh(x)/x in powers of x^2,
// highest first: for |x| < 0.5 the first omitted term is below 1e-9 of
// the result.
var tanhPoly = [...]float32{
	6404582.0 / 10854718875, -929569.0 / 638512875, 21844.0 / 6081075, -1382.0 / 155925,
	62.0 / 2835, -17.0 / 315, 2.0 / 15, -1.0 / 3, 1,
}

// Tanh returns tanh(x) in float32 within a few ulp: an odd Taylor series
// for |x| < 0.5, 1 - 2/(Exp(2|x|)+1) with x's sign up to 9.01, and ±1
// beyond. Tanh(±0) = ±0 and Tanh(NaN) = NaN.
func Tanh(x float32) float32 {
	a := math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
	switch {
	case x != x:
		return x
	case a < tanhSmall:
		x2 := float32(x * x)
		p := tanhPoly[0]
		for _, c := range tanhPoly[1:] {
			p = float32(p*x2) + c
		}
		return float32(x * p)
	case a < tanhOne:
		t := 1 - 2/(Exp(float32(2*a))+1)
		if x < 0 {
			return -t
		}
		return t
	case x < 0:
		return -1
	}
	return 1
}

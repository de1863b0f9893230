package nn

import (
	"math"

	"github.com/sqc-dev/sqc/internal/expf"
)

// Float32 tanh with a fixed operation order, the same bits on every
// architecture (see the package comment on why not math.Tanh); its exp is
// internal/expf's, as the softmax's.

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
// for |x| < 0.5, 1 - 2/(expf.Exp(2|x|)+1) with x's sign up to 9.01, and ±1
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
		t := 1 - 2/(expf.Exp(float32(2*a))+1)
		if x < 0 {
			return -t
		}
		return t
	case x < 0:
		return -1
	}
	return 1
}

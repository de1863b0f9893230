package gelu

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// geluRef is 0.5*x*(1+erf(x/sqrt2)) in float64, written with erfc so that
// it stays accurate for negative x.
func geluRef(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }

// geluTanhRef is 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))) in float64,
// written as x/(1+exp(-2z)) (1+tanh(z) = 2/(1+exp(-2z))) so that it stays
// accurate for negative x, where 1+tanh(z) cancels.
func geluTanhRef(x float64) float64 {
	z := math.Sqrt(2/math.Pi) * (x + 0.044715*x*x*x)
	return x / (1 + math.Exp(-2*z))
}

// forms are the two GELUs, each with its full and its short table: name,
// float64 reference, table and its degree, float32 function, and the
// bounds TestAccuracy holds it to (absolute; relative for x > -1). The
// short tables feed a u8 quantiser, which sees the absolute error: their
// relative bound is loose near 0, where the degree-3 fit's slope is off by
// 2e-4.
var forms = []struct {
	name           string
	ref            func(float64) float64
	table          *Table
	degree         int
	f              func(float32) float32
	absTol, relTol float64
}{
	{"erf", geluRef, &Coeffs, Degree, Gelu, 3e-7, 1e-6},
	{"tanh", geluTanhRef, &TanhCoeffs, Degree, GeluTanh, 3e-7, 1e-6},
	{"erf-short", geluRef, &ShortCoeffs, ShortDegree, GeluShort, ShortMaxError, 3e-4},
	{"tanh-short", geluTanhRef, &ShortTanhCoeffs, ShortDegree, GeluTanhShort, ShortMaxError, 3e-4},
}

// TestAccuracy bounds each form's absolute error against its float64
// function densely over [-8, 8] (beyond, both are max(x, 0) to within
// 1e-14), and its relative error where the result is not tiny: a few
// float32 ulps.
func TestAccuracy(t *testing.T) {
	for _, f := range forms {
		absTol, relTol := f.absTol, f.relTol
		t.Run(f.name, func(t *testing.T) {
			worstAbs, worstAbsX, worstRel, worstRelX := 0.0, float32(0), 0.0, float32(0)
			for i := -1600000; i <= 1600000; i++ {
				x := float32(i) * 5e-6
				ref, got := f.ref(float64(x)), float64(f.f(x))
				e := math.Abs(got - ref)
				if e > worstAbs {
					worstAbs, worstAbsX = e, x
				}
				if x > -1 { // |f| >= 0.15|x| here: relative accuracy is meaningful
					if r := e / math.Abs(ref); ref != 0 && r > worstRel {
						worstRel, worstRelX = r, x
					}
				}
			}
			t.Logf("max abs error %.3g at x = %g, max rel error (x > -1) %.3g at x = %g", worstAbs, worstAbsX, worstRel, worstRelX)
			if worstAbs > absTol {
				t.Errorf("max abs error %.3g at x = %g, want <= %g", worstAbs, worstAbsX, absTol)
			}
			if worstRel > relTol {
				t.Errorf("max rel error %.3g at x = %g, want <= %g", worstRel, worstRelX, relTol)
			}
			for _, x := range []float32{1e-30, 1e-10, -1e-10, 1e-4} { // f(x) ~ x/2
				if got, ref := float64(f.f(x)), f.ref(float64(x)); math.Abs(got-ref) > relTol*math.Abs(ref) {
					t.Errorf("f(%g) = %g, want %g", x, got, ref)
				}
			}
			for _, x := range []float64{5.8, 6, 8, 10} { // the zero interval is right
				if g := math.Abs(f.ref(-x)); g > 2e-8 {
					t.Errorf("|f(%g)| = %g, want < 2e-8 (interval 15 is all zeros)", -x, g)
				}
			}
		})
	}
}

func TestSpecialValues(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) { testSpecialValues(t, f.f) })
	}
}

func testSpecialValues(t *testing.T, gelu func(float32) float32) {
	for _, c := range []struct{ x, want float32 }{
		{0, 0},
		{float32(math.Copysign(0, -1)), 0},
		{float32(math.Inf(1)), float32(math.Inf(1))},
		{float32(math.Inf(-1)), 0},
		{100, 100},
		{5.8, 5.8},
		{-6, 0},
		{-1e30, 0},
	} {
		if got := gelu(c.x); got != c.want {
			t.Errorf("f(%g) = %g, want %g", c.x, got, c.want)
		}
	}
	if got := gelu(float32(math.NaN())); !math.IsNaN(float64(got)) {
		t.Errorf("f(NaN) = %g, want NaN", got)
	}
}

// TestFMA32 compares FMA32 with a*b+c rounded once by math/big, on random
// operands and on cases built to sit just off a float32 rounding midpoint
// (where rounding through float64 to nearest would round twice wrongly).
func TestFMA32(t *testing.T) {
	exact := func(a, b, c float32) float32 {
		p := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		p.Mul(p, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
		p.Add(p, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
		f, _ := p.Float32() // nearest even
		return f
	}
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(a, b, c float32) {
		if got, want := FMA32(a, b, c), exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("FMA32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	for range 200000 {
		a := math.Float32frombits(rng.Uint32() & 0x7FFFFFFF)
		b := float32(rng.NormFloat64())
		c := float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(60)-30)))
		if math.IsInf(float64(a), 0) || math.IsNaN(float64(a)) || math.Abs(float64(a)) > 1e30 {
			continue
		}
		check(a, b, c)
		check(b, float32(rng.NormFloat64()), c)
	}
	// a*b = 2^-24 - 2^-64 and c = 1 + 2^-23: the exact sum lies 2^-64
	// below the midpoint between two float32 and rounds down to c; rounded
	// to float64 first it becomes the midpoint itself, and ties to even
	// then round it up: float32(math.FMA(a, b, c)) gets this wrong.
	a, b, c := float32(1+0x1p-20), float32(0x1p-24*(1-0x1p-20)), float32(1+0x1p-23)
	if naive, want := float32(math.FMA(float64(a), float64(b), float64(c))), exact(a, b, c); naive == want {
		t.Fatalf("the double-rounding case is not one: %g", naive)
	}
	check(a, b, c)
	check(-a, b, -c)
}

// TestTableIndex checks that the tables are what Eval's interval index
// and offset expect: finite coefficients, an all-zero last interval (the
// cutoff at 5.8), no constant term in interval 0, and zeros above the
// form's degree.
func TestTableIndex(t *testing.T) {
	for _, f := range forms {
		c := f.table
		for i := range Intervals - 1 {
			for k := range c {
				if math.IsNaN(float64(c[k][i])) || math.IsInf(float64(c[k][i]), 0) {
					t.Fatalf("%s: coefficient %d of interval %d is %g", f.name, k, i, c[k][i])
				}
			}
		}
		for k := range c {
			if c[k][Intervals-1] != 0 {
				t.Errorf("%s: table[%d][%d] = %g, want 0 (the interval past the cutoff)", f.name, k, Intervals-1, c[k][Intervals-1])
			}
		}
		if c[0][0] != 0 {
			t.Errorf("%s: table[0][0] = %g, want 0 (f(x) ~ x/2 near 0 keeps its relative accuracy)", f.name, c[0][0])
		}
		for k := f.degree + 1; k <= Degree; k++ {
			if c[k] != ([Intervals]float32{}) {
				t.Errorf("%s: table[%d] = %v, want zeros above degree %d", f.name, k, c[k], f.degree)
			}
		}
	}
}

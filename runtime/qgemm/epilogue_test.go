package qgemm

import (
	"math"
	"testing"
)

// geluRef is 0.5*x*(1+erf(x/sqrt2)) in float64, written with erfc so that
// it keeps its relative accuracy for negative x (1+erf(x/sqrt2) cancels:
// at x = -10 it is 1.5e-23, far below float64's epsilon).
func geluRef(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }

// TestGeluAccuracy checks geluF32's relative error against the erf GELU
// over every 997th float32 in [-geluUMax, 40] and densely around 0, where
// the result is a normal float32 (smaller results are rounded to
// subnormals, whose relative precision is lower by construction).
func TestGeluAccuracy(t *testing.T) {
	const tol = 1e-6
	worst, worstX := 0.0, float32(0)
	check := func(x float32) {
		ref := geluRef(float64(x))
		if math.Abs(ref) < 0x1p-126 {
			return
		}
		got := float64(geluF32(x))
		if e := math.Abs(got-ref) / math.Abs(ref); e > worst {
			worst, worstX = e, x
		}
	}
	for bits := uint32(0); bits <= math.Float32bits(40); bits += 997 {
		x := math.Float32frombits(bits)
		check(x)
		if x <= geluUMax {
			check(-x)
		}
	}
	for i := -100000; i <= 100000; i++ {
		check(float32(i) * 1e-5)
	}
	t.Logf("max relative error %.3g at x = %g", worst, worstX)
	if worst > tol {
		t.Errorf("max relative error %.3g at x = %g, want <= %g", worst, worstX, tol)
	}
	// The erf form itself, where float64 has no cancellation problem.
	for _, x := range []float32{-3, -1, -0.5, 0, 0.25, 1, 2.5, 7} {
		ref := 0.5 * float64(x) * (1 + math.Erf(float64(x)/math.Sqrt2))
		if got := float64(geluF32(x)); math.Abs(got-ref) > tol*math.Abs(ref) {
			t.Errorf("gelu(%g) = %g, want %g", x, got, ref)
		}
	}
}

func TestGeluSpecialValues(t *testing.T) {
	for _, c := range []struct{ x, want float32 }{
		{0, 0},
		{float32(math.Inf(1)), float32(math.Inf(1))},
		{100, 100},
		{-13, 0}, // below -geluUMax the result is -0
		{-1e30, 0},
	} {
		if got := geluF32(c.x); got != c.want {
			t.Errorf("gelu(%g) = %g, want %g", c.x, got, c.want)
		}
	}
	if got := geluF32(float32(math.NaN())); !math.IsNaN(float64(got)) {
		t.Errorf("gelu(NaN) = %g, want NaN", got)
	}
}

func TestQuantizeU8(t *testing.T) {
	for _, c := range []struct {
		v, inv float32
		zp     int32
		want   uint8
	}{
		{0, 1, 128, 128},
		{2.5, 1, 0, 2}, // ties to even
		{3.5, 1, 0, 4},
		{-0.5, 1, 1, 1}, // -0 + 1
		{-1.5, 1, 10, 8},
		{1e30, 1, 0, 255},
		{-1e30, 1, 200, 0},
		{float32(math.NaN()), 1, 100, 0}, // NaN clamps to -quantClamp
		{127.4, 1, 128, 255},
		{-128.6, 1, 128, 0},
	} {
		if got := quantizeU8(c.v, c.inv, c.zp); got != c.want {
			t.Errorf("quantizeU8(%g, %g, %d) = %d, want %d", c.v, c.inv, c.zp, got, c.want)
		}
	}
}

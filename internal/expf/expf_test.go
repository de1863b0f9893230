package expf

import (
	"math"
	"testing"
)

// ulpDiff is the distance in float32 steps between a and b rounded to
// float32.
func ulpDiff(a float32, b float64) int64 {
	x, y := int64(math.Float32bits(a)), int64(math.Float32bits(float32(b)))
	if (x < 0x80000000) != (y < 0x80000000) { // opposite signs: distance through 0
		return (x & 0x7fffffff) + (y & 0x7fffffff)
	}
	return max(x-y, y-x)
}

func TestExpAccuracy(t *testing.T) {
	worst, worstX := int64(0), float32(0)
	for bits := uint32(0); bits < 0xffffffff-9973; bits += 9973 {
		x := math.Float32frombits(bits)
		if x != x || x < Min || x > Max {
			continue
		}
		ref := math.Exp(float64(x))
		if ref < 0x1p-126 || ref > math.MaxFloat32 {
			continue
		}
		if d := ulpDiff(Exp(x), ref); d > worst {
			worst, worstX = d, x
		}
	}
	t.Logf("max error %d ulp at x = %g", worst, worstX)
	if worst > 2 {
		t.Errorf("Exp error %d ulp at x = %g (Exp %g, math.Exp %g), want <= 2", worst, worstX, Exp(worstX), math.Exp(float64(worstX)))
	}
}

func TestExpSpecialValues(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct{ x, want float32 }{
		{0, 1}, {-inf, 0}, {inf, inf}, {-88, 0}, {-1e30, 0}, {89, inf}, {-math.MaxFloat32, 0},
	} {
		if got := Exp(c.x); got != c.want {
			t.Errorf("Exp(%g) = %g, want %g", c.x, got, c.want)
		}
	}
	if got := Exp(float32(math.NaN())); got == got {
		t.Errorf("Exp(NaN) = %g, want NaN", got)
	}
	if got := Exp(88.72); got > math.MaxFloat32 || got < 3.39e38 {
		t.Errorf("Exp(88.72) = %g, want about 3.397e38", got)
	}
}

// silu64 is x / (1 + e^-x) in float64.
func silu64(x float64) float64 { return x / (1 + math.Exp(-x)) }

// TestSiluAccuracy: within 4 ulp of the float64 SiLU wherever that is a
// normal float32 and x is above Min (below it Silu flushes to -0, tested
// in TestSiluSpecialValues), on a sweep of every 997th float32 up to 100
// in magnitude and a fine grid over [-20, 20].
func TestSiluAccuracy(t *testing.T) {
	worst, worstX := int64(0), float32(0)
	check := func(x float32) {
		ref := silu64(float64(x))
		if x < Min || math.Abs(ref) < 0x1p-126 {
			return
		}
		if d := ulpDiff(Silu(x), ref); d > worst {
			worst, worstX = d, x
		}
	}
	for bits := uint32(0); bits <= math.Float32bits(100); bits += 997 {
		x := math.Float32frombits(bits)
		check(x)
		check(-x)
	}
	for i := -400000; i <= 400000; i++ {
		check(float32(i) * 5e-5)
	}
	t.Logf("max error %d ulp at x = %g", worst, worstX)
	if worst > 4 {
		t.Errorf("Silu error %d ulp at x = %g (Silu %g, float64 %g), want <= 4", worst, worstX, Silu(worstX), silu64(float64(worstX)))
	}
}

func TestSiluSpecialValues(t *testing.T) {
	inf := float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	for _, c := range []struct{ x, want float32 }{
		{0, 0}, {negZero, negZero}, {inf, inf}, {-88, negZero}, {-1e30, negZero}, {30, 30}, {1e30, 1e30},
	} {
		if got := Silu(c.x); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("Silu(%g) = %g (bits %#x), want %g (bits %#x)", c.x, got, math.Float32bits(got), c.want, math.Float32bits(c.want))
		}
	}
	// NaN for NaN, and for -Inf as PyTorch's -inf / (1 + inf).
	for _, x := range []float32{float32(math.NaN()), -inf} {
		if got := Silu(x); got == got {
			t.Errorf("Silu(%g) = %g, want NaN", x, got)
		}
	}
}

func BenchmarkExp(b *testing.B) {
	xs := make([]float32, 4096)
	for i := range xs {
		xs[i] = -20 * float32(i) / float32(len(xs))
	}
	var s float32
	for b.Loop() {
		for _, x := range xs {
			s += Exp(x)
		}
	}
	b.SetBytes(int64(4 * len(xs)))
	_ = s
}

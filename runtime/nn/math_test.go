package nn

import (
	"math"
	"testing"
)

func TestExpAccuracy(t *testing.T) {
	worst, worstX := int64(0), float32(0)
	for bits := uint32(0); bits < 0xffffffff-9973; bits += 9973 {
		x := math.Float32frombits(bits)
		if x != x || x < expMin || x > expMax {
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

func TestTanhAccuracy(t *testing.T) {
	worst, worstX := int64(0), float32(0)
	check := func(x float32) {
		if d := ulpDiff(Tanh(x), math.Tanh(float64(x))); d > worst {
			worst, worstX = d, x
		}
	}
	for bits := uint32(0); bits <= math.Float32bits(20); bits += 997 {
		x := math.Float32frombits(bits)
		check(x)
		check(-x)
	}
	for i := -200000; i <= 200000; i++ {
		check(float32(i) * 5e-5)
	}
	t.Logf("max error %d ulp at x = %g", worst, worstX)
	if worst > 4 {
		t.Errorf("Tanh error %d ulp at x = %g (Tanh %g, math.Tanh %g), want <= 4", worst, worstX, Tanh(worstX), math.Tanh(float64(worstX)))
	}
	negZero := float32(math.Copysign(0, -1))
	if got := Tanh(negZero); math.Float32bits(got) != math.Float32bits(negZero) {
		t.Errorf("Tanh(-0) = %g, want -0", got)
	}
	for _, c := range []struct{ x, want float32 }{{float32(math.Inf(1)), 1}, {float32(math.Inf(-1)), -1}, {50, 1}, {-50, -1}} {
		if got := Tanh(c.x); got != c.want {
			t.Errorf("Tanh(%g) = %g, want %g", c.x, got, c.want)
		}
	}
}

func BenchmarkExp(b *testing.B) {
	xs := randSlice(1, 4096, -20, 0)
	var s float32
	for b.Loop() {
		for _, x := range xs {
			s += Exp(x)
		}
	}
	b.SetBytes(int64(4 * len(xs)))
	_ = s
}

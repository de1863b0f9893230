package nn

import (
	"math"
	"testing"
)

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

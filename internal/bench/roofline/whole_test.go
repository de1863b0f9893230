package roofline

import (
	"math"
	"testing"
)

func TestWhole(t *testing.T) {
	p := &Profile{
		Points:          []Point{{Count: 12, Ops: 2e9, Seconds: 1e-3}, {Count: 1, Ops: 1e9, Seconds: 2e-3}},
		ReplayedSeconds: 14e-3,
	}
	cs := []Ceiling{
		{Name: "VNNI INT8", Kind: Compute, Value: 2000},
		{Name: "L2", Kind: Bandwidth, Value: 9000}, // a bandwidth is no compute peak, however large
		{Name: "AMX INT8", Kind: Compute, Value: 10000},
		{Name: "FP32", Kind: Compute, Value: 500},
	}
	w := Whole(p, cs, 20e-3)
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("Ops", w.Ops, 25e9)
	near("GOPS", w.GOPS, 1250)
	near("Share", w.Share, 0.125)
	near("Between", w.Between, 0.3)
	if w.InPass != 0 || w.Outside != 0 || w.Refill != 0 {
		t.Errorf("no passes timed step by step, yet a split of Between: %+v", w)
	}
	// Timed within passes the steps take 18 ms: 4 ms more than replayed
	// alone (20% of the pass); whole passes took 1 ms (5%) more than
	// those timed step by step. The remaining 1 ms is noise between the
	// measurements, not reported as outside the steps.
	p.InPassSeconds, p.Passes, p.OutsideSeconds = 18e-3, 5, 1e-3
	p.Loops, p.LoopWaitSeconds = 65, 0.6e-3
	w = Whole(p, cs, 20e-3)
	near("Loops", w.Loops, 65)
	near("LoopWait", w.LoopWait, 0.03)
	near("InPass", w.InPass, 0.9)
	near("Outside", w.Outside, 0.05)
	near("Refill", w.Refill, 0.2)
	p.OutsideSeconds = -0.5e-3 // whole passes faster than traced ones: noise
	if w := Whole(p, cs, 20e-3); w.Outside != 0 {
		t.Errorf("a negative difference gives Outside %v, want 0", w.Outside)
	}
	p.OutsideSeconds = 1e-3
	if w.Ceiling != "AMX INT8" {
		t.Errorf("ceiling %q, want the fastest compute one, AMX INT8", w.Ceiling)
	}
	if z := Whole(p, cs, 0); z.GOPS != 0 || z.Share != 0 {
		t.Errorf("zero forward time gives %+v", z)
	}
}

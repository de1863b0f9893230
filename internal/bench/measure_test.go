package bench

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

var allocSink [][]byte

func TestMeasureExactRuns(t *testing.T) {
	calls := 0
	m, err := Measure(func() error {
		calls++
		allocSink = append(allocSink[:0], make([]byte, 1<<16)) // one heap allocation per run
		return nil
	}, MeasureOptions{Warmup: 2, Runs: 5})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 7 || len(m.TimesMs) != 5 || m.Warmup != 2 || m.LatencyMs.N != 5 {
		t.Errorf("calls %d, timed %d, warm-up %d, summary n %d; want 7, 5, 2, 5", calls, len(m.TimesMs), m.Warmup, m.LatencyMs.N)
	}
	if m.AllocsPerRun < 1 || m.BytesPerRun < 1<<16 {
		t.Errorf("allocations per run %.1f (%.0f bytes), want >= 1 (>= 65536 bytes)", m.AllocsPerRun, m.BytesPerRun)
	}
	for _, ms := range m.TimesMs {
		if ms < 0 {
			t.Errorf("negative time %v", ms)
		}
	}
}

func TestMeasureBudget(t *testing.T) {
	calls := 0
	m, err := Measure(func() error { calls++; return nil }, MeasureOptions{Budget: time.Nanosecond, MinRuns: 4, MaxRuns: 50})
	if err != nil {
		t.Fatal(err)
	}
	// A budget already spent still gives MinRuns runs, and no warm-up was asked for.
	if len(m.TimesMs) < 4 || len(m.TimesMs) > 50 || calls != len(m.TimesMs) {
		t.Errorf("%d timed runs of %d calls, want 4..50 and no warm-up", len(m.TimesMs), calls)
	}
	m, err = Measure(func() error { return nil }, MeasureOptions{Budget: time.Hour, MaxRuns: 7})
	if err != nil || len(m.TimesMs) != 7 {
		t.Errorf("MaxRuns 7 under a long budget: %d runs, err %v", len(m.TimesMs), err)
	}
}

func TestMeasureErrors(t *testing.T) {
	boom := errors.New("boom")
	n := 0
	_, err := Measure(func() error {
		n++
		if n == 3 {
			return boom
		}
		return nil
	}, MeasureOptions{Warmup: 1, Runs: 5})
	if !errors.Is(err, boom) {
		t.Errorf("error %v, want boom", err)
	}
	for _, o := range []MeasureOptions{{Warmup: -1}, {Runs: -2}, {Budget: -time.Second}, {MinRuns: 5, MaxRuns: 2}} {
		if _, err := Measure(func() error { return nil }, o); err == nil {
			t.Errorf("Measure(%+v) accepted bad options", o)
		}
	}
}

func TestPeakRSS(t *testing.T) {
	rss, ok := PeakRSS()
	if runtime.GOOS == "linux" && !ok {
		t.Error("peak RSS unknown on Linux")
	}
	if ok && rss < 1<<20 {
		t.Errorf("peak RSS %d bytes: a Go test binary uses more than 1 MiB", rss)
	}
}

package bench

import (
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/sqc-dev/sqc/compiler"
)

// Defaults of MeasureOptions.
const (
	// DefaultWarmup untimed runs let buffers be allocated, pages touched
	// and caches filled before timing.
	DefaultWarmup = 2
	// DefaultBudget is how long timed runs continue when Runs is 0.
	DefaultBudget = 3 * time.Second
	// DefaultMinRuns and DefaultMaxRuns bound the timed runs of a budget.
	DefaultMinRuns = 3
	DefaultMaxRuns = 10000
)

// MeasureOptions control Measure.
type MeasureOptions struct {
	// Warmup untimed runs come first (callers usually pass
	// DefaultWarmup; 0 means none).
	Warmup int
	// Runs, if > 0, is the exact number of timed runs; otherwise runs
	// continue until Budget (DefaultBudget when 0) has passed, at least
	// MinRuns and at most MaxRuns times.
	Runs             int
	Budget           time.Duration
	MinRuns, MaxRuns int
	// CPUProfile, if set, receives a pprof CPU profile of the timed runs
	// only (not the build nor the warm-up).
	CPUProfile io.Writer
}

// Validate reports negative or inconsistent settings.
func (o MeasureOptions) Validate() error {
	switch {
	case o.Warmup < 0:
		return fmt.Errorf("%w: warm-up runs %d < 0", compiler.ErrInvalidRequest, o.Warmup)
	case o.Runs < 0:
		return fmt.Errorf("%w: runs %d < 0", compiler.ErrInvalidRequest, o.Runs)
	case o.Budget < 0:
		return fmt.Errorf("%w: time budget %v < 0", compiler.ErrInvalidRequest, o.Budget)
	case o.MinRuns < 0 || o.MaxRuns < 0 || (o.MaxRuns > 0 && o.MinRuns > o.MaxRuns):
		return fmt.Errorf("%w: runs between %d and %d", compiler.ErrInvalidRequest, o.MinRuns, o.MaxRuns)
	}
	return nil
}

// Measurement is what Measure observed.
type Measurement struct {
	TimesMs   []float64 // wall-clock milliseconds of each timed run, in order
	LatencyMs Summary
	Warmup    int
	// AllocsPerRun and BytesPerRun are heap allocations (count, bytes) per
	// timed run, from runtime.MemStats before and after all timed runs
	// (so they include anything else the process allocated meanwhile,
	// e.g. worker goroutines of the engine).
	AllocsPerRun, BytesPerRun float64
	// CPUMsPerRun is the process's CPU time (user + system, every thread)
	// per timed run in milliseconds, or -1 where unknown. Unlike wall time
	// it does not grow when other processes take the cores, so on a loaded
	// machine it compares engines better (a run on 2 busy threads costs
	// about twice its latency).
	CPUMsPerRun float64
	// Elapsed is the wall time of the timed runs together.
	Elapsed time.Duration
}

// Measure calls run Warmup times untimed, then times it as opts say. The
// first error stops it.
func Measure(run func() error, opts MeasureOptions) (*Measurement, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	warm := opts.Warmup
	budget, minRuns, maxRuns := opts.Budget, opts.MinRuns, opts.MaxRuns
	if budget == 0 {
		budget = DefaultBudget
	}
	if minRuns == 0 {
		minRuns = DefaultMinRuns
	}
	if maxRuns == 0 {
		maxRuns = max(DefaultMaxRuns, minRuns)
	}
	if opts.Runs > 0 {
		minRuns, maxRuns, budget = opts.Runs, opts.Runs, 0
	}
	for i := 0; i < warm; i++ {
		if i == warm-1 {
			// Start from a clean heap, so that a GC cycle left over from
			// warm-up is not charged to the timed runs; the last warm-up
			// run then refills what the GC emptied (the kernels' sync.Pool
			// caches of per-call state), so the counts are steady state's.
			runtime.GC()
		}
		if err := run(); err != nil {
			return nil, fmt.Errorf("warm-up run %d: %w", i+1, err)
		}
	}
	if warm == 0 {
		runtime.GC()
	}
	m := &Measurement{Warmup: warm, TimesMs: make([]float64, 0, min(maxRuns, 1024))}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if opts.CPUProfile != nil {
		if err := pprof.StartCPUProfile(opts.CPUProfile); err != nil {
			return nil, fmt.Errorf("CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	cpuBefore := ProcessCPU()
	start := time.Now()
	for n := 0; n < maxRuns; n++ {
		if n >= minRuns && time.Since(start) >= budget {
			break
		}
		t := time.Now()
		if err := run(); err != nil {
			return nil, fmt.Errorf("timed run %d: %w", n+1, err)
		}
		m.TimesMs = append(m.TimesMs, float64(time.Since(t).Nanoseconds())/1e6)
	}
	m.Elapsed = time.Since(start)
	cpuAfter := ProcessCPU()
	runtime.ReadMemStats(&after)
	runs := float64(len(m.TimesMs))
	m.CPUMsPerRun = -1
	if cpuBefore >= 0 && cpuAfter >= 0 {
		m.CPUMsPerRun = float64((cpuAfter - cpuBefore).Nanoseconds()) / 1e6 / runs
	}
	m.AllocsPerRun = float64(after.Mallocs-before.Mallocs) / runs
	m.BytesPerRun = float64(after.TotalAlloc-before.TotalAlloc) / runs
	m.LatencyMs = Summarize(m.TimesMs)
	return m, nil
}

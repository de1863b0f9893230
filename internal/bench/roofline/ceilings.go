package roofline

import (
	"bytes"
	"fmt"
	"time"

	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Kind of a ceiling.
const (
	Compute   = "compute"   // GOP/s, a horizontal roof
	Bandwidth = "bandwidth" // GB/s, a diagonal roof
)

// Ceiling is one measured roof.
type Ceiling struct {
	Name    string  `json:"name"`  // "AMX INT8", "VNNI INT8", "FP32", "L2", "DRAM"
	Kind    string  `json:"kind"`  // Compute or Bandwidth
	Value   float64 `json:"value"` // GOP/s (Compute) or GB/s (Bandwidth)
	Threads int     `json:"threads"`
	How     string  `json:"how"`
}

// CeilingOptions control MeasureCeilings.
type CeilingOptions struct {
	Threads int           // threads that run at once (>= 1)
	Budget  time.Duration // per ceiling (DefaultCeilingBudget when 0)
	// L2Bytes is the per-thread buffer of the L2 sweep, DRAMBytes the
	// per-thread buffer of the DRAM sweep (defaults below).
	L2Bytes, DRAMBytes int
}

// Defaults of CeilingOptions.
const (
	DefaultCeilingBudget = 300 * time.Millisecond
	// DefaultL2Bytes is half of the smallest per-core L2 sqc targets (1
	// MiB on AMD Zen 4/5; 2 MiB on Sapphire/Emerald Rapids) and 10x the
	// largest L1d (48 KiB), so the sweep runs from L2.
	DefaultL2Bytes = 512 << 10
	// DefaultDRAMBytes is 4x a 32 MiB L3 per thread.
	DefaultDRAMBytes = 128 << 20
	// peakBurst is the wall time one peak-loop call should take: long
	// enough that starting the goroutines is noise (< 1%).
	peakBurst = 2 * time.Millisecond
)

// peakNames names the ceiling of each qgemm.PeakLoop; both FP32 loops
// are "FP32" (a CPU runs one of them), the roof of every non-GEMM op.
var peakNames = map[string]string{"amx": "AMX INT8", "vnni": "VNNI INT8", "avx2": "AVX2 INT8", "fp32": "FP32", "fp32-ymm": "FP32"}

var peakHow = map[string]string{
	"amx":      "register-only TDPBUSD loop",
	"vnni":     "register-only VPDPBUSD zmm loop",
	"avx2":     "register-only VPMADDWD + VPADDD ymm loop (u8 x s8 widened to int16)",
	"fp32":     "register-only VFMADD231PS zmm loop",
	"fp32-ymm": "register-only VFMADD231PS ymm loop",
}

// MeasureCeilings measures the compute ceilings of runtime/qgemm's peak
// loops this process may run and the L2 and DRAM read bandwidths, all
// with o.Threads threads at once.
func MeasureCeilings(o CeilingOptions) ([]Ceiling, error) {
	if o.Threads < 1 {
		return nil, fmt.Errorf("roofline: %d threads", o.Threads)
	}
	if o.Budget == 0 {
		o.Budget = DefaultCeilingBudget
	}
	if o.L2Bytes == 0 {
		o.L2Bytes = DefaultL2Bytes
	}
	if o.DRAMBytes == 0 {
		o.DRAMBytes = DefaultDRAMBytes
	}
	var cs []Ceiling
	for _, l := range qgemm.PeakLoops() {
		iters := calibrateIters(l)
		ops := l.OpsPerIter * float64(iters)
		r := rate(o.Threads, o.Budget, 3, func(int) float64 { l.Run(iters); return ops })
		cs = append(cs, Ceiling{Name: peakNames[l.Name], Kind: Compute, Value: r / 1e9, Threads: o.Threads,
			How: peakHow[l.Name] + " (runtime/qgemm.PeakLoops)"})
	}
	for _, b := range []struct {
		name  string
		bytes int
	}{{"L2", o.L2Bytes}, {"DRAM", o.DRAMBytes}} {
		cs = append(cs, Ceiling{Name: b.name, Kind: Bandwidth, Value: readBandwidth(o.Threads, b.bytes, o.Budget) / 1e9,
			Threads: o.Threads, How: fmt.Sprintf("read sweep of %s per thread (bytes.Count / bytes.IndexByte, the better)", sizeText(b.bytes))})
	}
	return cs, nil
}

// calibrateIters finds an iteration count whose call takes about peakBurst.
func calibrateIters(l qgemm.PeakLoop) int {
	iters := 1 << 10
	for iters < 1<<30 {
		t := time.Now()
		l.Run(iters)
		if time.Since(t) >= peakBurst/4 {
			return iters * 4
		}
		iters *= 4
	}
	return iters
}

// readBandwidth is the best bytes/s of read sweeps over a per-thread
// buffer of size bytes: each round, every thread sweeps its buffer until
// it has read at least 8 MiB (several sweeps of an L2-sized buffer, one of
// a DRAM-sized one), with two SIMD byte loops of the standard library.
func readBandwidth(threads, size int, budget time.Duration) float64 {
	bufs := make([][]byte, threads)
	for i := range bufs {
		// Written, not just allocated: untouched pages all map to the
		// kernel's one zero page, which would be read from cache. The
		// needle (1) is never found, so every byte is read.
		bufs[i] = bytes.Repeat([]byte{0x5a}, size)
	}
	sweeps := max(1, (8<<20)/size)
	needle := []byte{1}
	found := make([]int, threads) // results kept, so no sweep is dead code
	best := 0.0
	for _, sweep := range []func([]byte) int{
		func(b []byte) int { return bytes.Count(b, needle) },
		func(b []byte) int { return bytes.IndexByte(b, 1) },
	} {
		r := rate(threads, budget/2, 2, func(w int) float64 {
			for range sweeps {
				found[w] += sweep(bufs[w])
			}
			return float64(sweeps * size)
		})
		best = max(best, r)
	}
	return best
}

func sizeText(b int) string {
	if b >= 1<<20 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%d KiB", b>>10)
}

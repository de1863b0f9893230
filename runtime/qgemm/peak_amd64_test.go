//go:build amd64 && !noasm

package qgemm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/runtime/cpu"
)

// cpuClock measures the CPU time of the benchmark's thread, so that a
// figure is not diluted when other processes share the (2) cores: GOP/s is
// per wall second, as usual, and GOP/cpu-s per second this thread ran.
type cpuClock struct{ start time.Duration }

// startCPUClock locks the goroutine to its thread (undone at the end of
// the benchmark) and starts the clock.
func startCPUClock(b *testing.B) *cpuClock {
	runtime.LockOSThread()
	b.Cleanup(runtime.UnlockOSThread)
	return &cpuClock{start: threadCPU()}
}

// reportRate adds per-wall-second and per-CPU-second rates of perIter
// units (in millions) per b.N.
func (c *cpuClock) reportRate(b *testing.B, perIter int, unit string) {
	total := float64(perIter) * float64(b.N) / 1e6
	b.ReportMetric(total/b.Elapsed().Seconds(), unit)
	if cpuTime := threadCPU() - c.start; cpuTime > 0 {
		b.ReportMetric(total/cpuTime.Seconds(), unit[:len(unit)-2]+"/cpu-s")
	}
}

// report adds the GOP/s and GOP/cpu-s metrics for ops operations per b.N.
func (c *cpuClock) report(b *testing.B, opsPerIter float64) {
	total := opsPerIter * float64(b.N)
	b.ReportMetric(total/b.Elapsed().Seconds()/1e9, "GOP/s")
	if cpuTime := threadCPU() - c.start; cpuTime > 0 {
		b.ReportMetric(total/cpuTime.Seconds()/1e9, "GOP/cpu-s")
	}
}

// Operations (2 per multiply-add) per iteration of the peak loops in
// asmgen/qgemm/peak.go.
const (
	peakVNNIOps = 24 * 16 * 4 * 2      // 24 VPDPBUSD zmm: 16 lanes x 4 byte pairs
	peakFP32Ops = 24 * 16 * 2          // 24 VFMADD231PS zmm
	peakAMXOps  = 8 * 16 * 16 * 64 * 2 // 8 TDPBUSD: 16x16 int32 from 64-byte rows
	peakIters   = 1 << 12              // iterations per call: ~0.1 ms
)

// BenchmarkPeak measures the register-only ceilings that the kernels'
// GOP/s should be compared with (1 core).
func BenchmarkPeak(b *testing.B) {
	f := cpu.Detect()
	for _, p := range []struct {
		name string
		ok   bool
		run  func(int)
		ops  float64
	}{
		{"amx", f.AMXInt8, peakAMX, peakAMXOps},
		{"vnni", f.AVX512VNNI, peakVNNI, peakVNNIOps},
		{"fp32", f.AVX512, peakFP32, peakFP32Ops},
		{"avx2", f.AVX2, peakAVX2, peakLoopOpsAVX2},
		{"fp32-ymm", f.AVX2 && f.FMA, peakFP32AVX2, peakLoopOpsFP32AVX2},
	} {
		b.Run(p.name, func(b *testing.B) {
			if !p.ok {
				b.Skipf("CPU lacks it (features: %v)", f)
			}
			clock := startCPUClock(b)
			for b.Loop() {
				p.run(peakIters)
			}
			clock.report(b, p.ops*peakIters)
		})
	}
}

// BenchmarkKernel calls each kernel directly the way the driver does:
// macro-blocks of MB rows x NB columns (NB = N: all N-blocks in one call),
// N-chunks outermost so a chunk's B strips stay in L2 across the row
// blocks, with one s32 scratch block reused by every call (as the driver's
// per-worker scratch is).
func BenchmarkKernel(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, kr := range asmKernels() {
		if strings.HasPrefix(kr.name, "amx-emulated") {
			continue // a test vehicle, hundreds of times slower than AMX
		}
		for _, s := range []struct{ m, n, k, mb, nb int }{
			{1024, 768, 768, 64, 768}, {1024, 768, 768, 128, 768}, {1024, 768, 768, 32, 768},
			{1024, 3072, 768, 64, 3072}, {1024, 3072, 768, 64, 768}, {1024, 3072, 768, 128, 1536},
			{1024, 768, 3072, 64, 768}, {1024, 768, 3072, 64, 384},
		} {
			name := fmt.Sprintf("%s/M=%d,N=%d,K=%d,MB=%d,NB=%d", kr.name, s.m, s.n, s.k, s.mb, s.nb)
			b.Run(name, func(b *testing.B) {
				if kr.why != "" {
					b.Skip(kr.why)
				}
				kp := RoundUp(s.k, KBlock)
				nblocks := RoundUp(s.n, NBlock) / NBlock
				a := make([]uint8, s.m*kp)
				for i := range a {
					a[i] = uint8(rng.Uint32())
				}
				bb := make([]int8, nblocks*16*kp)
				for i := range bb {
					bb[i] = int8(rng.Uint32())
				}
				chunk := s.nb / NBlock // N-blocks per call
				ldc := chunk * 16
				c := make([]int32, s.mb*ldc)
				clock := startCPUClock(b)
				for b.Loop() {
					for nb0 := 0; nb0 < nblocks; nb0 += chunk {
						for m0 := 0; m0 < s.m; m0 += s.mb {
							kr.k(&a[m0*kp], kp, &bb[nb0*16*kp], kp, &c[0], ldc, min(s.mb, s.m-m0), min(chunk, nblocks-nb0))
						}
					}
				}
				clock.report(b, 2*float64(s.m)*float64(nblocks*16)*float64(kp))
			})
		}
	}
}

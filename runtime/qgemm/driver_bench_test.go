package qgemm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// BenchmarkQGEMM times Engine.GEMM with every variant of this process on
// BERT-base shapes (M tokens; (N, K) of the QKV, attention output, FFN up
// and FFN down projections), on one thread and on all, each with its
// epilogue in a BERT layer (benchProblem: bias and the zero-point
// correction everywhere, GELU to u8 for the FFN up projection, the
// residual for the attention output and FFN down ones). GOP/s counts 2 ops per
// multiply-add of the logical M x N x K product per wall second;
// GOP/cpu-s per second of process CPU time (per core, so it compares with
// a one-core peak at any T); %peak is GOP/cpu-s as a share of the
// variant's register-only loop (BenchmarkPeak's), timed in the same run
// just before the variant's shapes, so the ratio issue 12 asks of the AMX
// GEMM (>= 70% on these shapes, epilogue included) is printed as is.
func BenchmarkQGEMM(b *testing.B) {
	threads := []int{1}
	if p := runtime.GOMAXPROCS(0); p > 1 {
		threads = append(threads, p)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, bv := range benchVariants() {
		v := bv.v
		peak := peakOf(v.ISA)
		for _, t := range threads {
			e, err := New(Options{Threads: t, Variant: &v})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			for _, m := range []int{128, 1024} {
				for _, nk := range [][2]int{{768, 768}, {2304, 768}, {3072, 768}, {768, 3072}} {
					s := gemmShape{m: m, n: nk[0], k: nk[1]}
					name := fmt.Sprintf("%s/%v/T=%d", bv.name, s, t)
					b.Run(name, func(b *testing.B) {
						a, pb, ep := benchProblem(b, rng, s)
						cpu0 := processCPU()
						for b.Loop() {
							if err := e.GEMM(a, s.m, pb.Kp, pb, ep); err != nil {
								b.Fatal(err)
							}
						}
						ops := 2 * float64(s.m*s.n*s.k) * float64(b.N)
						b.ReportMetric(ops/b.Elapsed().Seconds()/1e9, "GOP/s")
						if cpuTime := processCPU() - cpu0; cpuTime > 0 {
							// Per CPU-second of all threads: what one core
							// does while it runs, immune to the vCPUs being
							// descheduled (see isa-facts.md).
							b.ReportMetric(ops/cpuTime.Seconds()/1e9, "GOP/cpu-s")
							if peak > 0 {
								b.ReportMetric(100*ops/cpuTime.Seconds()/peak, "%peak")
							}
						}
					})
				}
			}
		}
	}
}

// benchVariants is Variants() named by family, plus, for a variant with
// a fused kernel (AMX), the same with each block's epilogue straight after
// its tiles as "<isa>-block" and without fusion as "<isa>-separate" (the
// kernel into the s32 scratch, then the epilogue), so that one run shows
// what pipelining and fusing gain, and the kernels under trial
// (extraBenchVariants).
func benchVariants() []testVariant {
	var out []testVariant
	for _, v := range Variants() {
		out = append(out, testVariant{name: v.ISA.String(), v: v})
		if v.perBlock != nil {
			blk := v
			blk.fusedBlock, blk.fusedPipelined, blk.perBlock = v.perBlock, false, nil
			out = append(out, testVariant{name: v.ISA.String() + "-block", v: blk})
		}
		if v.fusedBlock != nil {
			sep := v
			sep.fusedBlock, sep.fusedPipelined, sep.perBlock = nil, false, nil
			out = append(out, testVariant{name: v.ISA.String() + "-separate", v: sep})
		}
		out = append(out, extraBenchVariants(v)...)
	}
	return out
}

// peakOf returns the one-core rate, in operations per CPU-second of its
// thread (wall seconds where the OS gives no thread clock), of the
// register-only loop of kernel family isa (PeakLoops), the best of three
// timings of at least 20 ms each; 0 where there is none (the Go kernels).
func peakOf(isa ISA) float64 {
	for _, l := range PeakLoops() {
		if l.Name != isa.String() {
			continue
		}
		runtime.LockOSThread() // the loop's rate on one thread, as BenchmarkPeak's
		defer runtime.UnlockOSThread()
		best := 0.0
		for iters, tries := 1024, 0; tries < 3; {
			start, cpu0 := time.Now(), threadCPU()
			l.Run(iters)
			d := threadCPU() - cpu0
			if d <= 0 {
				d = time.Since(start)
			}
			if d < 20*time.Millisecond {
				iters *= 4
				continue
			}
			best = max(best, l.OpsPerIter*float64(iters)/d.Seconds())
			tries++
		}
		return best
	}
	return 0
}

// benchProblem makes random inputs (speed does not depend on the values)
// and the epilogue of the BERT GEMM of shape s: every one adds the bias and
// the zero-point-128 column-sum correction of s8 activations run as u8;
// the FFN up projection (N = 3072, K = 768) then applies GELU and quantises
// to u8 for the FFN down projection; the attention output (768 x 768) and
// FFN down (768 x 3072) projections add the residual stream (the LayerNorm
// after them is a row finish, not part of this epilogue); the rest (the
// QKV projection, 2304 x 768) write f32.
func benchProblem(b *testing.B, rng *rand.Rand, s gemmShape) ([]uint8, *PackedB, *Epilogue) {
	w := make([]int8, s.k*s.n)
	for i := range w {
		w[i] = int8(rng.Uint32())
	}
	pb, err := PackB(w, s.k, s.n)
	if err != nil {
		b.Fatal(err)
	}
	a := make([]uint8, s.m*pb.Kp)
	for i := range a {
		a[i] = uint8(rng.Uint32())
	}
	ep := &Epilogue{
		AZeroPoint: 128, ColSum: pb.ColSum,
		Scale: make([]float32, s.n), Bias: make([]float32, s.n),
		OutF32: make([]float32, s.m*s.n), OutStride: s.n,
	}
	for j := range ep.Scale {
		// Outputs of a few units, as BERT's hidden states (|acc| is
		// about 128 x 64 x sqrt(K)).
		ep.Scale[j] = 1e-5 * (1 + rng.Float32())
		ep.Bias[j] = rng.Float32() - 0.5
	}
	switch {
	case s.n == 3072 && s.k == 768: // FFN up: GELU to u8 precision (passes.ShortenGeluForU8), u8 codes of step 0.04 from -0.2
		ep.Act, ep.OutF32 = ActGeluU8, nil
		ep.OutU8, ep.OutInvScale, ep.OutZeroPoint = make([]uint8, s.m*s.n), 25, 5
	case s.n == 768 && (s.k == 768 || s.k == 3072): // attention output, FFN down
		ep.Residual, ep.ResidualStride = make([]float32, s.m*s.n), s.n
		for i := range ep.Residual {
			ep.Residual[i] = 2*rng.Float32() - 1
		}
	}
	return a, pb, ep
}

// BenchmarkQGEMMColdWeights is BenchmarkQGEMM at M = 128 (one BERT
// sequence) with the weights out of cache, as in a forward pass: a model's
// layers together hold more weight bytes than the last-level cache (85 MB
// of INT8 weights for BERT-base against 32 MiB of L3 on the EPYC and 105
// MiB on the Xeon this was tuned on), so each GEMM streams its B from DRAM.
// Each iteration multiplies by the next of enough copies of B to fill
// coldWeightBytes; compare with BenchmarkQGEMM's warm figure for the same
// shape to see what streaming the weights costs. It runs benchVariants'
// kernels of VNNI and up, so on AMX the candidates (amx-pfb, ...) are timed
// cold too.
func BenchmarkQGEMMColdWeights(b *testing.B) {
	// coldWeightBytes exceeds the largest L3 of the machines sqc is
	// measured on (105 MiB), so a copy is evicted before it comes round.
	const coldWeightBytes = 160 << 20
	threads := []int{1}
	if p := runtime.GOMAXPROCS(0); p > 1 {
		threads = append(threads, p)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, bv := range benchVariants() {
		v := bv.v
		if v.ISA < ISAVNNI {
			continue // the SIMD-less and AVX2 kernels are compute bound here
		}
		for _, t := range threads {
			e, err := New(Options{Threads: t, Variant: &v})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			for _, nk := range [][2]int{{768, 768}, {2304, 768}, {3072, 768}, {768, 3072}} {
				s := gemmShape{m: 128, n: nk[0], k: nk[1]}
				b.Run(fmt.Sprintf("%s/%v/T=%d", bv.name, s, t), func(b *testing.B) {
					a, pb, ep := benchProblem(b, rng, s)
					copies := make([]*PackedB, max(2, coldWeightBytes/len(pb.Data)))
					for i := range copies {
						c := *pb
						c.Data = append([]int8(nil), pb.Data...)
						copies[i] = &c
					}
					i := 0
					for b.Loop() {
						if err := e.GEMM(a, s.m, pb.Kp, copies[i], ep); err != nil {
							b.Fatal(err)
						}
						i = (i + 1) % len(copies)
					}
					ops := 2 * float64(s.m*s.n*s.k) * float64(b.N)
					b.ReportMetric(ops/b.Elapsed().Seconds()/1e9, "GOP/s")
					b.ReportMetric(float64(len(pb.Data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "weightGB/s")
				})
			}
		}
	}
}

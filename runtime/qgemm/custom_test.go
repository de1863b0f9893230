package qgemm

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// TestGEMMWithKernelCustom checks that GEMMWithKernel runs the supplied
// kernel exactly when it may (VNNI engine, matching Kp) and that its output
// equals the reference bit for bit on odd shapes and every epilogue kind.
func TestGEMMWithKernelCustom(t *testing.T) {
	var calls atomic.Int64
	counting := func(kp int) SpecializedKernel {
		return SpecializedKernel{Kp: kp, Kernel: func(a *uint8, lda int, b *int8, bkp int, c *int32, ldc int, m int, nblocks int) {
			if bkp != kp {
				panic(fmt.Sprintf("kernel for Kp=%d called with kp=%d", kp, bkp))
			}
			calls.Add(1)
			refKernel(a, lda, b, bkp, c, ldc, m, nblocks)
		}}
	}
	// goKernel labelled VNNI: the engine the substitution applies to, on
	// every GOARCH and with -tags noasm.
	vnni, err := New(Options{Threads: 3, Variant: &Variant{ISA: ISAVNNI, Kernel: goKernel}})
	if err != nil {
		t.Fatal(err)
	}
	defer vnni.Close()
	goEng, err := New(Options{Threads: 2, Variant: &Variant{ISA: ISAGo, Kernel: goKernel}})
	if err != nil {
		t.Fatal(err)
	}
	defer goEng.Close()

	rng := rand.New(rand.NewPCG(11, 12))
	opts := allEpiOptions()
	shapes := []gemmShape{{1, 1, 1}, {7, 17, 63}, {45, 83, 150}, {129, 50, 200}, {9, 48, 64}}
	for si, s := range shapes {
		p := newProblem(t, rng, s, []int{0, 13, 64}[si%3])
		for oi := si; oi < len(opts); oi += 17 {
			o := opts[oi]
			for _, c := range []struct {
				name string
				e    *Engine
				k    SpecializedKernel
				used bool
			}{
				{"vnni", vnni, counting(p.b.Kp), true},
				{"vnni-other-kp", vnni, counting(p.b.Kp + KBlock), false},
				{"vnni-nil", vnni, SpecializedKernel{Kp: p.b.Kp}, false},
				{"go-engine", goEng, counting(p.b.Kp), false},
			} {
				t.Run(fmt.Sprintf("%s/%v/%v", c.name, s, o), func(t *testing.T) {
					ep, f32buf, u8buf := newEpilogue(rng, p, o)
					wantF, wantU := expected(p, ep, f32buf, u8buf)
					calls.Store(0)
					if err := c.e.GEMMWithKernel(c.k, p.a, s.m, p.lda, p.b, ep); err != nil {
						t.Fatal(err)
					}
					if got := calls.Load() > 0; got != c.used {
						t.Fatalf("custom kernel used = %v, want %v", got, c.used)
					}
					compareOutputs(t, c.name, ep, f32buf, wantF, u8buf, wantU)
				})
			}
		}
	}
}

// TestGEMMWithKernelRejectsBadArguments: a substituted call validates as
// GEMM does.
func TestGEMMWithKernelRejectsBadArguments(t *testing.T) {
	e, err := New(Options{Threads: 1, Variant: &Variant{ISA: ISAVNNI, Kernel: goKernel}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	p := newProblem(t, rng, gemmShape{m: 3, n: 20, k: 70}, 0)
	k := SpecializedKernel{Kp: p.b.Kp, Kernel: func(*uint8, int, *int8, int, *int32, int, int, int) { t.Error("kernel ran on bad arguments") }}
	out := make([]float32, 3*20)
	ep := &Epilogue{Scale: make([]float32, 20), OutF32: out, OutStride: 20}
	if err := e.GEMMWithKernel(k, p.a, 3, p.b.Kp-1, p.b, ep); err == nil {
		t.Fatal("lda < Kp accepted")
	}
	if err := e.GEMMWithKernel(k, p.a[:10], 3, p.lda, p.b, ep); err == nil {
		t.Fatal("short A accepted")
	}
}

// TestGEMMWithKernelDoesNotAllocate: the substituted call reuses GEMM's
// pooled task state, so generated packages allocate nothing per GEMM.
func TestGEMMWithKernelDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	rng := rand.New(rand.NewPCG(13, 14))
	p := newProblem(t, rng, gemmShape{m: 100, n: 300, k: 200}, 0)
	ep, _, _ := newEpilogue(rng, p, epiOptions{bias: true, zeroPoint: true})
	e, err := New(Options{Threads: 2, Variant: &Variant{ISA: ISAVNNI, Kernel: goKernel}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	k := SpecializedKernel{Kp: p.b.Kp, Kernel: goKernel}
	allocs := testing.AllocsPerRun(20, func() {
		if err := e.GEMMWithKernel(k, p.a, p.s.m, p.lda, p.b, ep); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("GEMMWithKernel allocates %.1f times per call", allocs)
	}
}

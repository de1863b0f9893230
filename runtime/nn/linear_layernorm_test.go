package nn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// linearForTest is a static quantised layer of k x n random weights with a
// bias and a residual, scaled so that its outputs are a few units.
func linearForTest(t testing.TB, r *rand.Rand, k, n int) *qgemm.Linear {
	t.Helper()
	w := make([]int8, k*n)
	for i := range w {
		w[i] = int8(r.IntN(255) - 127)
	}
	b, err := qgemm.PackB(w, k, n)
	if err != nil {
		t.Fatal(err)
	}
	l := &qgemm.Linear{B: *b, AZeroPoint: 128, Scale: make([]float32, n), Bias: randSlice(r.Uint64(), n, -1, 1)}
	for j := range l.Scale {
		l.Scale[j] = 1e-4 * (0.5 + r.Float32())
	}
	return l
}

// TestLinearLayerNormMatchesUnfused checks the LayerNorm fused into a GEMM
// against the GEMM followed by LayerNorm, LayerNormU8 and LayerNormDual,
// bit for bit (both outputs, padding columns and the GEMM's own output),
// on row counts that cut into one and several blocks, on every GEMM
// variant with one and two threads.
func TestLinearLayerNormMatchesUnfused(t *testing.T) {
	const k, n, kp = 200, 83, 128
	r := rand.New(rand.NewPCG(31, 32))
	l := linearForTest(t, r, k, n)
	ln := &LayerNormParams{N: n, Gamma: randSlice(1, n, 0.5, 1.5), Beta: randSlice(2, n, -1, 1), Epsilon: 1e-12}
	gammaQ, betaQ := randSlice(3, n, 0.1, 3), randSlice(4, n, -0.5, 0.5)
	const invScale, zp = 21.5, 7
	for _, v := range gemmVariants() {
		for _, threads := range []int{1, 2} {
			e, err := qgemm.New(qgemm.Options{Threads: threads, Variant: &v})
			if err != nil {
				t.Fatal(err)
			}
			for _, rows := range []int{1, 17, 100, 700} {
				a := make([]uint8, rows*l.B.Kp)
				for i := range a {
					a[i] = uint8(r.Uint32())
				}
				residual := randSlice(uint64(rows), rows*n, -2, 2)
				io := func(out []float32) *qgemm.LinearIO {
					return &qgemm.LinearIO{A: a, Rows: rows, Residual: residual, OutF32: out}
				}
				for _, form := range []string{"f32", "u8", "dual"} {
					what := fmt.Sprintf("%s T=%d rows=%d %s", v.ISA, threads, rows, form)
					// Unfused: the GEMM, then the LayerNorm over its output.
					wantSum, wantY, wantQ := make([]float32, rows*n), make([]float32, rows*n), make([]uint8, rows*kp)
					if err := e.Linear(qgemm.SpecializedKernel{}, l, io(wantSum)); err != nil {
						t.Fatal(err)
					}
					out := &LayerNormOutputs{F32: make([]float32, rows*n), F32Stride: n, InvScale: invScale, ZeroPoint: zp}
					switch form {
					case "f32":
						LayerNorm(nil, wantY, n, wantSum, n, rows, ln)
					case "u8":
						LayerNormU8(nil, wantY, n, wantQ, kp, wantSum, n, rows, ln, invScale, zp)
						out.U8, out.U8Stride = make([]uint8, rows*kp), kp
					case "dual":
						LayerNormDual(nil, wantY, n, wantQ, kp, wantSum, n, rows, ln, gammaQ, betaQ, invScale, zp)
						out.U8, out.U8Stride, out.GammaU8, out.BetaU8 = make([]uint8, rows*kp), kp, gammaQ, betaQ
					}
					sum := make([]float32, rows*n)
					if err := LinearLayerNorm(e, qgemm.SpecializedKernel{}, l, io(sum), ln, out); err != nil {
						t.Fatal(err)
					}
					sameBits(t, what+" GEMM output", sum, wantSum)
					sameBits(t, what+" LayerNorm output", out.F32, wantY)
					if out.U8 != nil {
						for i := range wantQ {
							if out.U8[i] != wantQ[i] {
								t.Fatalf("%s: u8 output [%d] = %d, want %d", what, i, out.U8[i], wantQ[i])
							}
						}
					}
				}
				// In place: the LayerNorm overwrites the GEMM's output.
				sum, want := make([]float32, rows*n), make([]float32, rows*n)
				if err := e.Linear(qgemm.SpecializedKernel{}, l, io(want)); err != nil {
					t.Fatal(err)
				}
				LayerNorm(nil, want, n, want, n, rows, ln)
				if err := LinearLayerNorm(e, qgemm.SpecializedKernel{}, l, io(sum), ln, &LayerNormOutputs{F32: sum, F32Stride: n}); err != nil {
					t.Fatal(err)
				}
				sameBits(t, fmt.Sprintf("%s T=%d rows=%d in place", v.ISA, threads, rows), sum, want)
			}
			e.Close()
		}
	}
}

func TestLinearLayerNormDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	const k, n, rows = 64, 48, 64
	r := rand.New(rand.NewPCG(33, 34))
	l := linearForTest(t, r, k, n)
	ln := &LayerNormParams{N: n, Gamma: randSlice(1, n, 0.5, 1.5), Epsilon: 1e-12}
	e, err := qgemm.New(qgemm.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a := make([]uint8, rows*l.B.Kp)
	sum, y, q := make([]float32, rows*n), make([]float32, rows*n), make([]uint8, rows*l.B.Kp)
	allocs := testing.AllocsPerRun(20, func() {
		io := &qgemm.LinearIO{A: a, Rows: rows, OutF32: sum}
		if err := LinearLayerNorm(e, qgemm.SpecializedKernel{}, l, io, ln, &LayerNormOutputs{F32: y, F32Stride: n, U8: q, U8Stride: l.B.Kp, InvScale: 3}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("LinearLayerNorm allocates %.1f times per call", allocs)
	}
}

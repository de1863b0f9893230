package nn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// BenchmarkLinearLayerNorm compares BERT-base's dense + residual +
// LayerNormDual run as two calls (the GEMM, then nn.LayerNormDual over
// its whole output) with LinearLayerNorm, on two workers, at 1024, 128,
// 800 and 32 rows (batch 8 and 1 of 128 tokens, 32 SST-2 sentences of
// ~25 tokens packed, one of 32) and the two shapes that end in a
// LayerNorm (attention output K = 768, FFN output K = 3072): the shapes
// behind qgemm's maxFinishTail (SQC_FINISH_ORDER=column or =row forces
// each block order).
func BenchmarkLinearLayerNorm(b *testing.B) {
	const n = 768
	r := rand.New(rand.NewPCG(41, 42))
	p := pool.New(2)
	defer p.Close()
	e, err := qgemm.New(qgemm.Options{Pool: p})
	if err != nil {
		b.Fatal(err)
	}
	ln := &LayerNormParams{N: n, Gamma: randSlice(1, n, 0.5, 1.5), Beta: randSlice(2, n, -1, 1), Epsilon: 1e-12}
	gammaQ, betaQ := randSlice(3, n, 0.1, 3), randSlice(4, n, -0.5, 0.5)
	for _, k := range []int{768, 3072} {
		l := linearForTest(b, r, k, n)
		for _, rows := range []int{1024, 128, 800, 32} {
			a := make([]uint8, rows*l.B.Kp)
			for i := range a {
				a[i] = uint8(r.Uint32())
			}
			residual := randSlice(5, rows*n, -2, 2)
			sum, y, q := make([]float32, rows*n), make([]float32, rows*n), make([]uint8, rows*n)
			io := &qgemm.LinearIO{A: a, Rows: rows, Residual: residual, OutF32: sum}
			name := fmt.Sprintf("M=%d,K=%d", rows, k)
			b.Run(name+"/separate", func(b *testing.B) {
				for b.Loop() {
					if err := e.Linear(qgemm.SpecializedKernel{}, l, io); err != nil {
						b.Fatal(err)
					}
					LayerNormDual(p, y, n, q, n, sum, n, rows, ln, gammaQ, betaQ, 20, 128)
				}
			})
			b.Run(name+"/fused", func(b *testing.B) {
				out := &LayerNormOutputs{F32: y, F32Stride: n, U8: q, U8Stride: n, GammaU8: gammaQ, BetaU8: betaQ, InvScale: 20, ZeroPoint: 128}
				for b.Loop() {
					if err := LinearLayerNorm(e, qgemm.SpecializedKernel{}, l, io, ln, out); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

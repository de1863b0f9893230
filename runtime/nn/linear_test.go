package nn

import (
	"fmt"
	"math"
	"testing"

	"github.com/sqc-dev/sqc/runtime/pool"
)

func TestLinearF32(t *testing.T) {
	for _, c := range []struct{ rows, k, n int }{{1, 1, 1}, {7, 33, 300}, {8, 64, 16}, {13, 5, 513}} {
		const xPad, dPad = 3, 2
		xStride, dStride := c.k+xPad, c.n+dPad
		x := randSlice(20, c.rows*xStride, -1, 1)
		w := randSlice(21, c.k*c.n, -1, 1)
		bias := randSlice(22, c.n, -1, 1)
		// The documented order: from 0, rounded products in ascending p,
		// then the bias.
		want := make([]float32, c.rows*dStride)
		for i := range c.rows {
			for j := range c.n {
				var s float32
				for p := range c.k {
					s += float32(x[i*xStride+p] * w[p*c.n+j])
				}
				want[i*dStride+j] = s + bias[j]
				ref := 0.0
				for p := range c.k {
					ref += float64(x[i*xStride+p]) * float64(w[p*c.n+j])
				}
				ref += float64(bias[j])
				if math.Abs(float64(want[i*dStride+j])-ref) > 1e-5*float64(c.k) {
					t.Fatalf("float32 sum %g vs float64 %g", want[i*dStride+j], ref)
				}
			}
		}
		withPools(t, func(t *testing.T, p *pool.Pool) {
			got := make([]float32, c.rows*dStride)
			LinearF32(p, got, dStride, x, xStride, c.rows, c.k, c.n, w, bias)
			sameBits(t, "LinearF32", got, want)
		})
	}
}

// BenchmarkLinearF32 times LinearF32 on two workers: a 128-token layer,
// and BERT-base's pooler at batch 8 and 1 (one [CLS] row per sequence, 768
// x 768 weights, 2.25 MiB streamed per call).
func BenchmarkLinearF32(b *testing.B) {
	p := pool.New(2)
	defer p.Close()
	for _, s := range []struct{ rows, k, n int }{{128, 256, 1024}, {8, 768, 768}, {1, 768, 768}} {
		x := randSlice(1, s.rows*s.k, -1, 1)
		w := randSlice(2, s.k*s.n, -1, 1)
		bias := randSlice(3, s.n, -1, 1)
		dst := make([]float32, s.rows*s.n)
		b.Run(fmt.Sprintf("M=%d,K=%d,N=%d", s.rows, s.k, s.n), func(b *testing.B) {
			for b.Loop() {
				LinearF32(p, dst, s.n, x, s.k, s.rows, s.k, s.n, w, bias)
			}
			b.ReportMetric(2*float64(s.rows*s.k*s.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

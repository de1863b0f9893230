package nn

import (
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

func BenchmarkLinearF32(b *testing.B) {
	const rows, k, n = 128, 256, 1024
	x := randSlice(1, rows*k, -1, 1)
	w := randSlice(2, k*n, -1, 1)
	bias := randSlice(3, n, -1, 1)
	dst := make([]float32, rows*n)
	p := pool.New(0)
	defer p.Close()
	for b.Loop() {
		LinearF32(p, dst, n, x, k, rows, k, n, w, bias)
	}
	b.ReportMetric(2*rows*k*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

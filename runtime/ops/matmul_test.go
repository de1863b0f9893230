package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func randomF32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return v
}

// BenchmarkSgemm reports GFLOP/s of the float32 kernel on the shapes of a
// BERT-mini layer for one 25-token sentence and for a padded batch.
func BenchmarkSgemm(b *testing.B) {
	for _, s := range []struct{ m, k, n, threads int }{
		{25, 256, 256, 1}, {25, 256, 1024, 1}, {25, 1024, 256, 1},
		{880, 256, 1024, 1}, {880, 256, 1024, 2},
	} {
		b.Run(fmt.Sprintf("%dx%dx%d/threads=%d", s.m, s.k, s.n, s.threads), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			x, w := randomF32(r, s.m*s.k), randomF32(r, s.k*s.n)
			c := make([]float32, s.m*s.n)
			for b.Loop() {
				if err := sgemmBatch([]gemmJob{{x, w, c}}, s.m, s.n, s.k, s.threads); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestSgemmPanicIsAnError shows that a kernel bug on a worker goroutine
// becomes an error instead of killing the process.
func TestSgemmPanicIsAnError(t *testing.T) {
	for _, threads := range []int{1, 2} {
		err := ParallelFor(4, threads, func(i int) {
			if i == 2 {
				panic("boom")
			}
		})
		if err == nil || err.Error() != "internal error: boom" {
			t.Fatalf("threads %d: error %v, want internal error: boom", threads, err)
		}
	}
}

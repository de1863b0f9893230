package nn

import (
	"testing"
)

// BenchmarkAttnKernels times the score and P·V kernels alone (one block
// of 16 query rows per call, and two for attnScores2), on one
// thread, over every 16-row block of every head of a BERT-base batch (8 of
// 128 tokens, 12 heads of 64, fused QKV rows), in Attention's task order so
// that K and V come from the caches they would. GFLOP/s counts a
// multiply and an add per product, per second of process CPU time.
func BenchmarkAttnKernels(b *testing.B) {
	const batch, seq, heads, hd = 8, 128, 12, 64
	const w = heads * hd
	qkv := randSlice(1, batch*seq*3*w, -2, 2)
	out := make([]float32, batch*seq*w)
	probs := randSlice(2, attnRows*seq, 0, 1)
	sums := new([attnRows]float32)
	for r := range sums {
		sums[r] = 3
	}
	qT := randSlice(3, attnRows*hd, -2, 2)
	qTB := randSlice(5, attnRows*hd, -2, 2)
	sT := make([]float32, attnRows*seq)
	sTB := make([]float32, attnRows*seq)
	acc := make([]float32, attnRows*hd)
	flops := float64(2 * batch * heads * seq * seq * hd)
	each := func(step int, f func(b, h, i0 int)) {
		for bt := range batch {
			for h := range heads {
				for i0 := 0; i0 < seq; i0 += step {
					f(bt, h, i0)
				}
			}
		}
	}
	benchKernels(b, func(b *testing.B, kern *kernels) {
		b.Run("scores", func(b *testing.B) {
			start := processCPU()
			for b.Loop() {
				each(attnRows, func(bt, h, _ int) {
					kern.attnScores(sT, qT, qkv[bt*seq*3*w+w+h*hd:], 3*w, seq, hd)
				})
			}
			b.ReportMetric(flops*float64(b.N)/(processCPU()-start).Seconds()/1e9, "GFLOP/cpu-s")
		})
		b.Run("pv", func(b *testing.B) {
			start := processCPU()
			for b.Loop() {
				each(attnRows, func(bt, h, i0 int) {
					kern.attnPV(out[(bt*seq+i0)*w+h*hd:], w, attnRows, probs, qkv[bt*seq*3*w+2*w+h*hd:], 3*w, seq, hd, sums, acc)
				})
			}
			b.ReportMetric(flops*float64(b.N)/(processCPU()-start).Seconds()/1e9, "GFLOP/cpu-s")
		})
		b.Run("softmax", func(b *testing.B) {
			mask := make([]float32, seq) // [batch, 1, 1, seq], nothing padded
			copy(sT, randSlice(6, attnRows*seq, -20, 20))
			start := processCPU()
			for b.Loop() {
				each(attnRows, func(_, _, _ int) {
					kern.attnSoftmax(sT, seq, 0.125, mask, false, sums)
				})
			}
			b.ReportMetric(float64((processCPU()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
		b.Run("scores2", func(b *testing.B) {
			start := processCPU()
			for b.Loop() {
				each(attnTaskRows, func(bt, h, _ int) {
					kern.attnScores2(sT, sTB, qT, qTB, qkv[bt*seq*3*w+w+h*hd:], 3*w, seq, hd)
				})
			}
			b.ReportMetric(flops*float64(b.N)/(processCPU()-start).Seconds()/1e9, "GFLOP/cpu-s")
		})
	})
}

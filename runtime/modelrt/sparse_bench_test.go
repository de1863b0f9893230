package modelrt

import "testing"

// BenchmarkSparsePool times SPLADE's pooling of one 128-token text of a
// 30522-entry vocabulary (bert-base-uncased's).
func BenchmarkSparsePool(b *testing.B) {
	const rows, vocab = 128, 30522
	logits := make([]float32, rows*vocab)
	for i := range logits {
		logits[i] = float32((uint32(i)*2654435761)>>8)/float32(1<<24)*20 - 15
	}
	mask := make([]int64, rows)
	for i := range mask {
		mask[i] = 1
	}
	b.SetBytes(int64(len(logits) * 4))
	for b.Loop() {
		SparseHead{}.Pool(logits, vocab, mask)
	}
}

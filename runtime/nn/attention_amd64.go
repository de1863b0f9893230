//go:build amd64 && !noasm

package nn

// scores2AVX512 is kernels.attnScores2 (attnScores2Asm, asmgen/nn), with
// the bounds checks of scoresAVX512.

func scores2AVX512(sA, sB, qA, qB, k []float32, kStride, sk, d int) {
	if sk <= 0 || d <= 0 {
		clear(sA[:attnRows*max(sk, 0)])
		clear(sB[:attnRows*max(sk, 0)])
		return
	}
	need("scores", sA, 1, 0, attnRows*sk)
	need("scores", sB, 1, 0, attnRows*sk)
	need("transposed queries", qA, 1, 0, attnRows*d)
	need("transposed queries", qB, 1, 0, attnRows*d)
	need("keys", k, sk, kStride, d)
	attnScores2Asm(ptr(sA), ptr(sB), ptr(qA), ptr(qB), ptr(k), kStride, sk, d)
}

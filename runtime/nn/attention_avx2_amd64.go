//go:build amd64 && !noasm

package nn

// useAVX2Attention sets k's attention loops to their AVX2 assembly forms
// (asmgen/nn/attention_avx2.go). The transposes stay Go's; attnScores2 is
// the one-block kernel on each block, which on 16 ymm beats sharing the
// key broadcasts between blocks (see scoreKeysAVX2 there).
func useAVX2Attention(k *kernels) {
	scores := scoresWith(attnScoresAVX2Asm)
	k.attnScores = scores
	k.attnScores2 = func(sA, sB, qA, qB, keys []float32, kStride, sk, d int) {
		scores(sA, qA, keys, kStride, sk, d)
		scores(sB, qB, keys, kStride, sk, d)
	}
	k.attnSoftmax = softmaxWith(attnSoftmaxAVX2Asm)
	k.attnSoftmaxS32 = softmaxS32With(attnSoftmaxS32AVX2Asm)
	k.attnPV = pvWith(attnPVAVX2Asm, 8) // whole ymm of value columns
}

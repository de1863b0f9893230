package main

// genAttentionAVX2 emits the AVX2 forms of attention's inner loops
// (runtime/nn kernels attnTranspose, attnScores, attnScores2, attnSoftmax,
// attnPV) for CPUs without AVX-512.
func genAttentionAVX2(g *gen) {}

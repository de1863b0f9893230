//go:build amd64 && !noasm

package nn

// avx2Kernels returns the AVX2 kernels (AVX2 and FMA3 on ymm, for CPUs
// without AVX-512 such as AMD Zen 1-3 and Intel before Skylake-SP): the
// Go kernels with each loop that has an AVX2 assembly form replaced by it.
// Like the AVX-512 set, they give the Go kernels' bits.
func avx2Kernels() *kernels {
	k := goKernels()
	k.name = "avx2"
	useAVX2Attention(k) // attention_avx2_amd64.go
	useAVX2LayerNorm(k) // layernorm_avx2_amd64.go
	useAVX2Quantize(k)  // quantize_avx2_amd64.go
	useAVX2Gelu(k)      // gelu_avx2_amd64.go
	k.linearTile = linearTileWith(linearRows4AVX2Asm, linearRows1AVX2Asm, 8)
	// The transposes of attention keep their Go loops (under 1% of it).
	return k
}

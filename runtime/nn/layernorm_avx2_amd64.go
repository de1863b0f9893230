//go:build amd64 && !noasm

package nn

// useAVX2LayerNorm sets k's LayerNorm loops (lnStats16, lnNormalize, lnNormalizeDual) to their AVX2 assembly forms.
func useAVX2LayerNorm(k *kernels) {
	k.lnStats16 = lnStats16AVX2
}

// lnStats16AVX2 is kernels.lnStats16 on lnStats16AVX2Asm
// (asmgen/nn/layernorm_avx2.go), which loads a row's last partial block
// of 8 under mask and so reads nothing past column n.
func lnStats16AVX2(x []float32, stride, n int, eps float32, mean, inv *[lnGroup]float64) {
	need("LayerNorm rows", x, lnGroup, stride, n)
	lnStats16AVX2Asm(ptr(x), stride, n, float64(n), float64(eps), &mean[0], &inv[0])
}

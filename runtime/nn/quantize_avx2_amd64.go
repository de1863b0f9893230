//go:build amd64 && !noasm

package nn

// useAVX2Quantize sets k's quantisers' loops (quantize, minMax) to their AVX2 assembly forms.
func useAVX2Quantize(k *kernels) {
	k.quantize = quantizeAVX2
}

// quantizeAVX2 is kernels.quantize: quantizeU8AVX2Asm on the whole groups
// of 8 columns of every row, quantizeGo on the rest (each code depends on
// its own value only).
func quantizeAVX2(dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, invScale float32, zeroPoint int32) {
	if rows <= 0 || cols <= 0 {
		return
	}
	need("quantised output", dst, rows, dstStride, cols)
	need("quantisation input", src, rows, srcStride, cols)
	c8 := cols &^ 7
	if c8 > 0 {
		quantizeU8AVX2Asm(ptr(dst), dstStride, ptr(src), srcStride, rows, c8, invScale, zeroPoint)
	}
	if c8 < cols {
		quantizeGo(dst[c8:], dstStride, src[c8:], srcStride, rows, cols-c8, invScale, zeroPoint)
	}
}

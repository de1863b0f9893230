//go:build amd64 && !noasm

package nn

// useAVX2Gelu sets k's elementwise activation loops (gelu, geluTanh,
// silu) to their AVX2 assembly forms.
func useAVX2Gelu(k *kernels) {
	k.gelu = func(dst, src []float32) { activationAVX2(geluAVX2Asm, geluGo, dst, src) }
	k.geluTanh = func(dst, src []float32) { activationAVX2(geluTanhAVX2Asm, geluTanhGo, dst, src) }
	k.silu = func(dst, src []float32) { activationAVX2(siluAVX2Asm, siluGo, dst, src) }
}

// activationAVX2 runs asm on the whole groups of 8 of src and the Go
// kernel ref on the rest (each output depends on its own input only).
func activationAVX2(asm func(dst, src *float32, n int), ref func(dst, src []float32), dst, src []float32) {
	n8 := len(src) &^ 7
	if n8 > 0 {
		need("activation output", dst, 1, 0, len(src))
		asm(ptr(dst), ptr(src), n8)
	}
	ref(dst[n8:], src[n8:])
}

//go:build amd64 && !noasm

package nn

// useAVX2Gelu sets k's GELU loops (gelu, geluTanh) to their AVX2 assembly
// forms.
func useAVX2Gelu(k *kernels) {
	k.gelu = func(dst, src []float32) { geluAVX2(geluAVX2Asm, geluGo, dst, src) }
	k.geluTanh = func(dst, src []float32) { geluAVX2(geluTanhAVX2Asm, geluTanhGo, dst, src) }
}

// geluAVX2 runs asm on the whole groups of 8 of src and the Go kernel ref
// on the rest (each output depends on its own input only).
func geluAVX2(asm func(dst, src *float32, n int), ref func(dst, src []float32), dst, src []float32) {
	n8 := len(src) &^ 7
	if n8 > 0 {
		need("GELU output", dst, 1, 0, len(src))
		asm(ptr(dst), ptr(src), n8)
	}
	ref(dst[n8:], src[n8:])
}

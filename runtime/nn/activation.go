package nn

import "github.com/sqc-dev/sqc/runtime/qgemm"

// Elementwise activations over n values; dst may be src.

// Gelu sets dst[i] = gelu(src[i]) with qgemm's float32 erf-GELU, the bits a
// GEMM epilogue with ActGelu gives.
func Gelu(dst, src []float32) { active().gelu(dst, src) }

// geluGo is kernels.gelu.
func geluGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = qgemm.Gelu(x)
	}
}

// TanhSlice sets dst[i] = Tanh(src[i]).
func TanhSlice(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = Tanh(x)
	}
}

// Relu sets dst[i] = max(src[i], 0), with -0 giving +0 and NaN kept, as
// PyTorch's relu and the FP32 interpreter do.
func Relu(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		switch {
		case x > 0, x != x:
			dst[i] = x
		default:
			dst[i] = 0
		}
	}
}

// Add sets dst[i] = a[i] + b[i mod len(b)]: a plain elementwise sum when
// len(b) == len(a), and b broadcast over a's leading dimensions when b's
// shape is a suffix of a's (a position embedding [1, seq, hidden] added to
// [batch, seq, hidden]). len(a) must be a multiple of len(b); dst may be a.
func Add(dst, a, b []float32) {
	dst = dst[:len(a)]
	for off := 0; off < len(a); off += len(b) {
		d, x := dst[off:off+len(b)], a[off:off+len(b)]
		for i, v := range b {
			d[i] = x[i] + v
		}
	}
}

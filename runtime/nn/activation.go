package nn

import (
	"github.com/sqc-dev/sqc/internal/expf"
	"github.com/sqc-dev/sqc/internal/gelu"
	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Elementwise activations over n values; dst may be src.

// Gelu sets dst[i] = gelu(src[i]) with sqc's float32 erf-GELU
// (internal/gelu), the bits a GEMM epilogue with ActGelu gives.
func Gelu(dst, src []float32) { active().gelu(dst, src) }

// geluGo is kernels.gelu.
func geluGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = gelu.Gelu(x)
	}
}

// GeluTanh sets dst[i] = gelu_tanh(src[i]) with sqc's float32 tanh-GELU,
// 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))) (internal/gelu), the bits a
// GEMM epilogue with ActGeluTanh gives.
func GeluTanh(dst, src []float32) { active().geluTanh(dst, src) }

// geluTanhGo is kernels.geluTanh.
func geluTanhGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = gelu.GeluTanh(x)
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
// PyTorch's relu and the FP32 interpreter do: qgemm.Relu, the bits a GEMM
// epilogue with ActRelu gives.
func Relu(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = qgemm.Relu(x)
	}
}

// Silu sets dst[i] = x·sigmoid(x) of src[i] (internal/expf.Silu), the bits
// a GEMM epilogue with ActSilu gives.
func Silu(dst, src []float32) { active().silu(dst, src) }

// siluGo is kernels.silu.
func siluGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = expf.Silu(x)
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

// Mul is dst[i] = a[i] * b[i] for a and b of one length: the product of
// a gated linear unit's two halves (ModernBERT's act(input) * gate).
func Mul(dst, a, b []float32) {
	dst, b = dst[:len(a)], b[:len(a)]
	for i, v := range a {
		dst[i] = v * b[i]
	}
}

// MulParallel is Mul with the elements spread over p's workers (nil: the
// caller's goroutine); the bits are Mul's.
func MulParallel(p *pool.Pool, dst, a, b []float32) {
	forRows(mulCalls, p, len(a), 1, addArgs{dst: dst, a: a, b: b, unit: 1, same: true}, mulRange)
}

var mulCalls = newRowsRecycler[addArgs]()

func mulRange(a *addArgs, i0, i1 int) { Mul(a.dst[i0:i1], a.a[i0:i1], a.b[i0:i1]) }

// GeluParallel, GeluTanhParallel, TanhSliceParallel, ReluParallel,
// SiluParallel and AddParallel are Gelu, GeluTanh, TanhSlice, Relu, Silu
// and Add with the elements spread over p's workers (nil: the caller's
// goroutine); the bits are the serial functions'.
func GeluParallel(p *pool.Pool, dst, src []float32) {
	forRows(unaryCalls, p, len(src), 1, unaryArgs{dst: dst, src: src, f: Gelu}, unaryRange)
}

func GeluTanhParallel(p *pool.Pool, dst, src []float32) {
	forRows(unaryCalls, p, len(src), 1, unaryArgs{dst: dst, src: src, f: GeluTanh}, unaryRange)
}

func TanhSliceParallel(p *pool.Pool, dst, src []float32) {
	forRows(unaryCalls, p, len(src), 1, unaryArgs{dst: dst, src: src, f: TanhSlice}, unaryRange)
}

func ReluParallel(p *pool.Pool, dst, src []float32) {
	forRows(unaryCalls, p, len(src), 1, unaryArgs{dst: dst, src: src, f: Relu}, unaryRange)
}

func SiluParallel(p *pool.Pool, dst, src []float32) {
	forRows(unaryCalls, p, len(src), 1, unaryArgs{dst: dst, src: src, f: Silu}, unaryRange)
}

func AddParallel(p *pool.Pool, dst, a, b []float32) {
	if len(b) == 0 {
		Add(dst, a, b)
		return
	}
	// Ranges are whole elements when b is as long as a, else whole copies
	// of b, so that every range starts at b[0].
	unit, same := len(b), len(b) == len(a)
	if same {
		unit = 1
	}
	forRows(addCalls, p, len(a)/unit, unit, addArgs{dst: dst, a: a, b: b, unit: unit, same: same}, addRange)
}

// unaryArgs are the arguments of an elementwise function f (a top-level
// function, so storing it allocates nothing).
type unaryArgs struct {
	dst, src []float32
	f        func(dst, src []float32)
}

var unaryCalls = newRowsRecycler[unaryArgs]()

func unaryRange(a *unaryArgs, i0, i1 int) { a.f(a.dst[i0:i1], a.src[i0:i1]) }

type addArgs struct {
	dst, a, b []float32
	unit      int  // elements per range unit: 1, or len(b) when b broadcasts
	same      bool // len(b) == len(a)
}

var addCalls = newRowsRecycler[addArgs]()

func addRange(a *addArgs, r0, r1 int) {
	lo, hi := r0*a.unit, r1*a.unit
	if a.same {
		Add(a.dst[lo:hi], a.a[lo:hi], a.b[lo:hi])
		return
	}
	Add(a.dst[lo:hi], a.a[lo:hi], a.b)
}

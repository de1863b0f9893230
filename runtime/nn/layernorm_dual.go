package nn

import (
	"fmt"

	"github.com/sqc-dev/sqc/internal/lnstats"
	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// LayerNormDual is sqc.LayerNormDual (compiler/ops_sqc_layernorm.go) with
// its second output quantised: the two LayerNorms of one input that a
// SmoothQuant-smoothed post-LN block needs, from one pass over each row.
// Per row it computes the statistics once (as LayerNorm does) and, with
// z_j = (x_j - mean) * inv in float32 (internal/lnstats's order, as
// LayerNorm),
//
//	dstF32[i*f32Stride+j] = z_j*ln.Gamma[j] + ln.Beta[j]
//	dstU8[i*u8Stride+j]   = qgemm.QuantizeU8(z_j*gammaU8[j] + betaU8[j], invScale, zeroPoint)
//
// with padding columns N..u8Stride-1 set to zeroPoint: the bits of
// LayerNorm(ln) into dstF32 and LayerNormU8 with only the u8 output and
// ln's Gamma and Beta replaced by gammaU8 and betaU8. gammaU8 has ln.N
// values; betaU8 is nil exactly when ln.Beta is (the graph op's rule).
// dstF32 may be src, as in LayerNorm.
func LayerNormDual(p *pool.Pool, dstF32 []float32, f32Stride int, dstU8 []uint8, u8Stride int, src []float32, srcStride, rows int, ln *LayerNormParams, gammaU8, betaU8 []float32, invScale float32, zeroPoint int32) {
	layerNormDual(active(), p, dstF32, f32Stride, dstU8, u8Stride, src, srcStride, rows, ln, gammaU8, betaU8, invScale, zeroPoint)
}

// layerNormDual is LayerNormDual with the given kernels.
func layerNormDual(kern *kernels, p *pool.Pool, dstF32 []float32, f32Stride int, dstU8 []uint8, u8Stride int, src []float32, srcStride, rows int, ln *LayerNormParams, gammaU8, betaU8 []float32, invScale float32, zeroPoint int32) {
	if rows <= 0 {
		return
	}
	// Misuse is a programming error of the caller (exec or generated
	// code), which builds these arguments from a verified graph.
	switch {
	case dstF32 == nil || dstU8 == nil:
		panic("nn: LayerNormDual needs both outputs")
	case len(gammaU8) < ln.N:
		panic(fmt.Sprintf("nn: LayerNormDual gammaU8 has %d values, want %d", len(gammaU8), ln.N))
	case (betaU8 == nil) != (ln.Beta == nil):
		panic("nn: LayerNormDual betaU8 must be nil exactly when ln.Beta is")
	}
	layerNormRows(kern, p, dstF32, f32Stride, dstU8, u8Stride, src, srcStride, rows, ln, gammaU8, betaU8, invScale, zeroPoint)
}

// lnNormalizeDualGo is kernels.lnNormalizeDual: one row x into y (ln's
// gamma and beta) and q (gammaQ and betaQ, quantised), z computed once.
func lnNormalizeDualGo(y []float32, q []uint8, x []float32, st lnstats.Row32, ln *LayerNormParams, gammaQ, betaQ []float32, invScale float32, zp int32) {
	y, q = y[:len(x)], q[:len(x)]
	for j, v := range x {
		z := st.Normalize(v)
		y[j] = affine(z, ln.Gamma, ln.Beta, j)
		q[j] = qgemm.QuantizeU8(affine(z, gammaQ, betaQ, j), invScale, zp)
	}
}

package nn

import (
	"fmt"

	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// LayerNormOutputs are where a LayerNorm fused into a GEMM
// (LinearLayerNorm) writes, and how it quantises: the arguments that
// LayerNorm, LayerNormU8 and LayerNormDual take besides their input.
//   - U8 nil: LayerNorm into F32;
//   - U8 set, GammaU8 nil: LayerNormU8 (F32 may be nil);
//   - U8 and GammaU8 set: LayerNormDual (F32 required; BetaU8 nil exactly
//     when the params' Beta is).
type LayerNormOutputs struct {
	F32       []float32
	F32Stride int
	U8        []uint8
	U8Stride  int
	// The u8 output's own gamma and beta (LayerNormDual), else nil.
	GammaU8, BetaU8 []float32
	InvScale        float32
	ZeroPoint       int32
}

// LinearLayerNorm runs the quantised linear layer l on io, as
// e.Linear(k, l, io) does, and the LayerNorm ln of its f32 output
// (io.OutF32, rows of l.B.N) into out, inside the GEMM: each block of rows
// is normalised by the worker that completes it, while it is still in that
// worker's L2, instead of in a pass of its own over the whole output after
// the GEMM's last block. Both outputs get the bits the two calls would
// write one after the other: the LayerNorm of a row depends on that row
// alone. io.OutF32 is left holding the GEMM's output; out.F32 may be
// io.OutF32 (LayerNorm in place).
func LinearLayerNorm(e *qgemm.Engine, k qgemm.SpecializedKernel, l *qgemm.Linear, io *qgemm.LinearIO, ln *LayerNormParams, out *LayerNormOutputs) error {
	// Misuse is a programming error of the caller (exec or generated
	// code), which builds these arguments from a verified graph.
	switch {
	case l.OutKp > 0 || io.OutF32 == nil:
		panic("nn: LinearLayerNorm needs the GEMM's f32 output")
	case ln.N != l.B.N:
		panic(fmt.Sprintf("nn: LinearLayerNorm of %d columns after a GEMM of %d", ln.N, l.B.N))
	case out.U8 == nil && (out.F32 == nil || out.GammaU8 != nil):
		panic("nn: LinearLayerNorm without a u8 output needs F32 and no GammaU8")
	case out.GammaU8 != nil && (out.F32 == nil || len(out.GammaU8) < ln.N || (out.BetaU8 == nil) != (ln.Beta == nil)):
		panic("nn: LinearLayerNorm's dual form needs F32, GammaU8 of N values, and BetaU8 exactly when Beta")
	}
	if io.Rows <= 0 || ln.N <= 0 {
		return e.Linear(k, l, io)
	}
	c := getLayerNormCall(active(), out.F32, out.F32Stride, out.U8, out.U8Stride, io.OutF32, l.B.N, io.Rows, ln,
		out.GammaU8, out.BetaU8, out.InvScale, out.ZeroPoint, e.Threads())
	fused := *io
	fused.Finish = (*rowsNormalizer)(c)
	err := e.Linear(k, l, &fused)
	c.release()
	return err
}

// rowsNormalizer is a layerNormCall as the qgemm.RowFinisher of a GEMM.
type rowsNormalizer layerNormCall

func (r *rowsNormalizer) FinishRows(worker, m0, m int) {
	(*layerNormCall)(r).normalize(worker, m0, m0+m)
}

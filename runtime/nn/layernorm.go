package nn

import (
	"github.com/sqc-dev/sqc/internal/lnstats"
	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// LayerNormParams are the constants of one LayerNorm over rows of N
// values: Gamma (scale, len N), Beta (shift, len N, or nil for none) and
// Epsilon.
type LayerNormParams struct {
	N       int
	Gamma   []float32
	Beta    []float32
	Epsilon float32
}

// lnGroup is the number of rows whose statistics one kernel call computes
// (one row per float64 lane of two AVX-512 registers); layerNormMinRows,
// the smallest row chunk given to one worker, is a multiple of it (about
// 10 µs of work at hidden size 768).
const (
	lnGroup          = 16
	layerNormMinRows = 2 * lnGroup
)

// LayerNorm normalises rows rows of src (row stride srcStride) into dst
// (row stride dstStride). Per row, in this order (internal/lnstats's,
// which the FP32 interpreter follows too, so both give the same bits):
//
//	mean = (sum_j x_j) / N                      (float64)
//	var  = (sum_j (x_j - mean)^2) / N           (float64)
//	inv  = 1 / sqrt(var + float64(Epsilon))     (float64)
//	z_j  = (x_j - mean) * inv                   (float32, each op rounded, the
//	                                             mean as two float32: lnstats.Row32)
//	y_j  = z_j*Gamma_j + Beta_j                 (float32, each op rounded)
//
// dst may be src (the statistics are complete before a row is written).
func LayerNorm(p *pool.Pool, dst []float32, dstStride int, src []float32, srcStride, rows int, ln *LayerNormParams) {
	layerNorm(active(), p, dst, dstStride, nil, 0, src, srcStride, rows, ln, 0, 0)
}

// LayerNormU8 is LayerNorm that also, or only, writes the output quantised
// to u8 for the next QLinear: dstU8[i*u8Stride+j] = qgemm.QuantizeU8(y_j,
// invScale, zeroPoint), padding columns N..u8Stride-1 set to zeroPoint
// (see QuantizeU8). dstF32 may be nil when only the u8 output is needed.
func LayerNormU8(p *pool.Pool, dstF32 []float32, f32Stride int, dstU8 []uint8, u8Stride int, src []float32, srcStride, rows int, ln *LayerNormParams, invScale float32, zeroPoint int32) {
	layerNorm(active(), p, dstF32, f32Stride, dstU8, u8Stride, src, srcStride, rows, ln, invScale, zeroPoint)
}

// layerNorm is LayerNorm (dstU8 nil) and LayerNormU8 with the given
// kernels: chunks of rows over the pool, statistics 16 rows at a time
// (rowStats for a chunk's last rows), then each row normalised.
func layerNorm(kern *kernels, p *pool.Pool, dstF32 []float32, f32Stride int, dstU8 []uint8, u8Stride int, src []float32, srcStride, rows int, ln *LayerNormParams, invScale float32, zeroPoint int32) {
	layerNormRows(kern, p, dstF32, f32Stride, dstU8, u8Stride, src, srcStride, rows, ln, nil, nil, invScale, zeroPoint)
}

// layerNormRows is the driver of layerNorm and layerNormDual: with gammaQ
// nil the u8 output quantises the f32 one (ln's gamma and beta); with
// gammaQ set it quantises the row normalised with gammaQ and betaQ
// instead, from the same statistics (kernels.lnNormalizeDual).
func layerNormRows(kern *kernels, p *pool.Pool, dstF32 []float32, f32Stride int, dstU8 []uint8, u8Stride int, src []float32, srcStride, rows int, ln *LayerNormParams, gammaQ, betaQ []float32, invScale float32, zeroPoint int32) {
	pad := uint8(min(max(zeroPoint, 0), 255))
	if ln.N <= 0 {
		if dstU8 != nil {
			for i := range rows {
				fill(dstU8[i*u8Stride:(i+1)*u8Stride], pad)
			}
		}
		return
	}
	size, _ := chunks(p, rows, layerNormMinRows)
	size = (size + lnGroup - 1) / lnGroup * lnGroup
	c := getLayerNormCall(kern, dstF32, f32Stride, dstU8, u8Stride, src, srcStride, rows, ln, gammaQ, betaQ, invScale, zeroPoint, workers(p))
	c.size = size
	parallelFor(p, (rows+size-1)/size, c.task)
	c.release()
}

// getLayerNormCall returns a recycled layerNormCall holding a call's
// arguments, with statistics for the given number of worker ids; release
// returns it.
func getLayerNormCall(kern *kernels, dstF32 []float32, f32Stride int, dstU8 []uint8, u8Stride int, src []float32, srcStride, rows int, ln *LayerNormParams, gammaQ, betaQ []float32, invScale float32, zeroPoint int32, workers int) *layerNormCall {
	c := layerNormCalls.get()
	c.kern, c.dstF32, c.f32Stride, c.dstU8, c.u8Stride = kern, dstF32, f32Stride, dstU8, u8Stride
	c.src, c.srcStride, c.rows, c.ln, c.invScale, c.zeroPoint = src, srcStride, rows, *ln, invScale, zeroPoint
	c.pad = uint8(min(max(zeroPoint, 0), 255))
	c.gammaQ, c.betaQ = gammaQ, betaQ
	c.stats = growStats(c.stats, workers)
	return c
}

// release clears c's references to the caller's memory and recycles it.
func (c *layerNormCall) release() {
	c.dstF32, c.dstU8, c.src, c.ln, c.gammaQ, c.betaQ = nil, nil, nil, LayerNormParams{}, nil, nil
	layerNormCalls.put(c)
}

// layerNormCall is one LayerNorm call's state (see calls.go).
type layerNormCall struct {
	kern            *kernels
	dstF32          []float32
	f32Stride       int
	dstU8           []uint8
	u8Stride        int
	src             []float32
	srcStride, rows int
	ln              LayerNormParams
	gammaQ, betaQ   []float32 // the u8 output's own gamma and beta (layerNormDual), or nil
	invScale        float32
	zeroPoint       int32
	pad             uint8
	size            int       // rows per chunk, a multiple of lnGroup
	stats           []lnStats // per worker
	task            func(worker, c int)
}

// lnStats are the statistics of one group of rows. A worker's are kept in
// the call rather than on its stack: passed to a kernel through a function
// value, a local array would escape to the heap.
type lnStats struct{ mean, inv [lnGroup]float64 }

var layerNormCalls = newRecycler(func() *layerNormCall {
	c := &layerNormCall{}
	c.task = c.chunk
	return c
})

// chunk normalises rows [ch*size, (ch+1)*size) on worker w: statistics 16
// rows at a time (rowStats for the chunk's last rows), then each row.
func (c *layerNormCall) chunk(w, ch int) {
	c.normalize(w, ch*c.size, min(c.rows, (ch+1)*c.size))
}

// normalize normalises rows [r0, r1) on worker w. Each row's bits depend
// on that row alone, however the rows are grouped.
func (c *layerNormCall) normalize(w, r0, r1 int) {
	kern, ln := c.kern, &c.ln
	src, srcStride := c.src, c.srcStride
	st := &c.stats[w]
	for i0 := r0; i0 < r1; i0 += lnGroup {
		n := min(lnGroup, r1-i0)
		if n == lnGroup {
			kern.lnStats16(src[i0*srcStride:], srcStride, ln.N, ln.Epsilon, &st.mean, &st.inv)
		} else {
			for r := range n {
				st.mean[r], st.inv[r] = rowStats(src[(i0+r)*srcStride:][:ln.N], ln.Epsilon)
			}
		}
		for r := range n {
			i := i0 + r
			x := src[i*srcStride : i*srcStride+ln.N]
			var y []float32
			if c.dstF32 != nil {
				y = c.dstF32[i*c.f32Stride : i*c.f32Stride+ln.N]
			}
			var q []uint8
			if c.dstU8 != nil {
				q = c.dstU8[i*c.u8Stride : (i+1)*c.u8Stride]
			}
			row := lnstats.NewRow32(st.mean[r], st.inv[r])
			if c.gammaQ != nil {
				kern.lnNormalizeDual(y, q, x, row, ln, c.gammaQ, c.betaQ, c.invScale, c.zeroPoint)
			} else {
				kern.lnNormalize(y, q, x, row, ln, c.invScale, c.zeroPoint)
			}
			if q != nil {
				fill(q[ln.N:], c.pad)
			}
		}
	}
}

// fill sets every element of b to v.
func fill[T any](b []T, v T) {
	for i := range b {
		b[i] = v
	}
}

// rowStats returns a row's mean and 1/sqrt(var+eps) in float64, in
// internal/lnstats's order (the FP32 interpreter's).
func rowStats(x []float32, eps float32) (mean, inv float64) {
	return lnstats.Stats(x, float64(eps))
}

// lnStats16Go is kernels.lnStats16.
func lnStats16Go(x []float32, stride, n int, eps float32, mean, inv *[lnGroup]float64) {
	for r := range lnGroup {
		mean[r], inv[r] = rowStats(x[r*stride:][:n], eps)
	}
}

// lnNormalizeGo is kernels.lnNormalize.
func lnNormalizeGo(y []float32, q []uint8, x []float32, st lnstats.Row32, ln *LayerNormParams, invScale float32, zp int32) {
	if y != nil {
		y = y[:len(x)]
	}
	if q != nil {
		q = q[:len(x)]
	}
	for j, v := range x {
		o := normalize(v, st, ln, j)
		if y != nil {
			y[j] = o
		}
		if q != nil {
			q[j] = qgemm.QuantizeU8(o, invScale, zp)
		}
	}
}

// normalize is one output of LayerNorm, in internal/lnstats's float32
// order.
func normalize(v float32, st lnstats.Row32, ln *LayerNormParams, j int) float32 {
	return affine(st.Normalize(v), ln.Gamma, ln.Beta, j)
}

// affine is z*gamma[j] + beta[j] (beta may be nil) in internal/lnstats's
// float32 order: the last step of normalize, for z = Row32.Normalize of
// x_j.
func affine(z float32, gamma, beta []float32, j int) float32 {
	if beta == nil {
		return lnstats.Scale(z, gamma[j])
	}
	return lnstats.Affine(z, gamma[j], beta[j])
}

package nn

import (
	"math"
	"unsafe"

	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Activation quantisation to the u8 A operand of qgemm: static (one scale
// and zero point, from calibration) and dynamic per token (per row).

// QuantizeU8 quantises a rows x cols block of src (row stride srcStride)
// into dst (row stride dstStride >= cols):
//
//	dst[i*dstStride+j] = clamp(roundEven(src[i*srcStride+j]*invScale) + zeroPoint, 0, 255)
//
// exactly as qgemm's epilogue quantises its u8 output (qgemm.QuantizeU8),
// so a QLinear writing u8 for the next one and a QuantizeU8 step agree bit
// for bit. Columns cols..dstStride-1 of every row are set to zeroPoint, the
// code of 0.0, so a row padded to qgemm's Kp holds defined data (the packed
// weights are zero there, so the value does not change the product).
// dst must hold rows*dstStride bytes.
func QuantizeU8(dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, invScale float32, zeroPoint int32) {
	quantizeU8(active(), dst, dstStride, src, srcStride, rows, cols, invScale, zeroPoint)
}

func quantizeU8(kern *kernels, dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, invScale float32, zeroPoint int32) {
	if rows <= 0 {
		return
	}
	if cols > 0 {
		kern.quantize(dst, dstStride, src, srcStride, rows, cols, invScale, zeroPoint)
	}
	if cols < dstStride {
		pad := uint8(min(max(zeroPoint, 0), 255))
		for i := range rows {
			fill(dst[i*dstStride+cols:(i+1)*dstStride], pad)
		}
	}
}

// quantizeGo is kernels.quantize.
func quantizeGo(dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, invScale float32, zeroPoint int32) {
	for i := range rows {
		out := dst[i*dstStride : i*dstStride+cols]
		for j, x := range src[i*srcStride : i*srcStride+cols] {
			out[j] = qgemm.QuantizeU8(x, invScale, zeroPoint)
		}
	}
}

// RowQuantParams returns the asymmetric u8 parameters of dynamic per-token
// quantisation for one row: with lo = min(0, min x) and hi = max(0, max x)
// (NaNs ignored),
//
//	scale     = (hi - lo) / 255                    (float32; 1 if hi == lo)
//	zeroPoint = clamp(roundEven(-lo / scale), 0, 255)
//
// as ONNX DynamicQuantizeLinear defines them, so 0.0 is exactly
// representable. A row holding ±Inf gets scale +Inf (every value then
// quantises to zeroPoint, which is 0 or 255 at an infinite end).
func RowQuantParams(row []float32) (scale float32, zeroPoint int32) {
	return rowQuantParams(minMaxGo(row))
}

// minMaxGo is kernels.minMax: lo = min(0, min x) and hi = max(0, max x),
// NaNs ignored.
func minMaxGo(row []float32) (lo, hi float32) {
	for _, x := range row {
		if x < lo {
			lo = x
		}
		if x > hi {
			hi = x
		}
	}
	return lo, hi
}

// minMaxRowsWith is kernels.minMaxRows from a kernels.minMax: lo[i], hi[i]
// = minMax(row i) for i < rows, row i being x[i*stride : i*stride+cols].
func minMaxRowsWith(minMax func([]float32) (lo, hi float32)) func(x []float32, stride, rows, cols int, lo, hi []float32) {
	return func(x []float32, stride, rows, cols int, lo, hi []float32) {
		lo, hi = lo[:rows], hi[:rows]
		for i := range rows {
			if cols > 0 {
				lo[i], hi[i] = minMax(x[i*stride : i*stride+cols])
			} else {
				lo[i], hi[i] = 0, 0
			}
		}
	}
}

// absMaxColsGo is kernels.absMaxCols: for rows i ascending and c < cols,
// m[c] = |x[i*stride+c]| wherever that is greater than m[c] (so a NaN
// never replaces m[c]).
func absMaxColsGo(m, x []float32, stride, rows, cols int) {
	m = m[:cols]
	for i := range rows {
		for c, v := range x[i*stride : i*stride+cols] {
			if a := abs32(v); a > m[c] {
				m[c] = a
			}
		}
	}
}

// rowQuantParams is RowQuantParams from the row's minMax.
func rowQuantParams(lo, hi float32) (scale float32, zeroPoint int32) {
	scale = (hi - lo) / 255
	if scale == 0 {
		return 1, 0
	}
	z := -lo / scale
	// Clamp before converting: NaN (lo = -Inf) would convert to an
	// implementation-defined integer.
	switch {
	case !(z >= 0):
		z = 0
	case z > 255:
		z = 255
	}
	return scale, int32(math.RoundToEven(float64(z)))
}

// QuantizeRowsU8 quantises a rows x cols block of src like QuantizeU8, but
// each row with its own parameters from RowQuantParams (dynamic per-token
// quantisation), which it stores in scales[i] and zeroPoints[i]; the
// values are quantised with invScale = 1/scales[i] (float32). These are the
// RowScale and RowZeroPoint of the qgemm Epilogue that consumes dst.
// Padding columns cols..dstStride-1 are set to the row's zero point.
func QuantizeRowsU8(dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, scales []float32, zeroPoints []int32) {
	quantizeRowsU8(active(), dst, dstStride, src, srcStride, rows, cols, scales, zeroPoints)
}

func quantizeRowsU8(kern *kernels, dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, scales []float32, zeroPoints []int32) {
	if rows <= 0 {
		return
	}
	// Every row's minimum and maximum first, in one kernel call (whose
	// loads overlap from row to row), into the outputs' own memory: the
	// minima in scales, the maxima in zeroPoints seen as float32.
	scales, zeroPoints = scales[:rows], zeroPoints[:rows]
	los, his := scales, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(zeroPoints))), rows)
	kern.minMaxRows(src, srcStride, rows, cols, los, his)
	for i := range rows {
		scales[i], zeroPoints[i] = rowQuantParams(los[i], his[i])
	}
	quantizeRowsPadded(kern, dst, dstStride, src, srcStride, rows, cols, scales, zeroPoints)
}

// quantizeRowsPadded is quantizeU8 with row i's own scale (invScale =
// 1/scales[i]) and zero point zps[i], in one kernel call: the padding
// columns cols..dstStride-1 of row i get code zps[i].
func quantizeRowsPadded(kern *kernels, dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, scales []float32, zps []int32) {
	if rows <= 0 {
		return
	}
	if cols > 0 {
		kern.quantizeRows(dst, dstStride, src, srcStride, rows, cols, scales, zps)
	}
	if cols < dstStride {
		for i := range rows {
			fill(dst[i*dstStride+cols:(i+1)*dstStride], uint8(min(max(zps[i], 0), 255)))
		}
	}
}

// quantMaxZP is the largest zero point magnitude the AVX-512 quantiser
// handles (asmgen/nn quantizer): [-zp, 255-zp] must lie within
// qgemm.QuantizeU8's clamp of +-65536. Zero points of real u8 tensors are
// 0..255; the wrappers run the Go kernels for others.
const quantMaxZP = 65536 - 255

// quantizeRowsWith is kernels.quantizeRows from a kernels.quantize, a
// call per row: row i with invScale 1/scales[i] (float32) and zps[i].
func quantizeRowsWith(quantize func(dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, invScale float32, zp int32)) func(dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, scales []float32, zps []int32) {
	return func(dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, scales []float32, zps []int32) {
		for i := range rows {
			quantize(dst[i*dstStride:], dstStride, src[i*srcStride:], srcStride, 1, cols, 1/scales[i], zps[i])
		}
	}
}

// QuantizeU8Parallel is QuantizeU8 with the rows spread over p's workers
// (nil: the caller's goroutine); the bits are QuantizeU8's.
func QuantizeU8Parallel(p *pool.Pool, dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, invScale float32, zeroPoint int32) {
	forRows(quantizeCalls, p, rows, max(cols, dstStride), quantizeArgs{
		kern: active(), dst: dst, dstStride: dstStride, src: src, srcStride: srcStride, cols: cols,
		invScale: invScale, zeroPoint: zeroPoint,
	}, quantizeRange)
}

// QuantizeRowsU8Parallel is QuantizeRowsU8 with the rows spread over p's
// workers (nil: the caller's goroutine); the bits are QuantizeRowsU8's.
func QuantizeRowsU8Parallel(p *pool.Pool, dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, scales []float32, zeroPoints []int32) {
	forRows(quantizeCalls, p, rows, max(cols, dstStride), quantizeArgs{
		kern: active(), dst: dst, dstStride: dstStride, src: src, srcStride: srcStride, cols: cols,
		scales: scales, zeroPoints: zeroPoints,
	}, quantizeRowsRange)
}

// quantizeArgs are the arguments of the parallel quantisers.
type quantizeArgs struct {
	kern            *kernels
	dst             []uint8
	dstStride       int
	src             []float32
	srcStride, cols int
	invScale        float32
	zeroPoint       int32
	scales          []float32
	zeroPoints      []int32
}

var quantizeCalls = newRowsRecycler[quantizeArgs]()

func quantizeRange(a *quantizeArgs, r0, r1 int) {
	quantizeU8(a.kern, a.dst[r0*a.dstStride:], a.dstStride, a.src[r0*a.srcStride:], a.srcStride, r1-r0, a.cols, a.invScale, a.zeroPoint)
}

func quantizeRowsRange(a *quantizeArgs, r0, r1 int) {
	quantizeRowsU8(a.kern, a.dst[r0*a.dstStride:], a.dstStride, a.src[r0*a.srcStride:], a.srcStride, r1-r0, a.cols, a.scales[r0:], a.zeroPoints[r0:])
}

package nn

import (
	"math"

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

// layerNormMinRows is the smallest row chunk given to one worker
// (about 10 µs of work at hidden size 256).
const layerNormMinRows = 8

// LayerNorm normalises rows rows of src (row stride srcStride) into dst
// (row stride dstStride). Per row, in float64 and in this order (the FP32
// interpreter's, so both give the same bits on amd64):
//
//	mean = (sum_j x_j) / N                      (j ascending)
//	var  = (sum_j (x_j - mean)^2) / N
//	inv  = 1 / sqrt(var + float64(Epsilon))
//	y_j  = float32(((x_j - mean) * inv) * Gamma_j + Beta_j)
//
// dst may be src (the statistics are complete before a row is written).
func LayerNorm(p *pool.Pool, dst []float32, dstStride int, src []float32, srcStride, rows int, ln *LayerNormParams) {
	size, count := chunks(p, rows, layerNormMinRows)
	parallelFor(p, count, func(_, c int) {
		for i := c * size; i < min(rows, (c+1)*size); i++ {
			x := src[i*srcStride : i*srcStride+ln.N]
			mean, inv := rowStats(x, ln.Epsilon)
			y := dst[i*dstStride : i*dstStride+ln.N]
			for j, v := range x {
				y[j] = normalize(v, mean, inv, ln, j)
			}
		}
	})
}

// LayerNormU8 is LayerNorm that also, or only, writes the output quantised
// to u8 for the next QLinear: dstU8[i*u8Stride+j] = qgemm.QuantizeU8(y_j,
// invScale, zeroPoint), padding columns N..u8Stride-1 set to zeroPoint
// (see QuantizeU8). dstF32 may be nil when only the u8 output is needed.
func LayerNormU8(p *pool.Pool, dstF32 []float32, f32Stride int, dstU8 []uint8, u8Stride int, src []float32, srcStride, rows int, ln *LayerNormParams, invScale float32, zeroPoint int32) {
	pad := uint8(min(max(zeroPoint, 0), 255))
	size, count := chunks(p, rows, layerNormMinRows)
	parallelFor(p, count, func(_, c int) {
		for i := c * size; i < min(rows, (c+1)*size); i++ {
			x := src[i*srcStride : i*srcStride+ln.N]
			mean, inv := rowStats(x, ln.Epsilon)
			q := dstU8[i*u8Stride : (i+1)*u8Stride]
			var y []float32
			if dstF32 != nil {
				y = dstF32[i*f32Stride : i*f32Stride+ln.N]
			}
			for j, v := range x {
				o := normalize(v, mean, inv, ln, j)
				if y != nil {
					y[j] = o
				}
				q[j] = qgemm.QuantizeU8(o, invScale, zeroPoint)
			}
			for j := ln.N; j < u8Stride; j++ {
				q[j] = pad
			}
		}
	})
}

// rowStats returns a row's mean and 1/sqrt(var+eps) in float64.
func rowStats(x []float32, eps float32) (mean, inv float64) {
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	n := float64(len(x))
	mean = sum / n
	var sq float64
	for _, v := range x {
		d := float64(v) - mean
		sq += float64(d * d)
	}
	return mean, 1 / math.Sqrt(sq/n+float64(eps))
}

// normalize is one output of LayerNorm.
func normalize(v float32, mean, inv float64, ln *LayerNormParams, j int) float32 {
	o := float64(float64((float64(v)-mean)*inv) * float64(ln.Gamma[j]))
	if ln.Beta != nil {
		o += float64(ln.Beta[j])
	}
	return float32(o)
}

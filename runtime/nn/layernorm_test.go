package nn

import (
	"math"
	"testing"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// layerNormRef is LayerNorm written plainly in float64.
func layerNormRef(x []float32, rows, n int, gamma, beta []float32, eps float32) []float64 {
	y := make([]float64, rows*n)
	for i := range rows {
		row := x[i*n : (i+1)*n]
		mean := 0.0
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(n)
		variance := 0.0
		for _, v := range row {
			variance += (float64(v) - mean) * (float64(v) - mean)
		}
		variance /= float64(n)
		for j, v := range row {
			o := (float64(v) - mean) / math.Sqrt(variance+float64(eps)) * float64(gamma[j])
			if beta != nil {
				o += float64(beta[j])
			}
			y[i*n+j] = o
		}
	}
	return y
}

// lnErrorBound bounds LayerNorm's error against the float64 reference in
// units of 2^-24 * (|z*gamma| + |y|) (TestLayerNorm): five roundings of
// at most half a unit each, and the statistics' own.
const lnErrorBound = 3

func TestLayerNorm(t *testing.T) {
	const rows, n, srcStride, dstStride = 37, 96, 100, 101
	src := randSlice(3, rows*srcStride, -4, 4)
	for j := range n {
		src[srcStride+j] += 1000  // a large mean
		src[2*srcStride+j] = 0.25 // constant row: variance 0
	}
	ln := &LayerNormParams{N: n, Gamma: randSlice(4, n, 0.5, 1.5), Beta: randSlice(5, n, -1, 1), Epsilon: 1e-12}
	packed := make([]float32, rows*n)
	for i := range rows {
		copy(packed[i*n:(i+1)*n], src[i*srcStride:])
	}
	for _, beta := range []bool{true, false} {
		p := *ln
		if !beta {
			p.Beta = nil
		}
		want := layerNormRef(packed, rows, n, p.Gamma, p.Beta, p.Epsilon)
		var first []float32
		withPools(t, func(t *testing.T, pl *pool.Pool) {
			dst := make([]float32, rows*dstStride)
			LayerNorm(pl, dst, dstStride, src, srcStride, rows, &p)
			got := make([]float32, rows*n)
			for i := range rows {
				copy(got[i*n:(i+1)*n], dst[i*dstStride:])
				for j := n; j < dstStride && i < rows-1; j++ {
					if dst[i*dstStride+j] != 0 {
						t.Fatalf("LayerNorm wrote outside row %d at column %d", i, j)
					}
				}
			}
			worst := 0.0
			for i, w := range want {
				// internal/lnstats's float32 arithmetic rounds five times
				// (x - MeanHi, - MeanLo, * Inv, * gamma, + beta), from
				// statistics rounded to float32: each error is half a
				// float32 ulp of z*gamma or of y, so within a few of
				// u = 2^-24 * (|z*gamma| + |y|) together.
				zg := w
				if p.Beta != nil {
					zg -= float64(p.Beta[i%n])
				}
				u := 0x1p-24 * (math.Abs(zg) + math.Abs(w))
				e := 0.0
				if d := math.Abs(float64(got[i]) - w); d != 0 {
					e = d / u
				}
				worst = max(worst, e)
				if e > lnErrorBound {
					t.Fatalf("beta=%v: y[%d] = %g, float64 reference %g (%.2f u, bound %v)", beta, i, got[i], w, e, lnErrorBound)
				}
			}
			t.Logf("beta=%v: worst error %.2f u", beta, worst)
			if first == nil {
				first = got
			} else {
				sameBits(t, "LayerNorm with a pool", got, first)
			}
		})
	}

	// In place gives the same bits.
	inPlace := append([]float32(nil), packed...)
	want := make([]float32, rows*n)
	LayerNorm(nil, want, n, packed, n, rows, ln)
	LayerNorm(nil, inPlace, n, inPlace, n, rows, ln)
	sameBits(t, "in-place LayerNorm", inPlace, want)
}

// TestLayerNormU8 checks the quantising variant is LayerNorm followed by
// QuantizeU8, bit for bit, with and without the f32 output.
func TestLayerNormU8(t *testing.T) {
	const rows, n, kp = 19, 80, 128
	src := randSlice(6, rows*n, -3, 3)
	ln := &LayerNormParams{N: n, Gamma: randSlice(7, n, 0.5, 1.5), Beta: randSlice(8, n, -1, 1), Epsilon: 1e-5}
	const inv, zp = 50, 120
	wantF := make([]float32, rows*n)
	LayerNorm(nil, wantF, n, src, n, rows, ln)
	wantQ := make([]uint8, rows*kp)
	QuantizeU8(wantQ, kp, wantF, n, rows, n, inv, zp)
	withPools(t, func(t *testing.T, p *pool.Pool) {
		gotF := make([]float32, rows*n)
		gotQ := make([]uint8, rows*kp)
		LayerNormU8(p, gotF, n, gotQ, kp, src, n, rows, ln, inv, zp)
		sameBits(t, "LayerNormU8 f32", gotF, wantF)
		onlyQ := make([]uint8, rows*kp)
		LayerNormU8(p, nil, 0, onlyQ, kp, src, n, rows, ln, inv, zp)
		for i := range wantQ {
			if gotQ[i] != wantQ[i] || onlyQ[i] != wantQ[i] {
				t.Fatalf("u8[%d] = %d (u8 only: %d), want %d", i, gotQ[i], onlyQ[i], wantQ[i])
			}
		}
	})
}

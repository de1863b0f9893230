package nn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sqc-dev/sqc/internal/lnstats"
	"github.com/sqc-dev/sqc/runtime/pool"
)

// TestLayerNormDualKernel compares the row kernel with the pure-Go one on
// odd widths, with and without betas, special values in every operand,
// and guard sentinels around both outputs.
func TestLayerNormDualKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, impl := range implementations(t) {
		for _, n := range widths(40, 767, 768, 771) {
			for _, withBeta := range []bool{false, true} {
				x := make([]float32, n)
				fillRandom(r, x, -5, 5, 0.02)
				ln := &LayerNormParams{N: n, Gamma: make([]float32, n), Epsilon: 1e-12}
				gammaQ := make([]float32, n)
				fillRandom(r, ln.Gamma, 0.5, 1.5, 0.01)
				fillRandom(r, gammaQ, 0.01, 3, 0.01)
				var betaQ []float32
				if withBeta {
					ln.Beta, betaQ = make([]float32, n), make([]float32, n)
					fillRandom(r, ln.Beta, -1, 1, 0.01)
					fillRandom(r, betaQ, -0.5, 0.5, 0.01)
				}
				st := lnstats.Row32{MeanHi: r.Float32(), MeanLo: 1e-8 * r.Float32(), Inv: 0.5 + r.Float32()}
				invScale, zp := 1+40*r.Float32(), int32(r.IntN(300)-20)
				y, checkY := guarded(n)
				q, checkQ := guardedU8(n)
				wantY, wantQ := make([]float32, n), make([]uint8, n)
				lnNormalizeDualGo(wantY, wantQ, x, st, ln, gammaQ, betaQ, invScale, zp)
				impl.lnNormalizeDual(y, q, x, st, ln, gammaQ, betaQ, invScale, zp)
				what := fmt.Sprintf("%s dual normalize n=%d beta=%v", impl.name, n, withBeta)
				checkY(t, what)
				checkQ(t, what)
				sameFloats(t, what, y, wantY)
				for j := range n {
					if q[j] != wantQ[j] {
						t.Fatalf("%s: q[%d] = %d, Go kernel %d", what, j, q[j], wantQ[j])
					}
				}
			}
		}
	}
}

// TestLayerNormDual checks the fused driver against what it replaces,
// bit for bit: LayerNorm with ln into the f32 output and LayerNormU8 with
// the u8 output's gamma and beta (u8 only), on both kernel sets, with and
// without a pool, row strides wider than the rows, and padding columns.
func TestLayerNormDual(t *testing.T) {
	const n, srcStride, f32Stride, kp = 83, 85, 87, 96
	for _, rows := range []int{1, 15, 16, 17, 40, 67} {
		for _, withBeta := range []bool{false, true} {
			src := randSlice(uint64(rows), rows*srcStride, -3, 3)
			for j := range n {
				src[j] += 500 // a large mean in row 0
			}
			ln := &LayerNormParams{N: n, Gamma: randSlice(31, n, 0.5, 1.5), Epsilon: 1e-5}
			twin := &LayerNormParams{N: n, Gamma: randSlice(32, n, 0.05, 4), Epsilon: ln.Epsilon}
			if withBeta {
				ln.Beta, twin.Beta = randSlice(33, n, -1, 1), randSlice(34, n, -0.5, 0.5)
			}
			const inv, zp = 37, 131
			wantF := make([]float32, rows*f32Stride)
			wantQ := make([]uint8, rows*kp)
			LayerNorm(nil, wantF, f32Stride, src, srcStride, rows, ln)
			LayerNormU8(nil, nil, 0, wantQ, kp, src, srcStride, rows, twin, inv, zp)
			for _, kern := range []*kernels{goKernels(), active()} {
				withPools(t, func(t *testing.T, p *pool.Pool) {
					what := fmt.Sprintf("%s rows=%d beta=%v workers=%d", kern.name, rows, withBeta, workers(p))
					gotF := make([]float32, rows*f32Stride)
					gotQ := make([]uint8, rows*kp)
					layerNormDual(kern, p, gotF, f32Stride, gotQ, kp, src, srcStride, rows, ln, twin.Gamma, twin.Beta, inv, zp)
					sameBits(t, what+" f32", gotF, wantF)
					for i := range wantQ {
						if gotQ[i] != wantQ[i] {
							t.Fatalf("%s: u8[%d] = %d, want %d", what, i, gotQ[i], wantQ[i])
						}
					}
				})
			}
		}
	}
}

func TestLayerNormDualMisuse(t *testing.T) {
	ln := &LayerNormParams{N: 4, Gamma: []float32{1, 1, 1, 1}, Beta: []float32{0, 0, 0, 0}}
	src, y, q := make([]float32, 4), make([]float32, 4), make([]uint8, 4)
	for name, call := range map[string]func(){
		"no f32 output": func() { LayerNormDual(nil, nil, 4, q, 4, src, 4, 1, ln, ln.Gamma, ln.Beta, 1, 0) },
		"short gammaU8": func() { LayerNormDual(nil, y, 4, q, 4, src, 4, 1, ln, ln.Gamma[:3], ln.Beta, 1, 0) },
		"one beta":      func() { LayerNormDual(nil, y, 4, q, 4, src, 4, 1, ln, ln.Gamma, nil, 1, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			call()
		}()
	}
}

// BenchmarkLayerNormDual compares the fused kernel with the two calls it
// replaces (LayerNorm, then LayerNormU8 of the twin) at BERT-base's
// hidden size and a batch of 8 x 128 tokens.
func BenchmarkLayerNormDual(b *testing.B) {
	const rows, n = 8 * 128, 768
	src := randSlice(1, rows*n, -3, 3)
	dst := make([]float32, rows*n)
	dstU8 := make([]uint8, rows*n)
	ln := &LayerNormParams{N: n, Gamma: randSlice(2, n, 0.5, 1.5), Beta: randSlice(3, n, -1, 1), Epsilon: 1e-12}
	twin := &LayerNormParams{N: n, Gamma: randSlice(4, n, 0.05, 4), Beta: randSlice(5, n, -0.5, 0.5), Epsilon: 1e-12}
	p := pool.New(0)
	defer p.Close()
	b.Run("two", func(b *testing.B) {
		benchKernels(b, func(b *testing.B, kern *kernels) {
			b.SetBytes(int64(4 * len(src)))
			for b.Loop() {
				layerNorm(kern, p, dst, n, nil, 0, src, n, rows, ln, 0, 0)
				layerNorm(kern, p, nil, 0, dstU8, n, src, n, rows, twin, 30, 128)
			}
		})
	})
	b.Run("dual", func(b *testing.B) {
		benchKernels(b, func(b *testing.B, kern *kernels) {
			b.SetBytes(int64(4 * len(src)))
			for b.Loop() {
				layerNormDual(kern, p, dst, n, dstU8, n, src, n, rows, ln, twin.Gamma, twin.Beta, 30, 128)
			}
		})
	})
}

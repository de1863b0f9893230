package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/sqc-dev/sqc/internal/expf"
	"github.com/sqc-dev/sqc/internal/lnstats"
	"github.com/sqc-dev/sqc/runtime/cpu"
)

// Tests that every kernel implementation gives the Go kernels' bits. On a
// build or CPU without assembly kernels, active() is goKernels and the
// comparisons hold trivially; kernels_amd64_test.go also checks that the
// assembly is what ran.

// implementations returns the kernels to compare with goKernels: every
// assembly set this CPU runs (AVX-512 and AVX2 on an AVX-512 machine), or
// the Go kernels themselves where there is none.
func implementations(t *testing.T) []*kernels {
	ks := archKernelSets(cpu.Detect())
	if len(ks) == 0 {
		t.Logf("no assembly kernels in this build or on this CPU: comparing the Go kernels with themselves")
		return []*kernels{goKernels()}
	}
	return ks
}

const guardLen = 19 // odd, so that the guarded slice is unaligned

// guarded returns a slice of n float32 with guardLen sentinels on each
// side (cap limited to n, so appends cannot reach them) and a check that
// the sentinels are intact.
func guarded(n int) ([]float32, func(t *testing.T, what string)) {
	buf := make([]float32, n+2*guardLen)
	for i := range buf {
		buf[i] = math.Float32frombits(0x7fa5a5a5) // a NaN no kernel produces
	}
	s := buf[guardLen : guardLen+n : guardLen+n]
	return s, func(t *testing.T, what string) {
		t.Helper()
		for i := range guardLen {
			if math.Float32bits(buf[i]) != 0x7fa5a5a5 || math.Float32bits(buf[guardLen+n+i]) != 0x7fa5a5a5 {
				t.Fatalf("%s wrote outside its slice", what)
			}
		}
	}
}

// guardedU8 is guarded for bytes.
func guardedU8(n int) ([]uint8, func(t *testing.T, what string)) {
	buf := make([]uint8, n+2*guardLen)
	for i := range buf {
		buf[i] = 0xA5
	}
	s := buf[guardLen : guardLen+n : guardLen+n]
	return s, func(t *testing.T, what string) {
		t.Helper()
		for i := range guardLen {
			if buf[i] != 0xA5 || buf[guardLen+n+i] != 0xA5 {
				t.Fatalf("%s wrote outside its slice", what)
			}
		}
	}
}

// sameFloats fails unless got and want are equal bit for bit, except that
// any two NaNs are equal: NaN payloads depend on operand order, which the
// Go compiler chooses.
func sameFloats(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		g, w := got[i], want[i]
		if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
			t.Fatalf("%s[%d] = %g (%#08x), Go kernel %g (%#08x)", what, i, g, math.Float32bits(g), w, math.Float32bits(w))
		}
	}
}

// specials are values that exercise the kernels' edge cases.
var specials = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-40, -88, -87.3, 88.7, 89, 1e30, -1e30,
}

// fillRandom fills s with values uniform in [lo, hi), and with
// probability pSpecial a value from specials.
func fillRandom(r *rand.Rand, s []float32, lo, hi float32, pSpecial float64) {
	for i := range s {
		if r.Float64() < pSpecial {
			s[i] = specials[r.IntN(len(specials))]
		} else {
			s[i] = lo + float32((hi-lo)*r.Float32()) // float32(): no FMA on arm64
		}
	}
}

// widths returns the row widths 1..33, which cover every partial block
// of 8 and 16 columns and 32-column steps with every remainder, followed
// by more.
func widths(more ...int) []int {
	var ws []int
	for n := 1; n <= 33; n++ {
		ws = append(ws, n)
	}
	return append(ws, more...)
}

var (
	testSeqs = []int{0, 1, 2, 3, 5, 8, 15, 16, 17, 31, 33, 130}
	testDims = []int{1, 3, 5, 12, 16, 17, 32, 64, 65}
)

func TestAttnTransposeKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, impl := range implementations(t) {
		for rows := 1; rows <= attnRows; rows++ {
			for _, cols := range []int{1, 5, 16, 17, 33, 64} {
				stride := cols + r.IntN(3)
				src, _ := guarded((rows-1)*stride + cols)
				fillRandom(r, src, -1, 1, 0.1)
				want := make([]float32, attnRows*cols)
				transposeGo(want, src, stride, rows, cols)
				got, check := guarded(attnRows * cols)
				impl.attnTranspose(got, src, stride, rows, cols)
				check(t, "attnTranspose")
				sameFloats(t, fmt.Sprintf("transpose %dx%d", rows, cols), got, want)
			}
		}
	}
}

func TestAttnScoresKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, impl := range implementations(t) {
		for _, sk := range testSeqs {
			for _, d := range testDims {
				for _, pSpecial := range []float64{0, 0.02} {
					kStride := d + r.IntN(4)
					qT := make([]float32, attnRows*d)
					fillRandom(r, qT, -2, 2, pSpecial)
					k, _ := guarded(max(0, (sk-1)*kStride+d))
					fillRandom(r, k, -2, 2, pSpecial)
					want := make([]float32, attnRows*sk)
					scoresGo(want, qT, k, kStride, sk, d)
					got, check := guarded(attnRows * sk)
					impl.attnScores(got, qT, k, kStride, sk, d)
					check(t, "attnScores")
					sameFloats(t, fmt.Sprintf("scores sk=%d d=%d special=%v", sk, d, pSpecial), got, want)
				}
			}
		}
	}
}

func TestAttnSoftmaxKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, impl := range implementations(t) {
		for _, sk := range testSeqs {
			for mode := range 3 {
				for _, c := range []struct {
					lo, hi   float32
					pSpecial float64
				}{{-4, 4, 0}, {-60, 60, 0}, {-200, 0, 0.05}} {
					scores := make([]float32, attnRows*sk)
					fillRandom(r, scores, c.lo, c.hi, c.pSpecial)
					mask := softmaxMask(r, mode, sk)
					scale := 0.125 + r.Float32()
					want := append([]float32(nil), scores...)
					var wantSums [attnRows]float32
					softmaxGo(want, sk, scale, mask, mode == 2, &wantSums)
					got, check := guarded(len(scores))
					copy(got, scores)
					var sums [attnRows]float32
					impl.attnSoftmax(got, sk, scale, mask, mode == 2, &sums)
					check(t, "attnSoftmax")
					what := fmt.Sprintf("softmax sk=%d mask mode %d range [%g, %g]", sk, mode, c.lo, c.hi)
					sameFloats(t, what, got, want)
					sameFloats(t, what+" sums", sums[:], wantSums[:])
				}
			}
		}
	}
}

// softmaxMask is a random mask of a softmax kernel's mask mode over sk
// keys: nil (mode 0), one value per key (1) or 16 per key (2), each a
// quarter -math.MaxFloat32 (masked out), a quarter in (-3, 0], else 0.
func softmaxMask(r *rand.Rand, mode, sk int) []float32 {
	var mask []float32
	switch mode {
	case 1:
		mask = make([]float32, sk)
	case 2:
		mask = make([]float32, attnRows*sk)
	}
	for i := range mask {
		switch r.IntN(4) {
		case 0:
			mask[i] = -math.MaxFloat32
		case 1:
			mask[i] = -3 * r.Float32()
		}
	}
	return mask
}

// TestAttnSoftmaxExp compares Exp inside softmax on every 97th float32
// bit pattern from -0 down to -Inf and NaN, plus the arguments near the
// flush-to-zero bound and near each rounding boundary of k =
// roundEven(x*log2e): a key row holding 0 makes the row maximum 0, so the
// numerators of the other keys are Exp of their scores. Softmax only takes
// Exp of values <= 0 (or NaN), and that is the range covered.
func TestAttnSoftmaxExp(t *testing.T) {
	var xs []float32
	for bits := uint64(0x80000000); bits <= 0xffffffff; bits += 97 {
		xs = append(xs, math.Float32frombits(uint32(bits)))
	}
	near := func(x float32) {
		b := math.Float32bits(x)
		for d := uint32(0); d <= 8; d++ {
			xs = append(xs, math.Float32frombits(b-4+d))
		}
	}
	near(expf.Min)
	for k := -127; k <= 0; k++ {
		near(float32((float64(k) + 0.5) * math.Ln2))
	}
	const sk = 1 + 4*64 // the zero row plus 4-row groups and a tail
	for _, impl := range implementations(t) {
		s := make([]float32, attnRows*sk)
		want := make([]float32, len(s))
		var sums, wantSums [attnRows]float32
		for at := 0; at < len(xs); {
			clear(s[:attnRows])
			for i := attnRows; i < len(s); i++ {
				s[i] = xs[at%len(xs)]
				at++
			}
			copy(want, s)
			softmaxGo(want, sk, 1, nil, false, &wantSums)
			impl.attnSoftmax(s, sk, 1, nil, false, &sums)
			sameFloats(t, fmt.Sprintf("Exp sweep at %d", at), s, want)
			sameFloats(t, "Exp sweep sums", sums[:], wantSums[:])
		}
	}
}

func TestAttnPVKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, impl := range implementations(t) {
		for _, sk := range testSeqs {
			for _, d := range testDims {
				// Every row-block tail of the kernels (groups of 6 or 4 rows,
				// then 4, 2, 1), and a random count.
				for _, rows := range []int{1, 2, 3, 5, 7, 13, attnRows, 1 + r.IntN(attnRows)} {
					vStride, outStride := d+r.IntN(3), d+r.IntN(3)
					p := make([]float32, attnRows*sk)
					fillRandom(r, p, 0, 1, 0)
					for i := range p {
						switch r.IntN(16) {
						case 0, 1:
							p[i] = 0
						case 2:
							p[i] = float32(math.Copysign(0, -1))
						case 3:
							p[i] = float32(math.NaN()) // not skipped
						}
					}
					v, _ := guarded(max(0, (sk-1)*vStride+d))
					fillRandom(r, v, -2, 2, 0.01)
					// Inf and NaN values under a zero weight: skipped, not 0*Inf.
					for j := range sk {
						if p[j*attnRows] == 0 {
							v[j*vStride] = float32(math.Inf(1))
						}
					}
					var sums [attnRows]float32
					for i := range sums {
						sums[i] = 0.5 + 3*r.Float32()
					}
					if sk == 0 {
						clear(sums[:])
					}
					want := make([]float32, (rows-1)*outStride+d)
					for i := range want {
						want[i] = 42 // row padding must stay
					}
					pvGo(want, outStride, rows, p, v, vStride, sk, d, &sums, make([]float32, attnRows*d))
					got, check := guarded(len(want))
					for i := range got {
						got[i] = 42
					}
					impl.attnPV(got, outStride, rows, p, v, vStride, sk, d, &sums, make([]float32, attnRows*d))
					check(t, "attnPV")
					sameFloats(t, fmt.Sprintf("P·V sk=%d d=%d rows=%d", sk, d, rows), got, want)
				}
			}
		}
	}
}

func TestLayerNormStatsKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, impl := range implementations(t) {
		for _, n := range widths(40, 96, 768, 769) {
			stride := n + r.IntN(3)
			x, _ := guarded((lnGroup-1)*stride + n)
			fillRandom(r, x, -3, 3, 0)
			for j := range n {
				x[stride+j] += 1000    // a large mean
				x[2*stride+j] = 0.25   // constant row
				x[3*stride+j] *= 1e-30 // tiny
				x[4*stride+j] *= 1e30  // huge
				x[5*stride+j] = specials[(j*7)%len(specials)]
			}
			var mean, inv, wantMean, wantInv [lnGroup]float64
			lnStats16Go(x, stride, n, 1e-5, &wantMean, &wantInv)
			impl.lnStats16(x, stride, n, 1e-5, &mean, &inv)
			for i := range lnGroup {
				for _, c := range []struct {
					what      string
					got, want float64
				}{{"mean", mean[i], wantMean[i]}, {"inv", inv[i], wantInv[i]}} {
					if math.Float64bits(c.got) != math.Float64bits(c.want) && !(c.got != c.got && c.want != c.want) {
						t.Fatalf("n=%d row %d: %s = %g, Go kernel %g", n, i, c.what, c.got, c.want)
					}
				}
			}
		}
	}
}

func TestLayerNormNormalizeKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, impl := range implementations(t) {
		for _, n := range widths(40, 768, 771) {
			for variant := range 8 {
				withBeta, withF32, withU8 := variant&1 != 0, variant&2 != 0, variant&4 != 0
				x := make([]float32, n)
				fillRandom(r, x, -5, 5, 0.02)
				ln := &LayerNormParams{N: n, Gamma: make([]float32, n), Epsilon: 1e-12}
				fillRandom(r, ln.Gamma, 0.5, 1.5, 0.01)
				if withBeta {
					ln.Beta = make([]float32, n)
					fillRandom(r, ln.Beta, -1, 1, 0.01)
				}
				st := lnstats.Row32{MeanHi: r.Float32(), MeanLo: 1e-8 * r.Float32(), Inv: 0.5 + r.Float32()}
				invScale, zp := 1+40*r.Float32(), int32(r.IntN(300)-20)
				var y, wantY []float32
				var q, wantQ []uint8
				var checkY, checkQ func(*testing.T, string)
				if withF32 {
					y, checkY = guarded(n)
					wantY = make([]float32, n)
				}
				if withU8 {
					q, checkQ = guardedU8(n)
					wantQ = make([]uint8, n)
				}
				lnNormalizeGo(wantY, wantQ, x, st, ln, invScale, zp)
				impl.lnNormalize(y, q, x, st, ln, invScale, zp)
				what := fmt.Sprintf("normalize n=%d beta=%v f32=%v u8=%v", n, withBeta, withF32, withU8)
				if withF32 {
					checkY(t, what)
					sameFloats(t, what, y, wantY)
				}
				if withU8 {
					checkQ(t, what)
					for j := range n {
						if q[j] != wantQ[j] {
							t.Fatalf("%s: q[%d] = %d, Go kernel %d (y = %g)", what, j, q[j], wantQ[j], wantY)
						}
					}
				}
			}
		}
	}
}

func TestQuantizeKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, impl := range implementations(t) {
		for _, cols := range widths(63, 64, 65, 71, 72, 95, 96, 200, 768) {
			rows := 1 + r.IntN(5)
			srcStride, dstStride := cols+r.IntN(3), cols+r.IntN(5)
			src, _ := guarded((rows-1)*srcStride + cols)
			fillRandom(r, src, -4, 4, 0.05)
			for i := 0; i < len(src); i += 11 {
				src[i] = float32(int(src[i]*8)) / 8 // ties after scaling by 40
			}
			invScale, zp := float32(40), int32(r.IntN(300)-20)
			want := make([]uint8, (rows-1)*dstStride+cols)
			quantizeGo(want, dstStride, src, srcStride, rows, cols, invScale, zp)
			got, check := guardedU8(len(want))
			impl.quantize(got, dstStride, src, srcStride, rows, cols, invScale, zp)
			check(t, "quantize")
			for i := range rows {
				for j := range cols {
					if g, w := got[i*dstStride+j], want[i*dstStride+j]; g != w {
						t.Fatalf("quantize cols=%d: [%d][%d] = %d, Go kernel %d (x = %g)", cols, i, j, g, w, src[i*srcStride+j])
					}
				}
			}

			row := src[:cols]
			lo, hi := impl.minMax(row)
			wlo, whi := minMaxGo(row)
			if math.Float32bits(lo) != math.Float32bits(wlo) || math.Float32bits(hi) != math.Float32bits(whi) {
				t.Fatalf("minMax of %d values = %g, %g; Go kernel %g, %g", cols, lo, hi, wlo, whi)
			}
		}
	}
}

// TestMinMaxKernel checks minMax where MINPS/MAXPS operand order shows:
// -0 (the running +0 must stay +0) and NaN (ignored) at every position of
// rows of one sign or of zeros, so that a special lands in every lane of
// every step and in the Go-scanned tail.
func TestMinMaxKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	negZero, nan := float32(math.Copysign(0, -1)), float32(math.NaN())
	for _, impl := range implementations(t) {
		for _, n := range widths(40, 63, 64, 65, 100) {
			for _, base := range [][2]float32{{0.5, 2}, {-2, -0.5}, {0, 0}} {
				for p := range n {
					row := make([]float32, n)
					fillRandom(r, row, base[0], base[1], 0)
					row[p] = nan
					row[(3*p+1)%n] = negZero
					if p%5 == 0 {
						row[n-1] = nan
					}
					lo, hi := impl.minMax(row)
					wlo, whi := minMaxGo(row)
					if math.Float32bits(lo) != math.Float32bits(wlo) || math.Float32bits(hi) != math.Float32bits(whi) {
						t.Fatalf("%s minMax of %v = %g, %g; Go kernel %g, %g", impl.name, row, lo, hi, wlo, whi)
					}
				}
			}
		}
	}
}

// TestMinMaxRowsAbsMaxColsKernels compares the many-row kernels of INT8
// attention with their Go forms on rows of every partial width and more
// than one 64-column step, at strides wider than the rows, with specials
// (NaN, -0, ±Inf) mixed in, into guarded outputs; absMaxCols also starts
// from nonzero maxima, which it must keep where no |x| exceeds them.
func TestMinMaxRowsAbsMaxColsKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, impl := range implementations(t) {
		for _, cols := range widths(63, 64, 65, 100, 129) {
			for _, rows := range []int{1, 2, 5, 8, 9, 16, 17, 24, 31} { // minMaxRowsAsm: groups of 8, then single rows
				stride := cols + 3
				x := make([]float32, (rows-1)*stride+cols)
				fillRandom(r, x, -3, 3, 0.1)

				lo, checkLo := guarded(rows)
				hi, checkHi := guarded(rows)
				wlo, whi := make([]float32, rows), make([]float32, rows)
				impl.minMaxRows(x, stride, rows, cols, lo, hi)
				checkLo(t, "minMaxRows minima")
				checkHi(t, "minMaxRows maxima")
				minMaxRowsWith(minMaxGo)(x, stride, rows, cols, wlo, whi)
				sameFloats(t, fmt.Sprintf("%s minMaxRows %dx%d minima", impl.name, rows, cols), lo, wlo)
				sameFloats(t, fmt.Sprintf("%s minMaxRows %dx%d maxima", impl.name, rows, cols), hi, whi)

				m, check := guarded(cols)
				for c := range m {
					m[c] = float32(c%3) * 1.25
				}
				want := append([]float32(nil), m...)
				impl.absMaxCols(m, x, stride, rows, cols)
				check(t, "absMaxCols")
				absMaxColsGo(want, x, stride, rows, cols)
				sameFloats(t, fmt.Sprintf("%s absMaxCols %dx%d", impl.name, rows, cols), m, want)
			}
		}
	}
}

// TestLayerNormQuantizeBounds checks that every implementation of the
// LayerNorm and quantiser kernels panics on a slice one element too
// short (the assembly wrappers check bounds before passing pointers), at
// widths that the assembly would otherwise take whole.
func TestLayerNormQuantizeBounds(t *testing.T) {
	const n, stride = 24, 26
	x := make([]float32, n)
	ln := &LayerNormParams{N: n, Gamma: make([]float32, n), Beta: make([]float32, n)}
	var mean, inv [lnGroup]float64
	for _, impl := range implementations(t) {
		for name, call := range map[string]func(){
			"stats rows": func() {
				impl.lnStats16(make([]float32, (lnGroup-1)*stride+n-1), stride, n, 1e-5, &mean, &inv)
			},
			"normalize y": func() { impl.lnNormalize(make([]float32, n-1), nil, x, lnstats.Row32{Inv: 1}, ln, 1, 0) },
			"normalize q": func() { impl.lnNormalize(nil, make([]uint8, n-1), x, lnstats.Row32{Inv: 1}, ln, 1, 0) },
			"normalize gamma": func() {
				impl.lnNormalize(make([]float32, n), nil, x, lnstats.Row32{Inv: 1}, &LayerNormParams{N: n, Gamma: ln.Gamma[:n-1]}, 1, 0)
			},
			"dual q": func() {
				impl.lnNormalizeDual(make([]float32, n), make([]uint8, n-1), x, lnstats.Row32{Inv: 1}, ln, ln.Gamma, ln.Beta, 1, 0)
			},
			"dual betaQ": func() {
				impl.lnNormalizeDual(make([]float32, n), make([]uint8, n), x, lnstats.Row32{Inv: 1}, ln, ln.Gamma, ln.Beta[:n-1], 1, 0)
			},
			"quantize dst": func() { impl.quantize(make([]uint8, 2*n-1), n, make([]float32, 2*n), n, 2, n, 1, 0) },
			"quantize src": func() { impl.quantize(make([]uint8, 2*n), n, make([]float32, 2*n-1), n, 2, n, 1, 0) },
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s %s: no panic", impl.name, name)
					}
				}()
				call()
			}()
		}
	}
}

// attentionCase builds random inputs for Attention with a mask of the
// given kind ("", "padding", "full", "rows", "heads") and row padding.
func attentionCase(r *rand.Rand, batch, sq, sk, heads, hd, pad int, mask string) (q, k, v, m []float32, d *AttentionDims) {
	w := heads * hd
	d = &AttentionDims{
		Batch: batch, SeqQ: sq, SeqK: sk, Heads: heads, HeadDim: hd,
		Scale:   float32(1 / math.Sqrt(float64(hd))),
		QStride: w + pad, KStride: w + 2*pad, VStride: w + 3*pad, OutStride: w + pad,
	}
	q, k, v = make([]float32, batch*sq*d.QStride), make([]float32, batch*sk*d.KStride), make([]float32, batch*sk*d.VStride)
	fillRandom(r, q, -2, 2, 0)
	fillRandom(r, k, -2, 2, 0)
	fillRandom(r, v, -2, 2, 0)
	switch mask {
	case "padding": // [batch, 1, 1, sk]
		m = make([]float32, batch*sk)
		for b := range batch {
			for j := max(0, sk-2*b-1); j < sk; j++ {
				m[b*sk+j] = -math.MaxFloat32
			}
		}
		d.MaskBatchStride = sk
	case "full": // [batch, heads, sq, sk]
		m = make([]float32, batch*heads*sq*sk)
		fillRandom(r, m, -3, 0, 0)
		d.MaskBatchStride, d.MaskHeadStride, d.MaskRowStride = heads*sq*sk, sq*sk, sk
	case "rows": // [batch, 1, sq, sk]
		m = make([]float32, batch*sq*sk)
		fillRandom(r, m, -3, 0, 0)
		d.MaskBatchStride, d.MaskRowStride = sq*sk, sk
	case "heads": // [1, heads, 1, sk]
		m = make([]float32, heads*sk)
		fillRandom(r, m, -3, 0, 0)
		d.MaskHeadStride = sk
	}
	return q, k, v, m, d
}

// TestAttentionMatchesGoKernels runs whole attention calls with the Go
// kernels and the active ones, bit for bit.
func TestAttentionMatchesGoKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, impl := range implementations(t) {
		for _, c := range []struct {
			batch, sq, sk, heads, hd, pad int
			mask                          string
		}{
			{2, 128, 128, 2, 64, 0, "padding"}, {3, 32, 32, 4, 32, 0, "padding"}, {2, 37, 37, 3, 64, 5, "rows"},
			{1, 9, 23, 2, 12, 1, "full"}, {2, 17, 5, 2, 5, 0, "heads"}, {1, 1, 1, 1, 1, 0, ""}, {2, 50, 3, 1, 65, 2, ""},
			{1, 3, 0, 2, 8, 0, "padding"}, // no keys: 0/0, NaN rows from both
		} {
			q, k, v, m, d := attentionCase(r, c.batch, c.sq, c.sk, c.heads, c.hd, c.pad, c.mask)
			run := func(kern *kernels) []float32 {
				out := make([]float32, c.batch*c.sq*d.OutStride)
				scratch := make([]float32, AttentionScratchLen(1, c.sk, c.hd))
				attention(kern, nil, scratch, out, q, k, v, m, nil, d)
				return out
			}
			sameFloats(t, fmt.Sprintf("Attention %+v", c), run(impl), run(goKernels()))
		}
	}
}

// TestLayerNormMatchesGoKernels covers the driver: 16-row groups, the
// remaining rows, and the u8 output with padding.
func TestLayerNormMatchesGoKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, impl := range implementations(t) {
		for _, rows := range []int{1, 15, 16, 17, 40, 64} {
			const n, kp = 96, 128
			src := make([]float32, rows*n)
			fillRandom(r, src, -3, 3, 0)
			ln := &LayerNormParams{N: n, Gamma: make([]float32, n), Beta: make([]float32, n), Epsilon: 1e-12}
			fillRandom(r, ln.Gamma, 0.5, 1.5, 0)
			fillRandom(r, ln.Beta, -1, 1, 0)
			run := func(kern *kernels) ([]float32, []uint8) {
				y, q := make([]float32, rows*n), make([]uint8, rows*kp)
				layerNorm(kern, nil, y, n, q, kp, src, n, rows, ln, 30, 128)
				return y, q
			}
			y, q := run(impl)
			wantY, wantQ := run(goKernels())
			sameFloats(t, fmt.Sprintf("LayerNormU8 rows=%d", rows), y, wantY)
			for i := range q {
				if q[i] != wantQ[i] {
					t.Fatalf("LayerNormU8 rows=%d: u8[%d] = %d, Go kernels %d", rows, i, q[i], wantQ[i])
				}
			}
		}
	}
}

// TestGeluKernel compares both GELU kernels (erf and tanh) and the SiLU
// kernel with their Go forms (internal/gelu and internal/expf, the GEMM
// epilogue's) on every 257th float32 bit pattern, specials and odd
// lengths, in place and not.
func TestGeluKernel(t *testing.T) {
	var xs []float32
	for bits := uint64(0); bits <= 0xffffffff; bits += 257 {
		xs = append(xs, math.Float32frombits(uint32(bits)))
	}
	xs = append(xs, specials...)
	for _, impl := range implementations(t) {
		for _, f := range []struct {
			name      string
			kern, ref func(dst, src []float32)
		}{{"gelu", impl.gelu, geluGo}, {"gelu_tanh", impl.geluTanh, geluTanhGo}, {"silu", impl.silu, siluGo}} {
			want := make([]float32, len(xs))
			f.ref(want, xs)
			got, check := guarded(len(xs))
			f.kern(got, xs)
			check(t, f.name)
			sameFloats(t, f.name+" sweep", got, want)
			for _, n := range []int{1, 15, 16, 17, 47, 48, 49, 100} {
				in := append([]float32(nil), xs[1000:1000+n]...)
				f.kern(in, in)
				sameFloats(t, fmt.Sprintf("%s in place, %d values", f.name, n), in, want[1000:1000+n])
			}
		}
	}
}

// TestQuantizeRowsKernel compares the per-row quantiser with its Go form
// (a quantize call per row) on every partial width, with specials in the
// input, ties, zero points off the u8 range and scales that are tiny,
// huge or infinite, into guarded outputs.
func TestQuantizeRowsKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, impl := range implementations(t) {
		for _, cols := range widths(63, 64, 65, 100, 129) {
			rows := 1 + r.IntN(7)
			srcStride, dstStride := cols+r.IntN(3), cols+r.IntN(5)
			src, _ := guarded((rows-1)*srcStride + cols)
			fillRandom(r, src, -4, 4, 0.05)
			for i := 0; i < len(src); i += 7 {
				src[i] = float32(int(src[i]*8)) / 8 // ties at scale 1/40
			}
			scales, zps := make([]float32, rows), make([]int32, rows)
			for i := range rows {
				scales[i], zps[i] = []float32{1.0 / 40, 3e-3, 7, 1e-30, float32(math.Inf(1))}[r.IntN(5)], int32(r.IntN(300)-20)
			}
			want := make([]uint8, (rows-1)*dstStride+cols)
			quantizeRowsWith(quantizeGo)(want, dstStride, src, srcStride, rows, cols, scales, zps)
			got, check := guardedU8(len(want))
			impl.quantizeRows(got, dstStride, src, srcStride, rows, cols, scales, zps)
			check(t, "quantizeRows")
			for i := range rows {
				for j := range cols {
					if g, w := got[i*dstStride+j], want[i*dstStride+j]; g != w {
						t.Fatalf("%s quantizeRows %dx%d: [%d][%d] = %d, Go kernel %d (x = %g, scale %g, zp %d)",
							impl.name, rows, cols, i, j, g, w, src[i*srcStride+j], scales[i], zps[i])
					}
				}
			}
		}
	}
}

// TestPackQueries16Kernel compares INT8 attention's query packing with its
// Go form for every row count of a strip and several Kp (whole 64-byte
// steps, and one that is not, which takes the Go form everywhere), into
// outputs pre-filled with garbage (the rows of no query must come out
// zero) and guarded on both sides.
func TestPackQueries16Kernel(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	const sentinel = 0xA5A5A5A5
	for _, impl := range implementations(t) {
		for _, kp := range []int{64, 128, 192, 8} {
			for rows := 1; rows <= 16; rows++ {
				codes := make([]uint8, rows*kp)
				for i := range codes {
					codes[i] = uint8(r.Uint32())
				}
				codes[0], codes[len(codes)-1] = 0, 255 // the ends of the range
				n := kp / 4 * 16
				want, wantSum := make([]uint32, n), make([]int32, 16)
				packQueries16Go(want, codes, kp, rows, wantSum)
				buf := make([]uint32, n+16+4*guardLen)
				for i := range buf {
					buf[i] = sentinel
				}
				words := buf[guardLen : guardLen+n : guardLen+n]
				sums := unsafe.Slice((*int32)(unsafe.Pointer(&buf[3*guardLen+n])), 16)
				impl.packQueries16(words, codes, kp, rows, sums)
				what := fmt.Sprintf("%s packQueries16 kp=%d rows=%d", impl.name, kp, rows)
				for i := range guardLen {
					if buf[i] != sentinel || buf[guardLen+n+i] != sentinel || buf[3*guardLen+n+16+i] != sentinel {
						t.Fatalf("%s wrote outside its slices", what)
					}
				}
				for i := range want {
					if words[i] != want[i] {
						t.Fatalf("%s: word %d (group %d, row %d) = %#x, Go kernel %#x", what, i, i/16, i%16, words[i], want[i])
					}
				}
				for i := range wantSum {
					if sums[i] != wantSum[i] {
						t.Fatalf("%s: column sum %d = %d, Go kernel %d", what, i, sums[i], wantSum[i])
					}
				}
			}
		}
	}
}

// TestLinearTileKernel compares LinearF32's tile kernel with its Go form
// for every row count of a tile, depths from 1, and column ranges that
// start anywhere and end in every partial group of 8 and 16, with
// specials (zeros of both signs, infinities, NaN, subnormals) in the
// inputs and the weights, into outputs guarded on both sides.
func TestLinearTileKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for _, impl := range implementations(t) {
		for _, n := range widths(64, 65, 100, 129, 200) {
			for rows := 1; rows <= linearTileRows; rows++ {
				k := []int{1, 2, 7, 64, 129}[r.IntN(5)]
				xStride, dstStride := k+r.IntN(3), n+r.IntN(5)
				x := make([]float32, (rows-1)*xStride+k)
				w := make([]float32, k*n)
				fillRandom(r, x, -2, 2, 0.03)
				fillRandom(r, w, -1, 1, 0.03)
				j0 := r.IntN(n)
				j1 := j0 + 1 + r.IntN(n-j0)
				want := make([]float32, (rows-1)*dstStride+n)
				linearTileGo(want, dstStride, x, xStride, rows, k, n, w, j0, j1)
				got, check := guarded(len(want))
				copy(got, want)
				for i := range rows {
					clear(got[i*dstStride+j0 : i*dstStride+j1]) // must be written
				}
				impl.linearTile(got, dstStride, x, xStride, rows, k, n, w, j0, j1)
				check(t, "linearTile")
				sameFloats(t, fmt.Sprintf("%s linearTile %d rows, k=%d, columns %d..%d of %d", impl.name, rows, k, j0, j1, n), got, want)
			}
		}
	}
}

// TestQuantizeZeroPoints checks the quantisers against the Go kernel where
// the AVX-512 one relies on unsigned saturation (asmgen/nn quantizer):
// values far past the u8 range, past 2^31 (VCVTPS2DQ's 0x80000000),
// infinities and NaN, with zero points around and beyond ±quantMaxZP
// (where it hands over to the Go kernel) and at the int32 limits.
func TestQuantizeZeroPoints(t *testing.T) {
	specials := []float32{
		float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		0.5, 1.5, 2.5, -0.5, -1.5, 127.5, 254.5, 255.5, 256, -255.5, -256,
		65280.5, 65281, 65535.5, 65536, 65537, -65281, -65536, -65537,
		2147483520, 2147483648, 4294967296, -2147483648, -4294967296, 1e30, -1e30,
	}
	const cols = 37 // two chunks and a masked tail
	src := make([]float32, 2*cols)
	for i := range src {
		src[i] = specials[i%len(specials)]
	}
	zps := []int32{0, 1, 128, 255, 256, -1, -20, -256, quantMaxZP, quantMaxZP + 1, -quantMaxZP, -quantMaxZP - 1, 70000, -70000, math.MaxInt32, math.MinInt32}
	for _, impl := range implementations(t) {
		for _, zp := range zps {
			for _, invScale := range []float32{1, 0.25} {
				want := make([]uint8, len(src))
				quantizeGo(want, cols, src, cols, 2, cols, invScale, zp)
				got := make([]uint8, len(src))
				impl.quantize(got, cols, src, cols, 2, cols, invScale, zp)
				rows := slices.Clone(want) // kernels.quantizeRows takes zero points in [0, 255] only
				if zp >= 0 && zp <= 255 {
					impl.quantizeRows(rows, cols, src, cols, 2, cols, []float32{1 / invScale, 1 / invScale}, []int32{zp, zp})
				}
				norm := make([]uint8, cols)
				ln := &LayerNormParams{N: cols, Gamma: make([]float32, cols)}
				for j := range ln.Gamma {
					ln.Gamma[j] = 1
				}
				impl.lnNormalize(nil, norm, src[:cols], lnstats.Row32{Inv: 1}, ln, invScale, zp)
				y, dual := make([]float32, cols), make([]uint8, cols)
				impl.lnNormalizeDual(y, dual, src[:cols], lnstats.Row32{Inv: 1}, ln, ln.Gamma, nil, invScale, zp)
				for i := range want {
					what := fmt.Sprintf("%s zp=%d invScale=%g x=%g", impl.name, zp, invScale, src[i])
					if got[i] != want[i] {
						t.Errorf("%s: quantize %d, Go kernel %d", what, got[i], want[i])
					}
					if rows[i] != want[i] {
						t.Errorf("%s: quantizeRows %d, Go kernel %d", what, rows[i], want[i])
					}
					if i < cols && norm[i] != want[i] {
						t.Errorf("%s: LayerNorm u8 %d, Go kernel %d", what, norm[i], want[i])
					}
					if i < cols && dual[i] != want[i] {
						t.Errorf("%s: dual LayerNorm u8 %d, Go kernel %d", what, dual[i], want[i])
					}
				}
			}
		}
	}
}

// TestSymScalesKernel compares kernels.symScales with the Go loop on odd
// lengths (masked tails), with zeros of both signs, infinities, NaN,
// subnormals and maxima whose m/127 rounds, in place (m = inv, as
// packValues calls it) and not, the outputs guarded.
func TestSymScalesKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN()), 1e-45, 1e-40, 127, 1, 3, math.MaxFloat32}
	for _, impl := range implementations(t) {
		for _, n := range []int{1, 15, 16, 17, 64, 80} {
			m := make([]float32, n)
			fillRandom(r, m, 0, 9, 0.05)
			for i := range m {
				if r.IntN(4) == 0 {
					m[i] = specials[r.IntN(len(specials))]
				}
			}
			wantScale, wantInv := make([]float32, n), make([]float32, n)
			symScalesGo(m, wantScale, wantInv)
			scale, checkScale := guarded(n)
			inv, checkInv := guarded(n)
			impl.symScales(m, scale, inv)
			what := fmt.Sprintf("%s symScales n=%d", impl.name, n)
			checkScale(t, what)
			checkInv(t, what)
			sameFloats(t, what+" scale", scale, wantScale)
			sameFloats(t, what+" inv", inv, wantInv)
			inPlace := slices.Clone(m)
			impl.symScales(inPlace, scale, inPlace)
			sameFloats(t, what+" in place", inPlace, wantInv)
		}
	}
}

package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/internal/expf"
	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// attentionInt8Ref is AttentionInt8's arithmetic written plainly, one
// element at a time, from its definition at the top of attention_int8.go
// (per-key u8 K, per-query s8 Q, per-channel s8 V over the live keys, P
// u8 scaled by the row's largest numerator), with the mask as full
// [batch, heads, seqQ, seqK] through the strides.
func attentionInt8Ref(q, k, v, mask []float32, d *AttentionDims) []float32 {
	hd, sq, sk := d.HeadDim, d.SeqQ, d.SeqK
	y := make([]float32, d.Batch*sq*d.OutStride)
	maskAt := func(b, h, i, j int) float32 {
		if mask == nil {
			return 0
		}
		return mask[b*d.MaskBatchStride+h*d.MaskHeadStride+i*d.MaskRowStride+j]
	}
	for b := range d.Batch {
		for h := range d.Heads {
			ku8 := make([][]int32, sk)
			kS, kZ := make([]float32, sk), make([]int32, sk)
			for j := range sk {
				row := k[(b*sk+j)*d.KStride+h*hd:][:hd]
				kS[j], kZ[j] = RowQuantParams(row)
				for _, x := range row {
					ku8[j] = append(ku8[j], int32(qgemm.QuantizeU8(x, 1/kS[j], kZ[j])))
				}
			}
			qs8 := make([][]int32, sq)
			qS := make([]float32, sq)
			for i := range sq {
				row := q[(b*sq+i)*d.QStride+h*hd:][:hd]
				var m float64
				for _, x := range row {
					if a := math.Abs(float64(x)); a > m {
						m = a
					}
				}
				qS[i] = 1
				if m > 0 {
					qS[i] = float32(m) / 127
				}
				for _, x := range row {
					qs8[i] = append(qs8[i], int32(qgemm.QuantizeU8(x, 1/qS[i], 128))-128)
				}
			}
			live := make([]bool, sk)
			anyLive := false
			for j := range sk {
				for i := range sq {
					live[j] = live[j] || maskAt(b, h, i, j) > -math.MaxFloat32
				}
				anyLive = anyLive || live[j]
			}
			vS := make([]float32, hd)
			for c := range hd {
				var m float64
				for j := range sk {
					if a := math.Abs(float64(v[(b*sk+j)*d.VStride+h*hd+c])); (live[j] || !anyLive) && a > m {
						m = a
					}
				}
				vS[c] = 1
				if m > 0 {
					vS[c] = float32(m) / 127
				}
			}
			for i := range sq {
				x := make([]float32, sk)
				for j := range sk {
					var acc, colSum int32
					for c := range hd {
						acc += ku8[j][c] * qs8[i][c]
						colSum += qs8[i][c]
					}
					s := float32(float32(acc-kZ[j]*colSum) * qS[i])
					s = float32(s * kS[j])
					x[j] = float32(s*d.Scale) + maskAt(b, h, i, j)
				}
				top := x[0]
				for _, s := range x {
					if s > top {
						top = s
					}
				}
				var sum float32
				p := make([]int32, sk)
				for j, s := range x {
					e := expf.Exp(s - top)
					sum += e
					p[j] = int32(qgemm.QuantizeU8(e, 255, 0))
				}
				rs := 1 / (255 * sum)
				for c := range hd {
					var acc int32
					for j := range sk {
						acc += p[j] * refS8(v[(b*sk+j)*d.VStride+h*hd+c], 1/vS[c])
					}
					o := float32(float32(acc) * vS[c])
					y[(b*sq+i)*d.OutStride+h*hd+c] = float32(o * rs)
				}
			}
		}
	}
	return y
}

// refS8 is roundEven(x*inv) clamped to [-127, 127], NaN to -127.
func refS8(x, inv float32) int32 {
	f := math.RoundToEven(float64(x * inv))
	if f != f {
		return -127
	}
	return int32(math.Max(-127, math.Min(127, f)))
}

// int8Engines returns an Engine (1 thread: only its kernels are used) per
// qgemm variant this CPU runs (gemmVariants: the emulated AMX one too).
func int8Engines(t *testing.T) []*qgemm.Engine {
	var es []*qgemm.Engine
	for _, v := range gemmVariants() {
		e, err := qgemm.New(qgemm.Options{Threads: 1, Variant: &v})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		es = append(es, e)
	}
	return es
}

func TestAttentionInt8MatchesReference(t *testing.T) {
	engines := int8Engines(t)
	for _, c := range []attnCase{
		{"bert-like padded", 3, 21, 21, 4, 16, 0, "padding"},
		{"one row", 1, 1, 1, 1, 8, 0, ""},
		{"few keys, wide heads", 2, 3, 3, 2, 96, 0, "padding"},
		{"one key, head dim 64", 1, 1, 1, 2, 64, 0, ""},
		{"strided cross", 2, 9, 13, 3, 5, 7, "full"},
		{"chunk tails", 1, 130, 130, 2, 64, 0, "padding"},
		{"head dim 24, 17 keys", 2, 17, 17, 2, 24, 3, ""},
		{"all masked", 2, 5, 5, 2, 4, 0, "all"},
		{"head broadcast", 2, 6, 7, 3, 4, 1, "rows"},
		{"66 queries", 1, 66, 66, 1, 80, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dims, q, k, v, mask := attnCaseData(c)
			want := attentionInt8Ref(q, k, v, mask, dims)
			for _, e := range engines {
				for _, kern := range append(implementations(t), goKernels()) {
					withPools(t, func(t *testing.T, p *pool.Pool) {
						out := make([]float32, len(want))
						scratch := make([]float32, AttentionInt8ScratchLen(workers(p), c.sk, c.d))
						attentionInt8(kern, p, e, scratch, attnOut{f32: out}, q, k, v, mask, nil, dims, nil)
						sameBits(t, fmt.Sprintf("%s kernels %s workers %d", e.ISA(), kern.name, workers(p)), out, want)
					})
				}
			}
		})
	}
}

// attnCaseData builds the dims and operands of an attnCase as TestAttention
// does.
func attnCaseData(c attnCase) (*AttentionDims, []float32, []float32, []float32, []float32) {
	width := c.heads * c.d
	dims := &AttentionDims{
		Batch: c.batch, SeqQ: c.sq, SeqK: c.sk, Heads: c.heads, HeadDim: c.d,
		Scale:   float32(1 / math.Sqrt(float64(c.d))),
		QStride: width + c.pad, KStride: width + 2*c.pad, VStride: width + 3*c.pad, OutStride: width + c.pad,
	}
	q := randSlice(10, c.batch*c.sq*dims.QStride, -2, 2)
	k := randSlice(11, c.batch*c.sk*dims.KStride, -2, 2)
	v := randSlice(12, c.batch*c.sk*dims.VStride, -2, 2)
	var mask []float32
	switch c.mask {
	case "padding": // [batch, 1, 1, sk], sequence b padded after sk-2b tokens
		mask = make([]float32, c.batch*c.sk)
		for b := range c.batch {
			for j := max(c.sk-2*b, 1); j < c.sk; j++ {
				mask[b*c.sk+j] = -math.MaxFloat32
			}
		}
		dims.MaskBatchStride = c.sk
	case "all":
		mask = make([]float32, c.batch*c.sk)
		for i := range mask {
			mask[i] = -math.MaxFloat32
		}
		dims.MaskBatchStride = c.sk
	case "full": // [batch, heads, sq, sk]
		mask = randSlice(13, c.batch*c.heads*c.sq*c.sk, -3, 0)
		dims.MaskBatchStride, dims.MaskHeadStride, dims.MaskRowStride = c.heads*c.sq*c.sk, c.sq*c.sk, c.sk
	case "rows": // [batch, 1, sq, sk]
		mask = randSlice(14, c.batch*c.sq*c.sk, -3, 0)
		dims.MaskBatchStride, dims.MaskRowStride = c.sq*c.sk, c.sk
	}
	return dims, q, k, v, mask
}

// TestAttentionInt8Accuracy bounds the noise INT8 attention adds on random
// data: its signal-to-noise ratio against the float64 attention.
func TestAttentionInt8Accuracy(t *testing.T) {
	c := attnCase{"bert-like", 2, 128, 128, 4, 64, 0, "padding"}
	dims, q, k, v, mask := attnCaseData(c)
	want := attentionRef(q, k, v, mask, dims)
	e := int8Engines(t)[0]
	out := make([]float32, len(want))
	AttentionInt8(nil, e, make([]float32, AttentionInt8ScratchLen(1, c.sk, c.d)), out, q, k, v, mask, dims)
	var signal, noise float64
	for i, w := range want {
		signal += w * w
		noise += (float64(out[i]) - w) * (float64(out[i]) - w)
	}
	db := 10 * math.Log10(signal/noise)
	t.Logf("INT8 attention vs float64: %.1f dB SQNR", db)
	if db < 35 {
		t.Errorf("INT8 attention SQNR %.1f dB, want >= 35", db)
	}
}

// TestAttentionInt8PackedMatchesAlone: a packed batch and a right-padded
// one give each sequence the bits it has alone.
func TestAttentionInt8PackedMatchesAlone(t *testing.T) {
	const heads, hd = 3, 16
	lengths := []int{5, 1, 70, 17, 64}
	width := heads * hd
	offsets := []int{0}
	for _, l := range lengths {
		offsets = append(offsets, offsets[len(offsets)-1]+l)
	}
	tokens := offsets[len(lengths)]
	q, k, v := randSlice(20, tokens*width, -3, 3), randSlice(21, tokens*width, -3, 3), randSlice(22, tokens*width, -3, 3)
	for _, e := range int8Engines(t) {
		withPools(t, func(t *testing.T, p *pool.Pool) {
			dims := AttentionDims{Heads: heads, HeadDim: hd, Scale: 0.25, QStride: width, KStride: width, VStride: width, OutStride: width}
			packed := make([]float32, tokens*width)
			AttentionInt8Packed(p, e, make([]float32, AttentionInt8ScratchLen(workers(p), 70, hd)), packed, q, k, v, &dims, offsets)
			longest := 70
			padQ, padK, padV := make([]float32, len(lengths)*longest*width), make([]float32, len(lengths)*longest*width), make([]float32, len(lengths)*longest*width)
			mask := make([]float32, len(lengths)*longest)
			for b, l := range lengths {
				copy(padQ[b*longest*width:], q[offsets[b]*width:offsets[b+1]*width])
				copy(padK[b*longest*width:], k[offsets[b]*width:offsets[b+1]*width])
				copy(padV[b*longest*width:], randSlice(uint64(b), longest*width, -50, 50)) // pad values must not matter
				copy(padV[b*longest*width:], v[offsets[b]*width:offsets[b+1]*width])
				for j := l; j < longest; j++ {
					mask[b*longest+j] = -math.MaxFloat32
				}
			}
			pd := dims
			pd.Batch, pd.SeqQ, pd.SeqK, pd.MaskBatchStride = len(lengths), longest, longest, longest
			padded := make([]float32, len(padQ))
			AttentionInt8(p, e, make([]float32, AttentionInt8ScratchLen(workers(p), longest, hd)), padded, padQ, padK, padV, mask, &pd)
			for b, l := range lengths {
				ad := dims
				ad.Batch, ad.SeqQ, ad.SeqK = 1, l, l
				alone := make([]float32, l*width)
				rows := offsets[b] * width
				AttentionInt8(p, e, make([]float32, AttentionInt8ScratchLen(workers(p), l, hd)), alone, q[rows:], k[rows:], v[rows:], nil, &ad)
				what := fmt.Sprintf("%s workers %d sequence %d", e.ISA(), workers(p), b)
				sameBits(t, what+" packed", packed[rows:rows+l*width], alone)
				sameBits(t, what+" padded", padded[b*longest*width:][:l*width], alone)
			}
		})
	}
}

// TestAttentionInt8U8MatchesQuantize: the u8 output forms give the codes
// QuantizeU8 makes of the float32 output, in rows wider than the heads
// (the padding bytes QuantizeU8's), guarded on both sides; the packed form
// too. Scales cover outputs that clamp at 0 and 255, and a zero point
// outside [0, 255].
func TestAttentionInt8U8MatchesQuantize(t *testing.T) {
	for _, c := range []attnCase{
		{"bert-like padded", 3, 21, 21, 4, 16, 0, "padding"},
		{"strided cross", 2, 9, 13, 3, 5, 7, "full"},
		{"all masked", 2, 5, 5, 2, 4, 0, "all"},
		{"no keys", 1, 3, 0, 2, 8, 0, ""},
		{"66 queries", 1, 66, 66, 1, 80, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dims, q, k, v, mask := attnCaseData(c)
			width := c.heads * c.d
			rows := c.batch * c.sq
			for _, e := range int8Engines(t) {
				withPools(t, func(t *testing.T, p *pool.Pool) {
					scratch := make([]float32, AttentionInt8ScratchLen(workers(p), c.sk, c.d))
					f32 := make([]float32, rows*dims.OutStride)
					AttentionInt8(p, e, scratch, f32, q, k, v, mask, dims)
					ud := *dims
					ud.OutStride = qgemm.RoundUp(width+1, qgemm.KBlock) // padded rows
					for _, qp := range []struct {
						inv float32
						zp  int32
					}{{40, 128}, {300, 3}, {7, 300}} {
						want := make([]uint8, rows*ud.OutStride)
						QuantizeU8(want, ud.OutStride, f32, dims.OutStride, rows, width, qp.inv, qp.zp)
						got, check := guardedU8(len(want))
						AttentionInt8U8(p, e, scratch, got, q, k, v, mask, &ud, qp.inv, qp.zp)
						check(t, "AttentionInt8U8")
						if !slices.Equal(got, want) {
							t.Fatalf("%s workers %d inv %g zp %d: AttentionInt8U8 differs from QuantizeU8 of AttentionInt8", e.ISA(), workers(p), qp.inv, qp.zp)
						}
						if mask != nil || c.sq != c.sk || c.pad != 0 {
							continue
						}
						pd := ud
						pd.Batch, pd.SeqQ, pd.SeqK = 0, 0, 0
						offsets := []int{0}
						for range c.batch {
							offsets = append(offsets, offsets[len(offsets)-1]+c.sq)
						}
						packed, check := guardedU8(len(want))
						AttentionInt8U8Packed(p, e, scratch, packed, q, k, v, &pd, offsets, qp.inv, qp.zp)
						check(t, "AttentionInt8U8Packed")
						if !slices.Equal(packed, want) {
							t.Fatalf("%s workers %d inv %g zp %d: AttentionInt8U8Packed differs from QuantizeU8 of AttentionInt8", e.ISA(), workers(p), qp.inv, qp.zp)
						}
					}
				})
			}
		})
	}
}

// TestQuantS8 compares quantS8's magic-number rounding with
// math.RoundToEven on ties, the clamp edges, specials and random values.
func TestQuantS8(t *testing.T) {
	xs := []float32{0, -0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, -126.5, 127, 127.4, 127.5, 128, -127.5, -128,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-30, math.MaxFloat32, -math.MaxFloat32}
	xs = append(xs, randSlice(5, 10000, -140, 140)...)
	for _, x := range xs {
		for _, inv := range []float32{1, 0.37, 3} {
			if got, want := int32(quantS8(x, inv)), refS8(x, inv); got != want {
				t.Errorf("quantS8(%g, %g) = %d, want %d", x, inv, got, want)
			}
		}
	}
}

// TestAttentionInt8DoesNotAllocate: in steady state neither form
// allocates (a forward pass runs one call per layer).
func TestAttentionInt8DoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c := attnCase{"bert-like", 2, 40, 40, 2, 32, 0, "padding"}
	dims, q, k, v, mask := attnCaseData(c)
	p := pool.New(2)
	defer p.Close()
	e, err := qgemm.New(qgemm.Options{Pool: p})
	if err != nil {
		t.Fatal(err)
	}
	scratch := make([]float32, AttentionInt8ScratchLen(p.Workers(), c.sk, c.d))
	out := make([]float32, c.batch*c.sq*dims.OutStride)
	offsets := []int{0, 40, 80}
	pd := *dims
	pd.MaskBatchStride = 0
	if n := testing.AllocsPerRun(20, func() {
		AttentionInt8(p, e, scratch, out, q, k, v, mask, dims)
		AttentionInt8Packed(p, e, scratch, out, q, k, v, &pd, offsets)
	}); n != 0 {
		t.Errorf("%v allocations per run, want 0", n)
	}
}

// TestPackValues4Kernel compares every kernel set's packValues4 with
// packValues4Go on odd channel counts, with NaN, infinities and rounding
// ties among the values, and sentinels around the packed words.
func TestPackValues4Kernel(t *testing.T) {
	const guard = 7
	for _, kern := range implementations(t) {
		for _, hd := range []int{1, 7, 8, 9, 16, 24, 33, 64, 80} {
			npd := qgemm.RoundUp(hd, qgemm.NBlock)
			stripWords := 3 * qgemm.NBlock // three K groups per strip
			var rows [4][]float32
			for i := range rows {
				rows[i] = randSlice(uint64(40+i), hd, -300, 300)
			}
			specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 126.5, -126.5, 127.5, -127.5, 0.5, -0.5, 1e-30}
			for i, x := range specials {
				rows[i%4][(i*5)%hd] = x
			}
			inv := randSlice(50, hd, 0.2, 1.2)
			run := func(k *kernels) ([]uint32, []int32) {
				words := make([]uint32, (npd/qgemm.NBlock)*stripWords+2*guard)
				for i := range words {
					words[i] = 0xdeadbeef
				}
				colSum := randSlice(51, hd, 0, 1) // overwritten below
				sums := make([]int32, hd)
				for i := range sums {
					sums[i] = int32(colSum[i] * 100)
				}
				k.packValues4(words[guard:len(words)-guard], stripWords, &rows, inv, sums, 0, hd)
				for i := range guard {
					if words[i] != 0xdeadbeef || words[len(words)-1-i] != 0xdeadbeef {
						t.Fatalf("%s hd=%d: a sentinel was overwritten", k.name, hd)
					}
				}
				return words, sums
			}
			gotW, gotS := run(kern)
			wantW, wantS := run(goKernels())
			for i := range wantW {
				if gotW[i] != wantW[i] {
					t.Fatalf("%s hd=%d: word %d = %#x, want %#x", kern.name, hd, i, gotW[i], wantW[i])
				}
			}
			for i := range wantS {
				if gotS[i] != wantS[i] {
					t.Fatalf("%s hd=%d: column sum %d = %d, want %d", kern.name, hd, i, gotS[i], wantS[i])
				}
			}
		}
	}
}

// TestAttnProbsKernel compares every kernel set's attnProbs with the
// element-wise definition on odd key counts, with NaN, infinities, values
// outside [0, 1] and rounding ties, and sentinels around P.
func TestAttnProbsKernel(t *testing.T) {
	const guard = 13
	for _, kern := range append(implementations(t), goKernels()) {
		for _, sk := range []int{1, 7, 8, 9, 16, 23, 64, 130} {
			kpv := qgemm.RoundUp(sk, qgemm.KBlock)
			sT := randSlice(uint64(60+sk), sk*attnRows, -0.1, 1.1)
			for i, x := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0.5 / 255, 1.5 / 255, 254.5 / 255, 1, 0, 1e-30, 300, 1e10, -1e10, float32(math.Copysign(0, -1))} {
				sT[(i*37)%len(sT)] = x
			}
			buf := make([]uint8, attnRows*kpv+2*guard)
			for i := range buf {
				buf[i] = 0xa5
			}
			kern.attnProbs(buf[guard:len(buf)-guard], kpv, sT, sk)
			for i := range guard {
				if buf[i] != 0xa5 || buf[len(buf)-1-i] != 0xa5 {
					t.Fatalf("%s sk=%d: a sentinel was overwritten", kern.name, sk)
				}
			}
			p := buf[guard:]
			for r := range attnRows {
				for j := range kpv {
					want := uint8(0xa5) // past the keys: untouched
					if j < sk {
						want = qgemm.QuantizeU8(sT[j*attnRows+r], 255, 0)
					}
					if got := p[r*kpv+j]; got != want {
						t.Fatalf("%s sk=%d: p[%d][%d] = %d, want %d (e = %g)", kern.name, sk, r, j, got, want, sT[min(j, sk-1)*attnRows+r])
					}
				}
			}
		}
	}
}

// TestAttnSoftmaxS32Kernel compares the fused dequantise-and-softmax of
// INT8 attention's scores with its Go form on every kernel set that has
// one, for each mask mode, s32 values near the int32 ends (the zero-point
// product wraps), infinite and tiny key scales, and a row stride wider
// than the block; and checks that the Go form gives the bits of the path
// it replaces (qgemm's epilogue into sT, then the softmax), so kernel
// sets with and without it agree.
func TestAttnSoftmaxS32Kernel(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	e, err := qgemm.New(qgemm.Options{Threads: 1, ISA: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, sk := range testSeqs {
		for mode := range 3 {
			const ldc = attnRows + 48
			in := &s32Scores{
				c: make([]int32, max(sk-1, 0)*ldc+attnRows), ldc: ldc,
				colSum: make([]int32, attnRows), colScale: make([]float32, attnRows),
				rowZP: make([]int32, sk), rowScale: make([]float32, sk),
			}
			for i := range in.c {
				in.c[i] = int32(r.IntN(1<<17) - 1<<16)
				if r.IntN(50) == 0 {
					in.c[i] = []int32{math.MaxInt32, math.MinInt32, -1}[r.IntN(3)]
				}
			}
			for i := range attnRows {
				in.colSum[i], in.colScale[i] = int32(r.IntN(20000)-10000), 1e-4+r.Float32()*1e-3
			}
			for j := range sk {
				in.rowZP[j], in.rowScale[j] = int32(r.IntN(256)), []float32{0.02, 0.5, 1e-30, float32(math.Inf(1))}[min(r.IntN(12), 3)]
			}
			mask := softmaxMask(r, mode, sk)
			scale := float32(0.125)
			what := fmt.Sprintf("softmaxS32 sk=%d mask mode %d", sk, mode)

			want := make([]float32, attnRows*sk)
			var wantSums [attnRows]float32
			softmaxS32Go(want, sk, scale, mask, mode == 2, &wantSums, in)

			viaEpilogue := make([]float32, attnRows*sk)
			ep := qgemm.Epilogue{ColSum: in.colSum, Scale: in.colScale, RowScale: in.rowScale, RowZeroPoint: in.rowZP, OutF32: viaEpilogue, OutStride: attnRows}
			if err := e.EpilogueSerial(&ep, in.c, ldc, sk, attnRows); err != nil {
				t.Fatal(err)
			}
			var epSums [attnRows]float32
			softmaxGo(viaEpilogue, sk, scale, mask, mode == 2, &epSums)
			sameFloats(t, what+": Go form vs epilogue then softmax", want, viaEpilogue)
			sameFloats(t, what+": Go form vs epilogue then softmax, sums", wantSums[:], epSums[:])

			for _, impl := range implementations(t) {
				if impl.attnSoftmaxS32 == nil {
					continue
				}
				got, check := guarded(attnRows * sk)
				var sums [attnRows]float32
				impl.attnSoftmaxS32(got, sk, scale, mask, mode == 2, &sums, in)
				check(t, impl.name+" attnSoftmaxS32")
				sameFloats(t, impl.name+" "+what, got, want)
				sameFloats(t, impl.name+" "+what+" sums", sums[:], wantSums[:])
			}
		}
	}
}

// TestPackValueGroupsKernel compares the whole-head value packing with its
// Go form on every kernel set that has one, for head dims with and without
// a partial strip, one and many groups, rows wider than the head, specials
// among the values, and outputs pre-filled with garbage (the channels past
// hd must come out zero) and guarded; the column sums start nonzero, as
// the kernel adds to them.
func TestPackValueGroupsKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const sentinel = 0xA5A5A5A5
	for _, hd := range []int{1, 15, 16, 17, 64, 100} {
		for _, groups := range []int{1, 3, 32} {
			stride := hd + 5
			v := make([]float32, (4*groups-1)*stride+hd)
			fillRandom(r, v, -3, 3, 0.05)
			inv := make([]float32, hd)
			for c := range inv {
				inv[c] = 127 / (0.5 + 3*r.Float32())
			}
			strips := (hd + 15) / 16
			stripWords := (groups + 2) * 16
			want, wantSum := make([]uint32, strips*stripWords), make([]int32, hd)
			for i := range want {
				want[i] = sentinel
			}
			for c := range wantSum {
				wantSum[c] = int32(c) - 7
			}
			startSum := append([]int32(nil), wantSum...)
			packValueGroupsGo(want, stripWords, v, stride, groups, inv, wantSum, hd)
			for _, impl := range implementations(t) {
				if impl.packValueGroups == nil {
					continue
				}
				buf := make([]uint32, len(want)+2*guardLen)
				for i := range buf {
					buf[i] = sentinel
				}
				words := buf[guardLen : guardLen+len(want) : guardLen+len(want)]
				sums := append([]int32(nil), startSum...)
				impl.packValueGroups(words, stripWords, v, stride, groups, inv, sums, hd)
				what := fmt.Sprintf("%s packValueGroups hd=%d groups=%d", impl.name, hd, groups)
				for i := range guardLen {
					if buf[i] != sentinel || buf[guardLen+len(want)+i] != sentinel {
						t.Fatalf("%s wrote outside its slice", what)
					}
				}
				for i := range want {
					if words[i] != want[i] {
						t.Fatalf("%s: word %d (strip %d, group %d, channel %d) = %#x, Go form %#x",
							what, i, i/stripWords, i%stripWords/16, i%16, words[i], want[i])
					}
				}
				for c := range wantSum {
					if sums[c] != wantSum[c] {
						t.Fatalf("%s: column sum %d = %d, Go form %d", what, c, sums[c], wantSum[c])
					}
				}
			}
		}
	}
}

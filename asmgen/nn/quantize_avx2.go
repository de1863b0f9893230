package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The AVX2 forms of the quantisers' loops (quantize.go has the AVX-512
// ones). Without opmasks they take whole groups of 8 values; the Go
// wrappers do the rest, which is exact: each code depends on its own
// value only, and minMax's running minimum and maximum continue from
// where the assembly stopped.

// genQuantizeAVX2 emits quantizeU8AVX2Asm, quantizeRowsU8AVX2Asm and
// minMaxAVX2Asm.
func genQuantizeAVX2(g *gen, tab avx2Tables) {
	genQuantizeU8AVX2(g, tab)
	genQuantizeRowsU8AVX2(g, tab)
	genMinMaxAVX2(g)
	genMinMaxRowsAVX2(g)
	genAbsMaxColsAVX2(g)
}

// genQuantizeU8AVX2 emits quantizeU8AVX2Asm: per row, 32 columns per step
// (four ymm quantised, packed to 32 bytes and put back in column order
// with one VPERMD), then 8 per step.
func genQuantizeU8AVX2(g *gen, tab avx2Tables) {
	g.Function("quantizeU8AVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *uint8, dstStride int, src *float32, srcStride int, rows int, cols int, invScale float32, zp int32)")
	g.Pragma("noescape")
	g.Doc("quantizeU8AVX2Asm sets dst[i*dstStride+j] = qgemm.QuantizeU8(src[i*srcStride+j], invScale, zp)",
		"for i < rows, j < cols (rows >= 1; cols >= 8, a multiple of 8).")
	g.quantizeRowsAVX2(g.newQuantizerAVX2(), tab, nil)
}

// genQuantizeRowsU8AVX2 emits quantizeRowsU8AVX2Asm, the AVX2 form of
// quantizeRowsU8Asm (each row's own 1/scale by VDIVSS and zero point).
func genQuantizeRowsU8AVX2(g *gen, tab avx2Tables) {
	g.Function("quantizeRowsU8AVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *uint8, dstStride int, src *float32, srcStride int, rows int, cols int, scales *float32, zps *int32)")
	g.Pragma("noescape")
	g.Doc("quantizeRowsU8AVX2Asm sets dst[i*dstStride+j] = qgemm.QuantizeU8(src[i*srcStride+j], 1/scales[i], zps[i])",
		"for i < rows, j < cols (rows >= 1; cols >= 8, a multiple of 8).")
	q := quantizerAVX2{inv: g.YMM(), zp: g.YMM(), lo: g.YMM(), hi: g.YMM()}
	g.VBROADCASTSS(g.consts.f32(-quantClamp), q.lo)
	g.VBROADCASTSS(g.consts.f32(quantClamp), q.hi)
	scales, zps := g.Load("scales"), g.Load("zps")
	g.quantizeRowsAVX2(q, tab, func() { g.rowParams(scales, zps, q.inv, q.zp) })
}

// quantizeRowsAVX2 emits the row and column loops of the AVX2 u8
// quantisers over the dst, dstStride, src, srcStride, rows and cols
// arguments with q's parameters; perRow, if set, runs at the start of
// every row (to load that row's parameters into q).
func (g *gen) quantizeRowsAVX2(q quantizerAVX2, tab avx2Tables, perRow func()) {
	order := g.YMM()
	g.VMOVDQU(tab.packOrder, order)
	dst, src, rows, cols := g.Load("dst"), g.Load("src"), g.Load("rows"), g.Load("cols")
	srcStep := g.Load("srcStride")
	g.SHLQ(operand.U8(2), srcStep)
	dstStep := g.Load("dstStride")
	rowLoop := g.NewLabel("q2_row")
	g.Label(rowLoop)
	if perRow != nil {
		perRow()
	}
	j := g.GP64()
	g.XORQ(j, j)
	stepsThen8(g, j, cols, 32, "q2", func() {
		var c [4]reg.VecVirtual
		for u := range c {
			v := g.YMM()
			g.VMOVUPS(operand.Mem{Base: src, Index: j, Scale: 4, Disp: 32 * u}, v)
			c[u] = q.codes(g, v)
		}
		// Signed then unsigned saturation clamp to [0, 255] (store8); the
		// packs interleave 128-bit lanes, which order undoes.
		g.VPACKSSDW(c[1], c[0], c[0])
		g.VPACKSSDW(c[3], c[2], c[2])
		g.VPACKUSWB(c[2], c[0], c[0])
		g.VPERMD(c[0], order, c[0])
		g.VMOVDQU(c[0], operand.Mem{Base: dst, Index: j, Scale: 1})
	}, func() {
		v := g.YMM()
		g.VMOVUPS(operand.Mem{Base: src, Index: j, Scale: 4}, v)
		q.store8(g, v, operand.Mem{Base: dst, Index: j, Scale: 1})
	})
	g.ADDQ(srcStep, src)
	g.ADDQ(dstStep, dst)
	g.DECQ(rows)
	g.JNZ(operand.LabelRef(rowLoop))
	g.VZEROUPPER()
	g.RET()
}

// genMinMaxAVX2 emits minMaxAVX2Asm, minMaxAsm on AVX2 for whole groups of
// 8 values: lane-wise x < lo ? x : lo (VMINPS with x first) from lo = +0,
// 4 accumulators each for 32 values per step, then 8 per step, then the
// lanes combined. As in minMaxAsm no lane ever holds -0 or NaN, so the
// combining order does not change the result.
func genMinMaxAVX2(g *gen) {
	g.Function("minMaxAVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(x *float32, n int) (lo float32, hi float32)")
	g.Pragma("noescape")
	g.Doc("minMaxAVX2Asm returns min(0, min x[0:n]) and max(0, max x[0:n]), NaNs ignored",
		"(n >= 8, a multiple of 8).")
	x, n := g.Load("x"), g.Load("n")
	lo, hi := g.minMaxRowAVX2(x, n)
	g.Store(lo, g.Return("lo"))
	g.Store(hi, g.Return("hi"))
	g.VZEROUPPER()
	g.RET()
}

// genMinMaxRowsAVX2 emits minMaxRowsAVX2Asm, minMaxAVX2Asm on many rows in
// one call (minMaxRowsAsm's AVX2 form: INT8 attention's per-row scales).
func genMinMaxRowsAVX2(g *gen) {
	g.Function("minMaxRowsAVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(x *float32, stride int, rows int, n int, lo *float32, hi *float32)")
	g.Pragma("noescape")
	g.Doc("minMaxRowsAVX2Asm sets lo[i] = min(0, min row i) and hi[i] = max(0, max row i), NaNs ignored,",
		"for i < rows, row i being x[i*stride : i*stride+n] (rows >= 1; n >= 8, a multiple of 8).")
	g.minMaxRows("mmr2_row", nil, func(x, n, _ reg.GPVirtual) (lo, hi reg.VecVirtual) { return g.minMaxRowAVX2(x, n) })
}

// genAbsMaxColsAVX2 emits absMaxColsAVX2Asm, absMaxColsAsm's AVX2 form
// for whole groups of 8 channels: m[c] = |x| wherever |x| > m[c] (MAXPS
// with |x| first: a NaN leaves m[c]), over the rows in order, 32 channels
// per pass down the rows while 32 are left, then 8.
func genAbsMaxColsAVX2(g *gen) {
	g.Function("absMaxColsAVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(m *float32, x *float32, stride int, rows int, n int)")
	g.Pragma("noescape")
	g.Doc("absMaxColsAVX2Asm sets m[c] = |x[i*stride+c]| wherever that is greater than m[c], for i < rows",
		"ascending and c < n (rows >= 1; n >= 8, a multiple of 8; NaNs leave m alone).")
	m, x, stride, rows, n := g.Load("m"), g.Load("x"), g.Load("stride"), g.Load("rows"), g.Load("n")
	g.SHLQ(operand.U8(2), stride) // in bytes
	abs := g.YMM()
	g.VMOVUPS(g.consts.u32x8(0x7fffffff), abs)
	j := g.GP64()
	g.XORQ(j, j)
	pass := func(width int) func() {
		return func() {
			acc := make([]reg.VecVirtual, width/8)
			for u := range acc {
				acc[u] = g.YMM()
				g.VMOVUPS(operand.Mem{Base: m, Index: j, Scale: 4, Disp: 32 * u}, acc[u])
			}
			row, left := g.GP64(), g.GP64()
			g.LEAQ(operand.Mem{Base: x, Index: j, Scale: 4}, row)
			g.MOVQ(rows, left)
			loop := g.NewLabel("amc2_row")
			g.Label(loop)
			for u := range acc {
				v := g.YMM()
				g.VANDPS(operand.Mem{Base: row, Disp: 32 * u}, abs, v) // |v|
				g.VMAXPS(acc[u], v, acc[u])                            // |v| > m ? |v| : m
			}
			g.ADDQ(stride, row)
			g.DECQ(left)
			g.JNZ(operand.LabelRef(loop))
			for u := range acc {
				g.VMOVUPS(acc[u], operand.Mem{Base: m, Index: j, Scale: 4, Disp: 32 * u})
			}
		}
	}
	stepsThen8(g, j, n, 32, "amc2", pass(32), pass(8))
	g.VZEROUPPER()
	g.RET()
}

// minMaxRowAVX2 emits the scan of the n values at x (n >= 8, a multiple of
// 8) and returns xmm registers whose lane 0 holds min(0, min x) and
// max(0, max x).
func (g *gen) minMaxRowAVX2(x, n reg.GPVirtual) (lo0, hi0 reg.VecVirtual) {
	var lo, hi [4]reg.VecVirtual
	for u := range lo {
		lo[u], hi[u] = g.YMM(), g.YMM()
		g.ZeroVec(lo[u])
		g.ZeroVec(hi[u])
	}
	j := g.GP64()
	g.XORQ(j, j)
	stepsThen8(g, j, n, 32, "mm2", func() {
		for u := range lo {
			v := g.YMM()
			g.VMOVUPS(operand.Mem{Base: x, Index: j, Scale: 4, Disp: 32 * u}, v)
			g.VMINPS(lo[u], v, lo[u]) // v < lo ? v : lo
			g.VMAXPS(hi[u], v, hi[u]) // v > hi ? v : hi
		}
	}, func() {
		v := g.YMM()
		g.VMOVUPS(operand.Mem{Base: x, Index: j, Scale: 4}, v)
		g.VMINPS(lo[0], v, lo[0])
		g.VMAXPS(hi[0], v, hi[0])
	})
	for u := 1; u < len(lo); u++ {
		g.VMINPS(lo[u], lo[0], lo[0])
		g.VMAXPS(hi[u], hi[0], hi[0])
	}
	var out [2]reg.VecVirtual
	for i, v := range []reg.VecVirtual{lo[0], hi[0]} {
		minmax := g.VMINPS
		if i == 1 {
			minmax = g.VMAXPS
		}
		x4 := g.XMM()
		g.VEXTRACTF128(operand.U8(1), v, x4)
		minmax(x4, v.AsX(), x4)
		t := g.XMM()
		g.VMOVHLPS(x4, x4, t) // lanes 2, 3
		minmax(t, x4, x4)
		g.VPSHUFD(operand.U8(1), x4, t) // lane 1
		minmax(t, x4, x4)
		out[i] = x4
	}
	return out[0], out[1]
}

// stepsThen8 emits the column loop of the AVX2 kernels from column j (a
// register it advances) to n (a multiple of 8): wide on width columns at
// j while at least width are left, then narrow on 8 at a time.
func stepsThen8(g *gen, j, n reg.GPVirtual, width int, prefix string, wide, narrow func()) {
	wideL, narrowL, done := g.NewLabel(prefix+"_wide"), g.NewLabel(prefix+"_narrow"), g.NewLabel(prefix+"_done")
	left := g.GP64()
	g.Label(wideL)
	g.MOVQ(n, left)
	g.SUBQ(j, left)
	g.CMPQ(left, operand.U8(width))
	g.JL(operand.LabelRef(narrowL))
	wide()
	g.ADDQ(operand.U8(width), j)
	g.JMP(operand.LabelRef(wideL))
	g.Label(narrowL)
	g.CMPQ(j, n)
	g.JGE(operand.LabelRef(done))
	narrow()
	g.ADDQ(operand.U8(8), j)
	g.JMP(operand.LabelRef(narrowL))
	g.Label(done)
}

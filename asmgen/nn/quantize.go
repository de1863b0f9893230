package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// quantizer holds the registers of qgemm's u8 quantisation (epilogue.go:
// quantizeU8): clamp(roundEven(maxps/minps-clamped v*invScale) + zp, 0, 255).
type quantizer struct {
	inv, zp, zero reg.VecVirtual
}

// newQuantizer loads the invScale and zp arguments of the active function.
func (g *gen) newQuantizer() quantizer {
	q := quantizer{inv: g.broadcastParam("invScale"), zp: g.ZMM(), zero: g.zeroZMM()}
	g.VPBROADCASTD(g.Load32("zp"), q.zp)
	return q
}

// store quantises the 16 floats of v and stores the lanes of k as bytes
// at m.
func (q quantizer) store(g *gen, v reg.VecVirtual, k reg.OpmaskVirtual, m operand.Mem) {
	c := g.consts
	t := g.ZMM()
	g.VMULPS(q.inv, v, t)                   // v * invScale
	g.VMAXPS_BCST(c.f32(-quantClamp), t, t) // maxps(t, -clamp): NaN gives -clamp
	g.VMINPS_BCST(c.f32(quantClamp), t, t)  // minps(t, clamp)
	i := g.ZMM()
	g.VCVTPS2DQ(t, i) // round to nearest even (MXCSR default)
	g.VPADDD(q.zp, i, i)
	g.VPMAXSD(q.zero, i, i)
	g.VPMINSD_BCST(c.u32(255), i, i)
	g.VPMOVDB(i, k, m)
}

// quantChunks is the number of 16-column chunks per step of the
// quantisers: their opmasks are cut from one 64-bit column mask.
const quantChunks = 4

func genQuantize(g *gen) {
	genQuantizeU8(g)
	genMinMax(g)
}

// genQuantizeU8 emits quantizeU8Asm: rows x cols values, 64 columns per
// step.
func genQuantizeU8(g *gen) {
	g.Function("quantizeU8Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *uint8, dstStride int, src *float32, srcStride int, rows int, cols int, invScale float32, zp int32)")
	g.Pragma("noescape")
	g.Doc("quantizeU8Asm sets dst[i*dstStride+j] = qgemm.QuantizeU8(src[i*srcStride+j], invScale, zp)",
		"for i < rows, j < cols (rows, cols >= 1).")
	q := g.newQuantizer()
	dst, src, rows, cols := g.Load("dst"), g.Load("src"), g.Load("rows"), g.Load("cols")
	rowLoop, colLoop := g.NewLabel("q_row"), g.NewLabel("q_col")
	g.Label(rowLoop)
	j := g.GP64()
	g.XORQ(j, j)
	g.Label(colLoop)
	left := g.GP64()
	g.MOVQ(cols, left)
	g.SUBQ(j, left)
	kAll := g.maskOf(g.minConst(left, 16*quantChunks))
	for u := range quantChunks {
		k := kAll
		if u > 0 {
			k = g.K()
			g.KSHIFTRQ(operand.U8(16*u), kAll, k)
		}
		v := g.ZMM()
		g.VMOVUPS_Z(operand.Mem{Base: src, Index: j, Scale: 4, Disp: 64 * u}, k, v)
		q.store(g, v, k, operand.Mem{Base: dst, Index: j, Scale: 1, Disp: 16 * u})
	}
	g.ADDQ(operand.U8(16*quantChunks), j)
	g.CMPQ(j, cols)
	g.JL(operand.LabelRef(colLoop))
	s := g.Load("srcStride")
	g.SHLQ(operand.U8(2), s)
	g.ADDQ(s, src)
	d := g.Load("dstStride")
	g.ADDQ(d, dst)
	g.DECQ(rows)
	g.JNZ(operand.LabelRef(rowLoop))
	g.VZEROUPPER()
	g.RET()
}

// genMinMax emits minMaxAsm: lo = min(0, min x), hi = max(0, max x) with
// NaNs ignored, as runtime/nn's RowQuantParams scans a row: lane-wise
// x < lo ? x : lo (MINPS with x first) from lo = +0, then the lanes
// combined. Minimum and maximum are exact, and no lane ever holds -0 or
// NaN, so the combining order does not change the result.
func genMinMax(g *gen) {
	g.Function("minMaxAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(x *float32, n int) (lo float32, hi float32)")
	g.Pragma("noescape")
	g.Doc("minMaxAsm returns min(0, min x[0:n]) and max(0, max x[0:n]), NaNs ignored (n >= 1).")
	x, n := g.Load("x"), g.Load("n")
	var lo, hi [quantChunks]reg.VecVirtual
	for u := range quantChunks {
		lo[u], hi[u] = g.zeroZMM(), g.zeroZMM()
	}
	j := g.GP64()
	g.XORQ(j, j)
	loop := g.NewLabel("mm_loop")
	g.Label(loop)
	left := g.GP64()
	g.MOVQ(n, left)
	g.SUBQ(j, left)
	kAll := g.maskOf(g.minConst(left, 16*quantChunks))
	for u := range quantChunks {
		k := kAll
		if u > 0 {
			k = g.K()
			g.KSHIFTRQ(operand.U8(16*u), kAll, k)
		}
		v := g.ZMM()
		g.VMOVUPS_Z(operand.Mem{Base: x, Index: j, Scale: 4, Disp: 64 * u}, k, v) // 0 past n: no effect
		g.VMINPS(lo[u], v, lo[u])                                                 // v < lo ? v : lo
		g.VMAXPS(hi[u], v, hi[u])                                                 // v > hi ? v : hi
	}
	g.ADDQ(operand.U8(16*quantChunks), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(loop))
	for u := 1; u < quantChunks; u++ {
		g.VMINPS(lo[u], lo[0], lo[0])
		g.VMAXPS(hi[u], hi[0], hi[0])
	}
	out := []string{"lo", "hi"}
	for i, v := range []reg.VecVirtual{lo[0], hi[0]} {
		minmax := g.VMINPS
		if i == 1 {
			minmax = g.VMAXPS
		}
		y := g.YMM()
		g.VEXTRACTF32X8(operand.U8(1), v, y)
		minmax(y, v.AsY(), y)
		x4 := g.XMM()
		g.VEXTRACTF128(operand.U8(1), y, x4)
		minmax(x4, y.AsX(), x4)
		t := g.XMM()
		g.VMOVHLPS(x4, x4, t) // lanes 2, 3
		minmax(t, x4, x4)
		g.VPSHUFD(operand.U8(1), x4, t) // lane 1
		minmax(t, x4, x4)
		g.Store(x4, g.Return(out[i]))
	}
	g.VZEROUPPER()
	g.RET()
}

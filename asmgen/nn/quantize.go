package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// quantizer holds the registers of qgemm's u8 quantisation (epilogue.go:
// quantizeU8): clamp(roundEven(maxps/minps-clamped v*invScale) + zp, 0,
// 255), with lo = -zp as a float32.
//
// store computes it in five operations instead of eight: t = maxps(v*inv,
// lo) (NaN gives lo), then roundEven(t) + zp (wrapping) stored with
// VPMOVUSDB's unsigned saturation. For |zp| <= quantMaxZP the bytes are
// quantizeU8's: t < -zp, NaN included, gives 0 both ways (-zp is an
// integer and rounding is monotonic); otherwise roundEven(t) + zp >= 0,
// and any value it should clamp to 255 comes out either >= 255 or, where
// t is past 2^31 (VCVTPS2DQ's 0x80000000) or the add wraps, with bit 31
// set: >= 2^31 unsigned, so 255 too. The wrappers check the zero point
// (runtime/nn quantZPOK) and run the Go kernel for others; the per-row
// quantiser's zero points are in [0, 255] by its contract.
type quantizer struct {
	inv, zp, lo, zero reg.VecVirtual
}

// newQuantizer loads the invScale and zp arguments of the active function.
func (g *gen) newQuantizer() quantizer {
	q := quantizer{inv: g.broadcastParam("invScale"), zp: g.ZMM(), lo: g.ZMM(), zero: g.zeroZMM()}
	g.VPBROADCASTD(g.Load32("zp"), q.zp)
	q.setLow(g)
	return q
}

// setLow sets lo to -zp.
func (q quantizer) setLow(g *gen) {
	g.VCVTDQ2PS(q.zp, q.lo)
	g.VSUBPS(q.lo, q.zero, q.lo) // 0 - zp
}

// store quantises the 16 floats of v and stores the lanes of k as bytes
// at m.
func (q quantizer) store(g *gen, v reg.VecVirtual, k reg.OpmaskVirtual, m operand.Mem) {
	t := g.ZMM()
	g.VMULPS(q.inv, v, t) // v * invScale
	g.VMAXPS(q.lo, t, t)  // maxps(t, -zp): NaN gives -zp
	i := g.ZMM()
	g.VCVTPS2DQ(t, i) // round to nearest even (MXCSR default)
	g.VPADDD(q.zp, i, i)
	g.VPMOVUSDB(i, k, m) // unsigned saturation: see quantizer
}

// quantChunks is the number of 16-column chunks per step of the
// quantisers: their opmasks are cut from one 64-bit column mask.
const quantChunks = 4

func genQuantize(g *gen) {
	genQuantizeU8(g)
	genQuantizeRowsU8(g)
	genMinMax(g)
	genMinMaxRows(g)
	genAbsMaxCols(g)
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
	g.quantizeRows(g.newQuantizer(), nil)
}

// genQuantizeRowsU8 emits quantizeRowsU8Asm, quantizeU8Asm with each row's
// own parameters: INT8 attention quantises every key and query row (64
// values) on its own scale, and one call per row cost more than the row.
// invScale is 1/scales[i] by VDIVSS, the correctly rounded float32
// division Go's 1/scale is too.
func genQuantizeRowsU8(g *gen) {
	g.Function("quantizeRowsU8Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *uint8, dstStride int, src *float32, srcStride int, rows int, cols int, scales *float32, zps *int32)")
	g.Pragma("noescape")
	g.Doc("quantizeRowsU8Asm sets dst[i*dstStride+j] = qgemm.QuantizeU8(src[i*srcStride+j], 1/scales[i], zps[i])",
		"for i < rows, j < cols (rows, cols >= 1).")
	q := quantizer{inv: g.ZMM(), zp: g.ZMM(), lo: g.ZMM(), zero: g.zeroZMM()}
	scales, zps := g.Load("scales"), g.Load("zps")
	g.quantizeRows(q, func() {
		g.rowParams(scales, zps, q.inv, q.zp)
		q.setLow(g)
	})
}

// rowParams emits, at the start of a row of the per-row quantisers, the
// loads of that row's parameters into every lane of inv (1/scales[i], by
// VDIVSS: the correctly rounded float32 division Go's 1/scale is too) and
// zp (zps[i]), a zmm or ymm pair, and moves scales and zps on a row.
func (g *gen) rowParams(scales, zps reg.GPVirtual, inv, zp reg.VecVirtual) {
	x := g.XMM()
	g.VMOVSS(g.consts.f32(1), x)
	g.VDIVSS(operand.Mem{Base: scales}, x, x) // 1 / scales[i]
	g.VBROADCASTSS(x, inv)
	g.VPBROADCASTD(operand.Mem{Base: zps}, zp)
	g.ADDQ(operand.U8(4), scales)
	g.ADDQ(operand.U8(4), zps)
}

// quantizeRows emits the row and column loops of the u8 quantisers over
// the dst, dstStride, src, srcStride, rows and cols arguments, 64 columns
// per step, with q's parameters; perRow, if set, runs at the start of
// every row (to load that row's parameters into q).
func (g *gen) quantizeRows(q quantizer, perRow func()) {
	dst, src, rows, cols := g.Load("dst"), g.Load("src"), g.Load("rows"), g.Load("cols")
	rowLoop, colLoop := g.NewLabel("q_row"), g.NewLabel("q_col")
	g.Label(rowLoop)
	if perRow != nil {
		perRow()
	}
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
	lo, hi := g.minMaxRow(x, n, nil)
	g.Store(lo, g.Return("lo"))
	g.Store(hi, g.Return("hi"))
	g.VZEROUPPER()
	g.RET()
}

// genMinMaxRows emits minMaxRowsAsm, minMaxAsm on many rows in one call.
// INT8 attention quantises each key and query row (64 values, 256 bytes,
// rows 9 KiB apart in a fused QKV buffer) on its own scale. Rows go in
// groups of minMaxGroup: each row's columns reduce lane-wise into its own
// pair of registers (the rows' chains independent, their loads
// overlapping, the group after next prefetched into L1 meanwhile), then one
// transposing tree (minMaxTree) takes the group's 8 minima and 8 maxima
// across lanes together, where reducing each row on its own took 8
// dependent shuffles and compares per extreme: a 64-value row took 4 ns
// on one Zen 5 core, all of it compute. The last rows%8 rows go one by
// one as before.
func genMinMaxRows(g *gen) {
	// minMaxTree's final lane order: row r's extreme is in lane 4(r%4) +
	// r/4. (A DATA section of its own, before the function.)
	orderTab := g.StaticGlobal("nnMinMaxOrder")
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	for i := range 16 {
		v := 0
		if i < minMaxGroup {
			v = 4*(i%4) + i/4
		}
		g.AddDatum(4*i, operand.U32(uint32(v)))
	}

	g.Function("minMaxRowsAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(x *float32, stride int, rows int, n int, lo *float32, hi *float32)")
	g.Pragma("noescape")
	g.Doc("minMaxRowsAsm sets lo[i] = min(0, min row i) and hi[i] = max(0, max row i), NaNs ignored, for",
		"i < rows, row i being x[i*stride : i*stride+n] (rows, n >= 1).")
	groups := func(a minMaxArgs) {
		x, stride, rows, n, loOut, hiOut := a.x, a.stride, a.rows, a.n, a.loOut, a.hiOut
		// The column steps of every row: n/16 whole ones, then the n%16 tail
		// under its mask (masked lanes read 0, which no extreme changes: lo
		// <= 0 <= hi throughout).
		steps := g.GP64()
		g.MOVQ(n, steps)
		g.SHRQ(operand.U8(4), steps)
		tailW := g.GP64()
		g.MOVQ(n, tailW)
		g.ANDQ(operand.U8(15), tailW)
		tail := g.maskOf(tailW)
		ahead := g.GP64() // minMaxGroup rows, in bytes: the next group
		g.MOVQ(stride, ahead)
		g.SHLQ(operand.U8(3), ahead)

		groupLoop, end := g.NewLabel("mmr_group"), g.NewLabel("mmr_groups_end")
		g.Label(groupLoop)
		g.CMPQ(rows, operand.U8(minMaxGroup))
		g.JL(operand.LabelRef(end))
		var lo, hi [minMaxGroup]reg.VecVirtual
		rp := g.GP64()
		g.MOVQ(x, rp)
		for r := range minMaxGroup {
			lo[r], hi[r] = g.zeroZMM(), g.zeroZMM()
			if r > 0 {
				g.ADDQ(stride, rp)
			}
			off, c, next := g.GP64(), g.GP64(), g.GP64()
			g.XORQ(off, off)
			g.MOVQ(steps, c)
			g.LEAQ(operand.Mem{Base: rp, Index: ahead, Scale: 2}, next) // this row of the group after next
			colLoop, colTail, done := g.NewLabel("mmr_col"), g.NewLabel("mmr_tail"), g.NewLabel("mmr_done")
			g.TESTQ(c, c)
			g.JZ(operand.LabelRef(colTail))
			g.Label(colLoop)
			g.PREFETCHT0(operand.Mem{Base: next, Index: off, Scale: 1}) // never faults
			v := g.ZMM()
			g.VMOVUPS(operand.Mem{Base: rp, Index: off, Scale: 1}, v)
			g.VMINPS(lo[r], v, lo[r]) // v < lo ? v : lo
			g.VMAXPS(hi[r], v, hi[r]) // v > hi ? v : hi
			g.ADDQ(operand.U8(64), off)
			g.DECQ(c)
			g.JNZ(operand.LabelRef(colLoop))
			g.Label(colTail)
			g.KORTESTW(tail, tail)
			g.JZ(operand.LabelRef(done))
			t := g.ZMM()
			g.VMOVUPS_Z(operand.Mem{Base: rp, Index: off, Scale: 1}, tail, t)
			g.VMINPS(lo[r], t, lo[r])
			g.VMAXPS(hi[r], t, hi[r])
			g.Label(done)
		}
		order := g.ZMM()
		g.VMOVDQU32(orderTab, order)
		eightW := g.GP64()
		g.MOVQ(operand.U32(minMaxGroup), eightW)
		eight := g.maskOf(eightW)
		g.VMOVUPS(g.minMaxTree(lo, g.VMINPS, order), eight, operand.Mem{Base: loOut})
		g.VMOVUPS(g.minMaxTree(hi, g.VMAXPS, order), eight, operand.Mem{Base: hiOut})
		g.ADDQ(operand.U8(4*minMaxGroup), loOut)
		g.ADDQ(operand.U8(4*minMaxGroup), hiOut)
		g.ADDQ(ahead, x)
		g.SUBQ(operand.U8(minMaxGroup), rows)
		g.JMP(operand.LabelRef(groupLoop))
		g.Label(end)
	}
	// The rows left one by one, each prefetching the next.
	g.minMaxRows("mmr_row", groups, func(x, n, stride reg.GPVirtual) (lo, hi reg.VecVirtual) {
		next := g.GP64()
		g.LEAQ(operand.Mem{Base: x, Index: stride, Scale: 1}, next)
		return g.minMaxRow(x, n, next)
	})
}

// minMaxGroup is the rows minMaxRowsAsm reduces together: two registers
// each (16 of the 32 zmm), one tree for all.
const minMaxGroup = 8

// minMaxTree returns, in lanes 0..7, op (VMINPS or VMAXPS) over the 16
// lanes of each of the 8 registers v, in their order: shuffles of 256-bit
// halves, 128-bit quarters, then pairs and single lanes within quarters,
// each level halving the lanes per row (8, 4, 2, 1) with one op per pair
// of registers, and a final VPERMPS (order) to put row r's lane at r.
// Minimum and maximum are exact and the lanes hold no NaN or -0, so the
// tree gives the bits of any other order.
func (g *gen) minMaxTree(v [minMaxGroup]reg.VecVirtual, op func(...operand.Op), order reg.VecVirtual) reg.VecVirtual {
	pairs := func(in []reg.VecVirtual, shuf func(a, b reg.VecVirtual) (reg.VecVirtual, reg.VecVirtual)) []reg.VecVirtual {
		out := make([]reg.VecVirtual, len(in)/2)
		for i := range out {
			t1, t2 := shuf(in[2*i], in[2*i+1])
			op(t2, t1, t1)
			out[i] = t1
		}
		return out
	}
	// split returns the shuffle pair of one level: imm lo, then hi, of shuf
	// (VSHUFF32X4 on 128-bit quarters, VSHUFPS on lanes within them).
	split := func(shuf func(...operand.Op), lo, hi uint8) func(a, b reg.VecVirtual) (reg.VecVirtual, reg.VecVirtual) {
		return func(a, b reg.VecVirtual) (reg.VecVirtual, reg.VecVirtual) {
			t1, t2 := g.ZMM(), g.ZMM()
			shuf(operand.U8(lo), b, a, t1)
			shuf(operand.U8(hi), b, a, t2)
			return t1, t2
		}
	}
	// Rows a, b per pair: [a.q0 a.q1 b.q0 b.q1] against [a.q2 a.q3 b.q2 b.q3].
	l1 := pairs(v[:], split(g.VSHUFF32X4, 0x44, 0xEE))
	// [a' b' c' d'] quarters: [a.q0 b.q0 c.q0 d.q0] against [a.q1 b.q1 ...].
	l2 := pairs(l1, split(g.VSHUFF32X4, 0x88, 0xDD))
	// Within each quarter of rows (a, e), (b, f), ...: lanes 0, 1 against 2, 3.
	l3 := pairs(l2, split(g.VSHUFPS, 0x44, 0xEE))[0]
	// Then lanes 0, 2 against 1, 3 of itself: quarter q holds rows q and q+4 in lanes 0 and 1.
	t1 := pairs([]reg.VecVirtual{l3, l3}, split(g.VSHUFPS, 0x88, 0xDD))[0]
	out := g.ZMM()
	g.VPERMPS(t1, order, out)
	return out
}

// minMaxRows emits the row loop of the many-row minMax kernels over the
// x, stride, rows, n, lo and hi arguments: groups (if not nil) first takes
// the rows it can, then row reduces each remaining row's n values at x
// (stride: the row stride in bytes) into lane 0 of two xmm registers,
// stored to lo[i] and hi[i].
func (g *gen) minMaxRows(label string, groups func(a minMaxArgs), row func(x, n, stride reg.GPVirtual) (lo, hi reg.VecVirtual)) {
	a := minMaxArgs{x: g.Load("x"), stride: g.Load("stride"), rows: g.Load("rows"), n: g.Load("n"), loOut: g.Load("lo"), hiOut: g.Load("hi")}
	x, stride, rows, n, loOut, hiOut := a.x, a.stride, a.rows, a.n, a.loOut, a.hiOut
	g.SHLQ(operand.U8(2), stride) // in bytes
	done := g.NewLabel(label + "_end")
	if groups != nil {
		groups(a)
		g.TESTQ(rows, rows) // the groups may have taken every row
		g.JZ(operand.LabelRef(done))
	}
	loop := g.NewLabel(label)
	g.Label(loop)
	lo, hi := row(x, n, stride)
	g.VMOVSS(lo, operand.Mem{Base: loOut})
	g.VMOVSS(hi, operand.Mem{Base: hiOut})
	g.ADDQ(operand.U8(4), loOut)
	g.ADDQ(operand.U8(4), hiOut)
	g.ADDQ(stride, x)
	g.DECQ(rows)
	g.JNZ(operand.LabelRef(loop))
	g.Label(done)
	g.VZEROUPPER()
	g.RET()
}

// minMaxArgs are the registers of the many-row minMax kernels' arguments
// (stride in bytes), which a groups prologue moves past the rows it takes.
type minMaxArgs struct{ x, stride, rows, n, loOut, hiOut reg.GPVirtual }

// minMaxRow emits the scan of the n values at x (n >= 1) and returns xmm
// registers whose lane 0 holds min(0, min x) and max(0, max x). With
// prefetch set, the same columns of the row there are prefetched into L1
// as they are read here.
func (g *gen) minMaxRow(x, n reg.GPVirtual, prefetch reg.GPVirtual) (lo0, hi0 reg.VecVirtual) {
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
		if prefetch != nil {
			g.PREFETCHT0(operand.Mem{Base: prefetch, Index: j, Scale: 4, Disp: 64 * u}) // never faults
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
	var out [2]reg.VecVirtual
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
		out[i] = x4
	}
	return out[0], out[1]
}

// genAbsMaxCols emits absMaxColsAsm, INT8 attention's per-channel maxima
// of |V| (runtime/nn packValues): m[c] = |x| wherever |x| > m[c] (MAXPS
// with |x| first: a NaN leaves m[c]), over the rows in order, 64 channels
// per pass down the rows, so the head's values (64 channels of 128 keys:
// 32 KiB, in L1) are read once and each maximum stays in a register.
func genAbsMaxCols(g *gen) {
	g.Function("absMaxColsAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(m *float32, x *float32, stride int, rows int, n int)")
	g.Pragma("noescape")
	g.Doc("absMaxColsAsm sets m[c] = |x[i*stride+c]| wherever that is greater than m[c], for i < rows",
		"ascending and c < n (rows, n >= 1; NaNs leave m alone).")
	m, x, stride, rows, n := g.Load("m"), g.Load("x"), g.Load("stride"), g.Load("rows"), g.Load("n")
	g.SHLQ(operand.U8(2), stride) // in bytes
	j := g.GP64()
	g.XORQ(j, j)
	colLoop, rowLoop := g.NewLabel("amc_col"), g.NewLabel("amc_row")
	g.Label(colLoop)
	left := g.GP64()
	g.MOVQ(n, left)
	g.SUBQ(j, left)
	kAll := g.maskOf(g.minConst(left, 16*quantChunks))
	var k [quantChunks]reg.OpmaskVirtual
	var acc [quantChunks]reg.VecVirtual
	for u := range quantChunks {
		k[u] = kAll
		if u > 0 {
			k[u] = g.K()
			g.KSHIFTRQ(operand.U8(16*u), kAll, k[u])
		}
		acc[u] = g.ZMM()
		g.VMOVUPS_Z(operand.Mem{Base: m, Index: j, Scale: 4, Disp: 64 * u}, k[u], acc[u])
	}
	row, left2 := g.GP64(), g.GP64()
	g.MOVQ(x, row)
	g.MOVQ(rows, left2)
	g.Label(rowLoop)
	for u := range quantChunks {
		v := g.ZMM()
		g.VMOVUPS_Z(operand.Mem{Base: row, Index: j, Scale: 4, Disp: 64 * u}, k[u], v) // 0 past n: no effect
		g.VPANDD_BCST(g.consts.u32(0x7fffffff), v, v)                                  // |v|
		g.VMAXPS(acc[u], v, acc[u])                                                    // |v| > m ? |v| : m
	}
	g.ADDQ(stride, row)
	g.DECQ(left2)
	g.JNZ(operand.LabelRef(rowLoop))
	for u := range quantChunks {
		g.VMOVUPS(acc[u], k[u], operand.Mem{Base: m, Index: j, Scale: 4, Disp: 64 * u})
	}
	g.ADDQ(operand.U8(16*quantChunks), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(colLoop))
	g.VZEROUPPER()
	g.RET()
}

package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/sqc-dev/sqc/asmgen/expavo"
	"github.com/sqc-dev/sqc/internal/expf"
)

// Attention works on blocks of 16 query rows of one head, one query row
// per zmm lane (runtime/nn/attention.go): the head's Q block transposed to
// qT [d][16], scores and probabilities sT [sk][16], the mask transposed to
// [sk][16] when it varies by row. Every sum of the Go kernels (the q·k dot
// product over c, the softmax denominator and the P·V sum over keys) runs
// down one lane, or for P·V within one lane of a register of value
// columns, in the Go order, so vectorising reorders nothing. What the
// kernels vary is only how many independent sums run at once and how many
// loads feed them.

// tailGroups are the block widths a loop over keys, columns or rows steps
// through after its main width (stepGroupsOf): at most one of each width
// below the main one.
var tailGroups = []int{8, 4, 2, 1}

func genAttention(g *gen) {
	genAttnTranspose(g)
	genAttnScores(g)
	genAttnScores2(g)
	genAttnSoftmax(g)
	genAttnSoftmaxS32(g)
	genAttnPV(g)
}

// genAttnTranspose emits attnTransposeAsm: dst[c*16+r] = src[r*stride+c]
// for r < rows, c < cols, and 0 for rows <= r < 16.
func genAttnTranspose(g *gen) {
	g.Function("attnTransposeAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *float32, src *float32, stride int, rows int, cols int)")
	g.Pragma("noescape")
	g.Doc("attnTransposeAsm sets dst[c*16+r] = src[r*stride+c] for r < rows, c < cols,",
		"and dst[c*16+r] = 0 for rows <= r < 16 (1 <= rows <= 16, cols >= 1).")
	dst, src := g.Load("dst"), g.Load("src")
	strideB := g.Load("stride")
	g.SHLQ(operand.U8(2), strideB)
	rows, left := g.Load("rows"), g.Load("cols")

	loop := g.NewLabel("tr_loop")
	g.Label(loop)
	w := g.minConst(left, 16)
	k := g.maskOf(w)
	cols := g.transpose16(g.loadRows(src, strideB, k, rows))
	stored := g.NewLabel("tr_stored")
	for u, c := range cols {
		if u > 0 {
			g.CMPQ(w, operand.U32(u))
			g.JLE(operand.LabelRef(stored))
		}
		g.VMOVUPS(c, operand.Mem{Base: dst, Disp: 64 * u})
	}
	g.Label(stored)
	g.ADDQ(operand.U32(16*64), dst)
	g.ADDQ(operand.U8(64), src)
	g.SUBQ(operand.U8(16), left)
	g.JG(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

// genAttnScores emits attnScoresAsm: for each key j, lane r of sT[j] is
// sum_c k[j][c]*qT[c][r], c ascending from 0, each product rounded (no
// FMA). Groups of up to 16 keys share each load of qT[c]; each key's
// k[j][c] is an embedded broadcast.
func genAttnScores(g *gen) {
	g.Function("attnScoresAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(s *float32, qT *float32, k *float32, kStride int, sk int, d int)")
	g.Pragma("noescape")
	g.Doc("attnScoresAsm sets s[j*16+r] = sum_c k[j*kStride+c]*qT[c*16+r] (c ascending,",
		"products rounded) for j < sk, r < 16 (sk >= 0, d >= 1).")
	sPtr, kRow := g.Load("s"), g.Load("k")
	s1 := g.Load("kStride")
	g.SHLQ(operand.U8(2), s1)
	s3, s5, s7 := g.GP64(), g.GP64(), g.GP64()
	g.LEAQ(operand.Mem{Base: s1, Index: s1, Scale: 2}, s3)
	g.LEAQ(operand.Mem{Base: s1, Index: s1, Scale: 4}, s5)
	g.LEAQ(operand.Mem{Base: s1, Index: s1, Scale: 8}, s7) // 9*s1
	g.SUBQ(s1, s7)
	g.SUBQ(s1, s7) // 7*s1
	left := g.Load("sk")

	// keyAddr addresses k[j0+u][c] from the pointers p0 (key j0) and p8
	// (key j0+8) at column c.
	strides := rowStrides{s1, s3, s5, s7}
	keyAddr := func(p0, p8 reg.GPVirtual, u int) operand.Mem {
		if u >= 8 {
			return strides.addr(p8, u-8)
		}
		return strides.addr(p0, u)
	}
	group := func(n int) {
		acc := make([]reg.VecVirtual, n)
		for u := range acc {
			acc[u] = g.zeroZMM()
		}
		p0 := g.GP64()
		g.MOVQ(kRow, p0)
		var p8 reg.GPVirtual
		if n > 8 {
			p8 = g.GP64()
			g.LEAQ(operand.Mem{Base: p0, Index: s1, Scale: 8}, p8)
		}
		qp, c := g.Load("qT"), g.Load("d")
		inner := g.NewLabel("sc_c")
		g.Label(inner)
		qv := g.ZMM()
		g.VMOVUPS(operand.Mem{Base: qp}, qv)
		for u := range acc {
			t := g.ZMM()
			g.VMULPS_BCST(keyAddr(p0, p8, u), qv, t)
			g.VADDPS(t, acc[u], acc[u])
		}
		g.ADDQ(operand.U8(4), p0)
		if n > 8 {
			g.ADDQ(operand.U8(4), p8)
		}
		g.ADDQ(operand.U8(64), qp)
		g.DECQ(c)
		g.JNZ(operand.LabelRef(inner))
		for u := range acc {
			g.VMOVUPS(acc[u], operand.Mem{Base: sPtr, Disp: 64 * u})
		}
		g.ADDQ(operand.U32(64*n), sPtr)
		for step := n; step > 0; step -= min(step, 8) {
			g.LEAQ(operand.Mem{Base: kRow, Index: s1, Scale: uint8(min(step, 8))}, kRow)
		}
		g.SUBQ(operand.U8(n), left)
	}
	stepGroups(g, left, group, "sc")
	g.VZEROUPPER()
	g.RET()
}

// stepGroups emits: while left >= 16 { body(16) }, then body(w) once for
// each w of tailGroups with left >= w. body must subtract w from left.
func stepGroups(g *gen, left reg.GPVirtual, body func(w int), prefix string) {
	stepGroupsOf(g, left, 16, body, prefix)
}

// stepGroupsOf emits: while left >= main { body(main) }, then body(w) once
// for each w of tailGroups below main with left >= w.
func stepGroupsOf(g *gen, left reg.GPVirtual, main int, body func(w int), prefix string) {
	loop, tail := g.NewLabel(prefix+"_main"), g.NewLabel(prefix+"_tail")
	g.Label(loop)
	g.CMPQ(left, operand.U8(main))
	g.JL(operand.LabelRef(tail))
	body(main)
	g.JMP(operand.LabelRef(loop))
	g.Label(tail)
	for _, w := range tailGroups {
		if w >= main {
			continue
		}
		skip := g.NewLabel(prefix + "_skip")
		g.CMPQ(left, operand.U8(w))
		g.JL(operand.LabelRef(skip))
		body(w)
		g.Label(skip)
	}
}

// rowStrides holds 1, 3, 5 and 7 times a row stride in bytes (the last
// two may be nil when unused), so that rows 0..7 from a base pointer are
// addressed with one scaled index each.
type rowStrides [4]reg.GPVirtual

// addr addresses row u (0 <= u < 8) from base.
func (s rowStrides) addr(base reg.GPVirtual, u int) operand.Mem {
	switch u {
	case 0:
		return operand.Mem{Base: base}
	case 1:
		return operand.Mem{Base: base, Index: s[0], Scale: 1}
	case 2:
		return operand.Mem{Base: base, Index: s[0], Scale: 2}
	case 3:
		return operand.Mem{Base: base, Index: s[1], Scale: 1}
	case 4:
		return operand.Mem{Base: base, Index: s[0], Scale: 4}
	case 5:
		return operand.Mem{Base: base, Index: s[2], Scale: 1}
	case 6:
		return operand.Mem{Base: base, Index: s[1], Scale: 2}
	default:
		return operand.Mem{Base: base, Index: s[3], Scale: 1}
	}
}

// Mask modes of attnSoftmaxAsm (runtime/nn/kernels_amd64.go).
const (
	maskNone       = 0 // no mask
	maskBroadcast  = 1 // mask[j] for every row
	maskTransposed = 2 // mask[j*16+r]
)

// genAttnSoftmax emits attnSoftmaxAsm: per lane (query row) r, in the
// order of nn's softmaxGo,
//
//	x_j = float32(s_j*scale) + mask_j;  top = x_0, then top = x_j if x_j > top
//	e_j = Exp(x_j - top);  sum = 0 + e_0 + e_1 + ...
//
// writing e over s and sum to sums. One specialised copy per mask mode.
func genAttnSoftmax(g *gen) {
	g.Function("attnSoftmaxAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(s *float32, sk int, scale float32, mask *float32, maskMode int, sums *float32)")
	g.Pragma("noescape")
	g.Doc("attnSoftmaxAsm turns the scores s[j*16+r] (j < sk) of 16 query rows into",
		"softmax numerators and writes their sums to sums[0..15]. maskMode: 0 none,",
		"1 mask[j] added to every row, 2 mask[j*16+r].")
	softmaxModes(g, "sm", softmaxVariant, func(sums reg.GPVirtual) {
		z := g.zeroZMM()
		g.VMOVUPS(z, operand.Mem{Base: sums})
	})
}

// softmaxModes emits a softmax kernel's body: with sk = 0 zeroSums (given
// the sums pointer), else the copy of variant specialised to the mask
// mode; variant returns.
func softmaxModes(g *gen, prefix string, variant func(g *gen, mode int), zeroSums func(sums reg.GPVirtual)) {
	n := g.Load("sk")
	empty := g.NewLabel(prefix + "_empty")
	g.TESTQ(n, n)
	g.JZ(operand.LabelRef(empty))
	mode := g.Load("maskMode")
	m1, m2 := g.NewLabel(prefix+"_mode1"), g.NewLabel(prefix+"_mode2")
	g.CMPQ(mode, operand.U8(maskBroadcast))
	g.JEQ(operand.LabelRef(m1))
	g.CMPQ(mode, operand.U8(maskTransposed))
	g.JEQ(operand.LabelRef(m2))
	variant(g, maskNone)
	g.Label(m1)
	variant(g, maskBroadcast)
	g.Label(m2)
	variant(g, maskTransposed)

	g.Label(empty)
	zeroSums(g.Load("sums"))
	g.VZEROUPPER()
	g.RET()
}

// genAttnSoftmaxS32 emits attnSoftmaxS32Asm: attnSoftmaxAsm on INT8
// attention's s32 scores S^T (runtime/nn attnInt8Head), dequantised as
// they are read, instead of after a qgemm epilogue pass that writes them
// as float32 for the softmax to read back. Per key j and lane (query) r,
// in the order of qgemm's epilogueGo,
//
//	acc = c[j*ldc+r] - rowZP[j]*colSum[r]   (int32, wrapping)
//	s   = float32(float32(acc) * colScale[r]) * rowScale[j]
//
// then attnSoftmaxAsm's arithmetic on s.
func genAttnSoftmaxS32(g *gen) {
	g.Function("attnSoftmaxS32Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(s *float32, sk int, scale float32, mask *float32, maskMode int, sums *float32, c *int32, ldc int, colSum *int32, colScale *float32, rowZP *int32, rowScale *float32)")
	g.Pragma("noescape")
	g.Doc("attnSoftmaxS32Asm is attnSoftmaxAsm on the scores s[j*16+r] = float32(float32(c[j*ldc+r] -",
		"rowZP[j]*colSum[r]) * colScale[r]) * rowScale[j], which it writes to s scaled and masked, then",
		"as numerators (j < sk, r < 16).")
	variant := func(g *gen, mode int) {
		c, ldc := g.Load("c"), g.Load("ldc")
		g.SHLQ(operand.U8(2), ldc) // in bytes
		zp, rs := g.Load("rowZP"), g.Load("rowScale")
		colSum, colScale := g.ZMM(), g.ZMM()
		g.VMOVDQU32(operand.Mem{Base: g.Load("colSum")}, colSum)
		g.VMOVUPS(operand.Mem{Base: g.Load("colScale")}, colScale)
		softmaxBody(g, mode, func(reg.GPVirtual) reg.VecVirtual {
			t, acc, x := g.ZMM(), g.ZMM(), g.ZMM()
			g.VPBROADCASTD(operand.Mem{Base: zp}, t)
			g.VPMULLD(colSum, t, t)
			g.VMOVDQU32(operand.Mem{Base: c}, acc)
			g.VPSUBD(t, acc, acc)
			g.VCVTDQ2PS(acc, x) // round to nearest even, as Go's float32(int32)
			g.VMULPS(colScale, x, x)
			g.VMULPS_BCST(operand.Mem{Base: rs}, x, x)
			return x
		}, func() {
			g.ADDQ(ldc, c)
			g.ADDQ(operand.U8(4), zp)
			g.ADDQ(operand.U8(4), rs)
		})
	}
	softmaxModes(g, "sms", variant, func(sums reg.GPVirtual) {
		z := g.zeroZMM()
		g.VMOVUPS(z, operand.Mem{Base: sums})
	})
}

// softmaxExpGroup is how many key rows go through Exp interleaved: four
// chains of ~25 dependent operations keep the FP pipes busy, and fit the
// 32 zmm registers with the live top, sum and zero.
const softmaxExpGroup = 4

func softmaxVariant(g *gen, mode int) {
	softmaxBody(g, mode, func(p reg.GPVirtual) reg.VecVirtual {
		x := g.ZMM()
		g.VMOVUPS(operand.Mem{Base: p}, x)
		return x
	}, func() {})
}

// softmaxBody emits a softmax variant whose scores of key j (16 lanes)
// come from load, given the pointer to key j's row of s (where pass 1
// stores the scaled and masked scores); next moves load's own pointers on
// to the next key.
func softmaxBody(g *gen, mode int, load func(p reg.GPVirtual) reg.VecVirtual, next func()) {
	n := g.Load("sk")
	zScale := g.broadcastParam("scale")
	sPtr := g.Load("s")
	var mp reg.GPVirtual
	if mode != maskNone {
		mp = g.Load("mask")
	}
	maskStep := 4
	if mode == maskTransposed {
		maskStep = 64
	}
	scaled := func(p, mp reg.GPVirtual) reg.VecVirtual {
		x := load(p)
		g.VMULPS(zScale, x, x)
		switch mode {
		case maskBroadcast:
			g.VADDPS_BCST(operand.Mem{Base: mp}, x, x)
		case maskTransposed:
			g.VADDPS(operand.Mem{Base: mp}, x, x)
		}
		g.VMOVUPS(x, operand.Mem{Base: p})
		return x
	}

	// Pass 1: scale, mask, running maximum.
	p, c := g.GP64(), g.GP64()
	g.MOVQ(sPtr, p)
	g.MOVQ(n, c)
	top := scaled(p, mp)
	pass2 := g.NewLabel("sm_pass2")
	g.DECQ(c)
	g.JZ(operand.LabelRef(pass2))
	loop := g.NewLabel("sm_max")
	g.Label(loop)
	g.ADDQ(operand.U8(64), p)
	next()
	if mp != nil {
		g.ADDQ(operand.U8(maskStep), mp)
	}
	x := scaled(p, mp)
	g.VMAXPS(top, x, top) // x > top ? x : top
	g.DECQ(c)
	g.JNZ(operand.LabelRef(loop))

	// Pass 2: numerators and their sum, in key order.
	g.Label(pass2)
	sum := g.zeroZMM()
	lo := g.ZMM() // expavo.ZMM's floor, broadcast once for the whole pass
	g.VBROADCASTSS(g.consts.F32(expf.Min), lo)
	g.MOVQ(sPtr, p)
	g.MOVQ(n, c)
	expRows := func(m int) {
		ts := make([]reg.VecVirtual, m)
		for u := range ts {
			ts[u] = g.ZMM()
			g.VMOVUPS(operand.Mem{Base: p, Disp: 64 * u}, ts[u])
			g.VSUBPS(top, ts[u], ts[u]) // x - top
		}
		es := expavo.ZMM(g.Context, g.consts, ts, lo)
		for u, e := range es {
			g.VMOVUPS(e, operand.Mem{Base: p, Disp: 64 * u})
			g.VADDPS(e, sum, sum)
		}
		g.ADDQ(operand.U32(64*m), p)
		g.SUBQ(operand.U8(m), c)
	}
	group, single, done := g.NewLabel("sm_exp4"), g.NewLabel("sm_exp1"), g.NewLabel("sm_done")
	g.Label(group)
	g.CMPQ(c, operand.U8(softmaxExpGroup))
	g.JL(operand.LabelRef(single))
	expRows(softmaxExpGroup)
	g.JMP(operand.LabelRef(group))
	g.Label(single)
	g.TESTQ(c, c)
	g.JZ(operand.LabelRef(done))
	expRows(1)
	g.JMP(operand.LabelRef(single))
	g.Label(done)
	g.VMOVUPS(sum, operand.Mem{Base: g.Load("sums")})
	g.VZEROUPPER()
	g.RET()
}

// pvRows and pvVecs are the register block of attnPVAsm: 6 query rows x
// 4 vectors of 16 value columns = 24 accumulators, beside the 4 value
// vectors, a broadcast probability, a product and zero (31 of 32 zmm).
// Each key costs 4 vector loads and 6 broadcasts for 24 products (0.42
// loads per product).
const (
	pvRows = 6
	pvVecs = 4
)

// genAttnPV emits attnPVAsm: out[r][c] = (sum_j p[j][r]*v[j][c]) / sums[r],
// j ascending from 0, products rounded, terms with p[j][r] == 0 skipped,
// for r < rows and c < d. Lanes are value columns: blocks of up to 6 rows
// x 64 columns, each accumulator the sum of one row over 16 columns, so
// the output needs no transpose. Per key, one compare of the 16
// probabilities picks the path: all non-zero (the rule outside masked
// keys) adds every product; otherwise each row's add is masked by its own
// p != 0.
func genAttnPV(g *gen) {
	g.Function("attnPVAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(out *float32, outStride int, rows int, p *float32, v *float32, vStride int, sk int, d int, sums *float32)")
	g.Pragma("noescape")
	g.Doc("attnPVAsm sets out[r*outStride+c] = (sum_j p[j*16+r]*v[j*vStride+c]) / sums[r]",
		"(j ascending, products rounded, terms with p == 0 skipped) for r < rows,",
		"c < d (1 <= rows <= 16, d >= 1, sk >= 0).")
	zero := g.zeroZMM()
	outCol, vCol, colsLeft := g.Load("out"), g.Load("v"), g.Load("d")

	// block emits rows x nv vectors of columns starting at row r0 (a
	// register, in rows) of the current column chunk; last masks the
	// last vector's columns.
	block := func(nr, nv int, r0 reg.GPVirtual, last reg.OpmaskVirtual) {
		acc := make([][]reg.VecVirtual, nr)
		for r := range acc {
			acc[r] = make([]reg.VecVirtual, nv)
			for c := range acc[r] {
				acc[r][c] = g.zeroZMM()
			}
		}
		pp, vp, j := g.GP64(), g.GP64(), g.Load("sk")
		g.MOVQ(g.ParamAddr("p"), pp) // p[j][0]; row r0+r at Index r0, Disp 4r
		g.MOVQ(vCol, vp)
		vStrideB := g.Load("vStride")
		g.SHLQ(operand.U8(2), vStrideB)
		divide := g.NewLabel("pv_divide")
		g.TESTQ(j, j)
		g.JZ(operand.LabelRef(divide))
		inner, slow, next := g.NewLabel("pv_j"), g.NewLabel("pv_zero"), g.NewLabel("pv_next")
		g.Label(inner)
		vv := make([]reg.VecVirtual, nv)
		for c := range vv {
			vv[c] = g.ZMM()
			if c == nv-1 && last != nil {
				g.VMOVUPS_Z(operand.Mem{Base: vp, Disp: 64 * c}, last, vv[c])
			} else {
				g.VMOVUPS(operand.Mem{Base: vp, Disp: 64 * c}, vv[c])
			}
		}
		all := g.K()
		g.VCMPPS(operand.U8(0x04), operand.Mem{Base: pp}, zero, all) // p != 0 (NEQ_UQ: NaN counts)
		g.KORTESTW(all, all)                                         // CF: all 16 lanes set
		g.JCC(operand.LabelRef(slow))
		for r := range nr {
			b := g.ZMM()
			g.VBROADCASTSS(operand.Mem{Base: pp, Index: r0, Scale: 4, Disp: 4 * r}, b)
			for c := range nv {
				t := g.ZMM()
				g.VMULPS(vv[c], b, t)
				g.VADDPS(t, acc[r][c], acc[r][c])
			}
		}
		g.JMP(operand.LabelRef(next))
		g.Label(slow)
		for r := range nr {
			b := g.ZMM()
			g.VBROADCASTSS(operand.Mem{Base: pp, Index: r0, Scale: 4, Disp: 4 * r}, b)
			nz := g.K()
			g.VCMPPS(operand.U8(0x04), zero, b, nz)
			for c := range nv {
				t := g.ZMM()
				g.VMULPS(vv[c], b, t)
				g.VADDPS(t, acc[r][c], nz, acc[r][c])
			}
		}
		g.Label(next)
		g.ADDQ(operand.U8(64), pp)
		g.ADDQ(vStrideB, vp)
		g.DECQ(j)
		g.JNZ(operand.LabelRef(inner))
		g.Label(divide)
		sp, op, oStrideB := g.Load("sums"), g.GP64(), g.Load("outStride")
		g.SHLQ(operand.U8(2), oStrideB)
		g.MOVQ(r0, op)
		g.IMULQ(oStrideB, op)
		g.ADDQ(outCol, op)
		g.LEAQ(operand.Mem{Base: sp, Index: r0, Scale: 4}, sp)
		for r := range nr {
			if r > 0 {
				g.ADDQ(oStrideB, op)
			}
			for c := range nv {
				g.VDIVPS_BCST(operand.Mem{Base: sp, Disp: 4 * r}, acc[r][c], acc[r][c]) // acc / sum
				if c == nv-1 && last != nil {
					g.VMOVUPS(acc[r][c], last, operand.Mem{Base: op, Disp: 64 * c})
				} else {
					g.VMOVUPS(acc[r][c], operand.Mem{Base: op, Disp: 64 * c})
				}
			}
		}
	}
	// rowBlocks emits the blocks of nv vectors for all rows: groups of
	// pvRows, then 4, 2, 1.
	rowBlocks := func(nv int, last reg.OpmaskVirtual) {
		r0, left := g.GP64(), g.Load("rows")
		g.XORQ(r0, r0)
		stepGroupsOf(g, left, pvRows, func(w int) {
			block(w, nv, r0, last)
			g.ADDQ(operand.U8(w), r0)
			g.SUBQ(operand.U8(w), left)
		}, "pv_rows")
	}
	full, tail, done := g.NewLabel("pv_cols"), g.NewLabel("pv_coltail"), g.NewLabel("pv_done")
	g.Label(full)
	g.CMPQ(colsLeft, operand.U8(16*pvVecs))
	g.JL(operand.LabelRef(tail))
	rowBlocks(pvVecs, nil)
	g.ADDQ(operand.U32(64*pvVecs), outCol)
	g.ADDQ(operand.U32(64*pvVecs), vCol)
	g.SUBQ(operand.U8(16*pvVecs), colsLeft)
	g.JMP(operand.LabelRef(full))
	g.Label(tail)
	g.TESTQ(colsLeft, colsLeft)
	g.JZ(operand.LabelRef(done))
	// 1 .. 63 columns left: nv = ceil(left/16) vectors, the last masked to
	// left - 16*(nv-1) columns.
	for nv := 1; nv <= pvVecs; nv++ {
		skip := g.NewLabel("pv_nv")
		if nv < pvVecs {
			g.CMPQ(colsLeft, operand.U8(16*nv))
			g.JG(operand.LabelRef(skip))
		}
		w := g.GP64()
		g.MOVQ(colsLeft, w)
		g.SUBQ(operand.U8(16*(nv-1)), w)
		rowBlocks(nv, g.maskOf(w))
		g.JMP(operand.LabelRef(done))
		g.Label(skip)
	}
	g.Label(done)
	g.VZEROUPPER()
	g.RET()
}

// pairKeys is how many keys attnScores2Asm takes at once: 2x12
// accumulators, the two query vectors, a broadcast and a product fill 28
// of the 32 zmm registers.
const pairKeys = 12

// genAttnScores2 emits attnScores2Asm, attnScoresAsm for two blocks of 16
// query rows at once: each key element k[j][c] is broadcast once into a
// register and multiplies both blocks' qT[c], so a product costs 0.6
// loads instead of 1.06 (the loads, not the multiplies and adds, bound the
// one-block kernel). Every lane's sum is the one-block kernel's: c
// ascending from 0, products rounded.
func genAttnScores2(g *gen) {
	g.Function("attnScores2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(sA *float32, sB *float32, qA *float32, qB *float32, k *float32, kStride int, sk int, d int)")
	g.Pragma("noescape")
	g.Doc("attnScores2Asm is attnScoresAsm(sA, qA, ...) and attnScoresAsm(sB, qB, ...) in one pass",
		"over the keys (sk >= 0, d >= 1).")
	sA, sB, kRow := g.Load("sA"), g.Load("sB"), g.Load("k")
	s1 := g.Load("kStride")
	g.SHLQ(operand.U8(2), s1)
	s3 := g.GP64()
	g.LEAQ(operand.Mem{Base: s1, Index: s1, Scale: 2}, s3)
	left := g.Load("sk")

	group := func(n int) {
		// ptrs[i] addresses key 4i at column c; keys 4i+1..4i+3 are at
		// +s1, +2*s1, +s3.
		ptrs := make([]reg.GPVirtual, (n+3)/4)
		for i := range ptrs {
			ptrs[i] = g.GP64()
			if i == 0 {
				g.MOVQ(kRow, ptrs[i])
			} else {
				g.LEAQ(operand.Mem{Base: ptrs[i-1], Index: s1, Scale: 4}, ptrs[i])
			}
		}
		keyAddr := func(u int) operand.Mem {
			base := ptrs[u/4]
			switch u % 4 {
			case 0:
				return operand.Mem{Base: base}
			case 1:
				return operand.Mem{Base: base, Index: s1, Scale: 1}
			case 2:
				return operand.Mem{Base: base, Index: s1, Scale: 2}
			default:
				return operand.Mem{Base: base, Index: s3, Scale: 1}
			}
		}
		accA, accB := make([]reg.VecVirtual, n), make([]reg.VecVirtual, n)
		for u := range n {
			accA[u], accB[u] = g.zeroZMM(), g.zeroZMM()
		}
		qa, qb, c := g.Load("qA"), g.Load("qB"), g.Load("d")
		inner := g.NewLabel("sc2_c")
		g.Label(inner)
		va, vb := g.ZMM(), g.ZMM()
		g.VMOVUPS(operand.Mem{Base: qa}, va)
		g.VMOVUPS(operand.Mem{Base: qb}, vb)
		for u := range n {
			kb, ta, tb := g.ZMM(), g.ZMM(), g.ZMM()
			g.VBROADCASTSS(keyAddr(u), kb)
			g.VMULPS(kb, va, ta)
			g.VADDPS(ta, accA[u], accA[u])
			g.VMULPS(kb, vb, tb)
			g.VADDPS(tb, accB[u], accB[u])
		}
		for _, p := range ptrs {
			g.ADDQ(operand.U8(4), p)
		}
		g.ADDQ(operand.U8(64), qa)
		g.ADDQ(operand.U8(64), qb)
		g.DECQ(c)
		g.JNZ(operand.LabelRef(inner))
		for u := range n {
			g.VMOVUPS(accA[u], operand.Mem{Base: sA, Disp: 64 * u})
			g.VMOVUPS(accB[u], operand.Mem{Base: sB, Disp: 64 * u})
		}
		g.ADDQ(operand.U32(64*n), sA)
		g.ADDQ(operand.U32(64*n), sB)
		for step := n; step > 0; step -= min(step, 8) {
			g.LEAQ(operand.Mem{Base: kRow, Index: s1, Scale: uint8(min(step, 8))}, kRow)
		}
		g.SUBQ(operand.U8(n), left)
	}
	stepGroupsOf(g, left, pairKeys, group, "sc2")
	g.VZEROUPPER()
	g.RET()
}

package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/sqc-dev/sqc/asmgen/expavo"
)

// The AVX2 forms of attention's loops keep the AVX-512 layout
// (attention.go): a block of 16 query rows is two ymm of 8 lanes, and
// every sum runs down a lane in the Go kernels' order. What changes is
// the register budget (16 ymm instead of 32 zmm) and the missing opmasks
// and embedded broadcasts: constants are 32-byte vectors in nnConsts
// (constTable.f32x8), masked adds are branches per row, and column tails
// that would need masked loads are left to the Go kernel by the wrapper
// (every output column is its own sum, so that changes no bit).

// scoreKeysAVX2 is how many keys attnScoresAVX2Asm takes at once: 6 keys
// x 2 ymm of query rows = 12 accumulators, beside the two query vectors,
// a broadcast key element and a product (16 ymm). Per column c that is 8
// loads for 12 products; more keys would not fit, and two blocks sharing
// the broadcasts (the AVX-512 attnScores2) would fit only 2 keys for 0.75
// loads per product, so attnScores2 runs this kernel once per block.
const scoreKeysAVX2 = 6

// pvRowsAVX2 and pvVecsAVX2 are attnPVAVX2Asm's register block: 4 query
// rows x 2 ymm of 8 value columns = 8 accumulators, beside the two value
// vectors, a broadcast probability, a product, zero and the p != 0 check
// (14 ymm); per key 7 loads for 8 products.
const (
	pvRowsAVX2 = 4
	pvVecsAVX2 = 2
)

// genAttentionAVX2 emits the AVX2 forms of attention's inner loops
// (runtime/nn kernels attnScores, attnSoftmax, attnPV; attnScores2 is
// attnScores twice) for CPUs without AVX-512. The transposes stay in Go:
// at 16 x 64 floats per block they are under 1% of a block's work.
func genAttentionAVX2(g *gen) {
	genAttnScoresAVX2(g)
	genAttnSoftmaxAVX2(g)
	genAttnSoftmaxS32AVX2(g)
	genAttnPVAVX2(g)
}

// genAttnScoresAVX2 emits attnScoresAVX2Asm, attnScoresAsm on ymm: for
// each key j, lane r of s[j] is sum_c k[j][c]*qT[c][r], c ascending from
// 0, each product rounded (no FMA).
func genAttnScoresAVX2(g *gen) {
	g.Function("attnScoresAVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(s *float32, qT *float32, k *float32, kStride int, sk int, d int)")
	g.Pragma("noescape")
	g.Doc("attnScoresAVX2Asm is attnScoresAsm with AVX2: s[j*16+r] = sum_c k[j*kStride+c]*qT[c*16+r]",
		"(c ascending, products rounded) for j < sk, r < 16 (sk >= 0, d >= 1).")
	sPtr, kRow := g.Load("s"), g.Load("k")
	s1 := g.Load("kStride")
	g.SHLQ(operand.U8(2), s1)
	s3, s5 := g.GP64(), g.GP64()
	g.LEAQ(operand.Mem{Base: s1, Index: s1, Scale: 2}, s3)
	g.LEAQ(operand.Mem{Base: s1, Index: s1, Scale: 4}, s5)
	left := g.Load("sk")

	strides := rowStrides{s1, s3, s5, nil} // keys j0 .. j0+5 from key j0
	group := func(n int) {
		acc := make([][2]reg.VecVirtual, n)
		for u := range acc {
			for h := range acc[u] {
				acc[u][h] = g.YMM()
				g.ZeroVec(acc[u][h])
			}
		}
		p := g.GP64()
		g.MOVQ(kRow, p)
		qp, c := g.Load("qT"), g.Load("d")
		inner := g.NewLabel("sc2x_c")
		g.Label(inner)
		q0, q1 := g.YMM(), g.YMM()
		g.VMOVUPS(operand.Mem{Base: qp}, q0)
		g.VMOVUPS(operand.Mem{Base: qp, Disp: 32}, q1)
		for u := range acc {
			b, t := g.YMM(), g.YMM()
			g.VBROADCASTSS(strides.addr(p, u), b)
			g.VMULPS(q0, b, t)
			g.VADDPS(t, acc[u][0], acc[u][0])
			g.VMULPS(q1, b, b)
			g.VADDPS(b, acc[u][1], acc[u][1])
		}
		g.ADDQ(operand.U8(4), p)
		g.ADDQ(operand.U8(64), qp)
		g.DECQ(c)
		g.JNZ(operand.LabelRef(inner))
		for u := range acc {
			g.VMOVUPS(acc[u][0], operand.Mem{Base: sPtr, Disp: 64 * u})
			g.VMOVUPS(acc[u][1], operand.Mem{Base: sPtr, Disp: 64*u + 32})
		}
		g.ADDQ(operand.U32(64*n), sPtr)
		for step := n; step > 0; step -= min(step, 4) {
			g.LEAQ(operand.Mem{Base: kRow, Index: s1, Scale: uint8(min(step, 4))}, kRow)
		}
		g.SUBQ(operand.U8(n), left)
	}
	stepGroupsOf(g, left, scoreKeysAVX2, group, "sc2x")
	g.VZEROUPPER()
	g.RET()
}

// genAttnSoftmaxAVX2 emits attnSoftmaxAVX2Asm, attnSoftmaxAsm on ymm (the
// same mask modes), lanes 0-7 and 8-15 of each key row in two registers.
func genAttnSoftmaxAVX2(g *gen) {
	g.Function("attnSoftmaxAVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(s *float32, sk int, scale float32, mask *float32, maskMode int, sums *float32)")
	g.Pragma("noescape")
	g.Doc("attnSoftmaxAVX2Asm is attnSoftmaxAsm with AVX2: it turns the scores s[j*16+r] (j < sk)",
		"into softmax numerators and writes their sums to sums[0..15]. maskMode: 0 none,",
		"1 mask[j] added to every row, 2 mask[j*16+r].")
	softmaxModes(g, "sm2x", softmaxVariantAVX2, zeroSumsAVX2(g))
}

// zeroSumsAVX2 returns softmaxModes' zeroSums for the AVX2 softmaxes.
func zeroSumsAVX2(g *gen) func(sums reg.GPVirtual) {
	return func(sums reg.GPVirtual) {
		z := g.YMM()
		g.ZeroVec(z)
		g.VMOVUPS(z, operand.Mem{Base: sums})
		g.VMOVUPS(z, operand.Mem{Base: sums, Disp: 32})
	}
}

// genAttnSoftmaxS32AVX2 emits attnSoftmaxS32AVX2Asm, attnSoftmaxS32Asm on
// ymm: the s32 scores dequantised as pass 1 reads them, in the order of
// qgemm's epilogueGo (see genAttnSoftmaxS32), then attnSoftmaxAVX2Asm's
// arithmetic. The per-query column sums and scales are memory operands:
// the 16 ymm registers hold the pass's running maxima and temporaries.
func genAttnSoftmaxS32AVX2(g *gen) {
	g.Function("attnSoftmaxS32AVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(s *float32, sk int, scale float32, mask *float32, maskMode int, sums *float32, c *int32, ldc int, colSum *int32, colScale *float32, rowZP *int32, rowScale *float32)")
	g.Pragma("noescape")
	g.Doc("attnSoftmaxS32AVX2Asm is attnSoftmaxS32Asm with AVX2.")
	variant := func(g *gen, mode int) {
		c, ldc := g.Load("c"), g.Load("ldc")
		g.SHLQ(operand.U8(2), ldc) // in bytes
		zp, rs := g.Load("rowZP"), g.Load("rowScale")
		colSum, colScale := g.Load("colSum"), g.Load("colScale")
		softmaxBodyAVX2(g, mode, func(_ reg.GPVirtual, h int) reg.VecVirtual {
			t, acc, x := g.YMM(), g.YMM(), g.YMM()
			g.VPBROADCASTD(operand.Mem{Base: zp}, t)
			g.VPMULLD(operand.Mem{Base: colSum, Disp: 32 * h}, t, t)
			g.VMOVDQU(operand.Mem{Base: c, Disp: 32 * h}, acc)
			g.VPSUBD(t, acc, acc)
			g.VCVTDQ2PS(acc, x) // round to nearest even, as Go's float32(int32)
			g.VMULPS(operand.Mem{Base: colScale, Disp: 32 * h}, x, x)
			r := g.YMM()
			g.VBROADCASTSS(operand.Mem{Base: rs}, r)
			g.VMULPS(r, x, x)
			return x
		}, func() {
			g.ADDQ(ldc, c)
			g.ADDQ(operand.U8(4), zp)
			g.ADDQ(operand.U8(4), rs)
		})
	}
	softmaxModes(g, "sms2x", variant, zeroSumsAVX2(g))
}

func softmaxVariantAVX2(g *gen, mode int) {
	softmaxBodyAVX2(g, mode, func(p reg.GPVirtual, h int) reg.VecVirtual {
		x := g.YMM()
		g.VMOVUPS(operand.Mem{Base: p, Disp: 32 * h}, x)
		return x
	}, func() {})
}

// softmaxBodyAVX2 emits an AVX2 softmax variant whose scores of key j,
// half h (lanes 8h..8h+7), come from load, given the pointer to key j's
// row of s (where pass 1 stores the scaled and masked scores); next moves
// load's own pointers on to the next key.
func softmaxBodyAVX2(g *gen, mode int, load func(p reg.GPVirtual, h int) reg.VecVirtual, next func()) {
	n := g.Load("sk")
	scale := g.ymmParam("scale")
	sPtr := g.Load("s")
	var mp reg.GPVirtual
	if mode != maskNone {
		mp = g.Load("mask")
	}
	maskStep := 4
	if mode == maskTransposed {
		maskStep = 64
	}
	// scaled loads half h of the key row at p, scales and masks it as
	// softmaxGo does (float32(s*scale) + mask), stores it back and returns it.
	scaled := func(p, mp reg.GPVirtual, h int) reg.VecVirtual {
		x := load(p, h)
		g.VMULPS(scale, x, x)
		switch mode {
		case maskBroadcast:
			m := g.YMM()
			g.VBROADCASTSS(operand.Mem{Base: mp}, m)
			g.VADDPS(m, x, x)
		case maskTransposed:
			g.VADDPS(operand.Mem{Base: mp, Disp: 32 * h}, x, x)
		}
		g.VMOVUPS(x, operand.Mem{Base: p, Disp: 32 * h})
		return x
	}

	// Pass 1: scale, mask, running maximum.
	p, c := g.GP64(), g.GP64()
	g.MOVQ(sPtr, p)
	g.MOVQ(n, c)
	top := [2]reg.VecVirtual{scaled(p, mp, 0), scaled(p, mp, 1)}
	pass2 := g.NewLabel("sm2x_pass2")
	g.DECQ(c)
	g.JZ(operand.LabelRef(pass2))
	loop := g.NewLabel("sm2x_max")
	g.Label(loop)
	g.ADDQ(operand.U8(64), p)
	next()
	if mp != nil {
		g.ADDQ(operand.U8(maskStep), mp)
	}
	for h := range top {
		x := scaled(p, mp, h)
		g.VMAXPS(top[h], x, top[h]) // x > top ? x : top
	}
	g.DECQ(c)
	g.JNZ(operand.LabelRef(loop))

	// Pass 2: numerators and their sums, in key order. One key row (two
	// registers) per iteration: out-of-order execution overlaps the Exp
	// chains of successive rows, and more in flight would not fit 16 ymm.
	g.Label(pass2)
	var sum [2]reg.VecVirtual
	for h := range sum {
		sum[h] = g.YMM()
		g.ZeroVec(sum[h])
	}
	g.MOVQ(sPtr, p)
	g.MOVQ(n, c)
	expLoop := g.NewLabel("sm2x_exp")
	g.Label(expLoop)
	for h := range sum {
		x := g.YMM()
		g.VMOVUPS(operand.Mem{Base: p, Disp: 32 * h}, x)
		g.VSUBPS(top[h], x, x) // x - top
		e := expavo.YMM(g.Context, g.consts, x)
		g.VMOVUPS(e, operand.Mem{Base: p, Disp: 32 * h})
		g.VADDPS(e, sum[h], sum[h])
	}
	g.ADDQ(operand.U8(64), p)
	g.DECQ(c)
	g.JNZ(operand.LabelRef(expLoop))
	sums := g.Load("sums")
	g.VMOVUPS(sum[0], operand.Mem{Base: sums})
	g.VMOVUPS(sum[1], operand.Mem{Base: sums, Disp: 32})
	g.VZEROUPPER()
	g.RET()
}

// genAttnPVAVX2 emits attnPVAVX2Asm, attnPVAsm on ymm for d a multiple of
// 8: out[r][c] = (sum_j p[j][r]*v[j][c]) / sums[r], j ascending from 0,
// products rounded, terms with p[j][r] == 0 skipped. Lanes are value
// columns, blocks of up to 4 rows x 16 columns. Per key, one compare of
// the block's probabilities picks the path: all non-zero (the rule
// outside masked keys) adds every product; otherwise each row branches on
// its own bit of the compare.
func genAttnPVAVX2(g *gen) {
	g.Function("attnPVAVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(out *float32, outStride int, rows int, p *float32, v *float32, vStride int, sk int, d int, sums *float32)")
	g.Pragma("noescape")
	g.Doc("attnPVAVX2Asm is attnPVAsm with AVX2 for d a multiple of 8: out[r*outStride+c] =",
		"(sum_j p[j*16+r]*v[j*vStride+c]) / sums[r] (j ascending, products rounded, terms",
		"with p == 0 skipped) for r < rows, c < d (1 <= rows <= 16, d >= 8, sk >= 0).")
	zero := g.YMM()
	g.ZeroVec(zero)
	outCol, vCol, colsLeft := g.Load("out"), g.Load("v"), g.Load("d")

	// block emits nr rows x nv vectors of columns starting at row r0 (a
	// register, in rows) of the current column chunk.
	block := func(nr, nv int, r0 reg.GPVirtual) {
		acc := make([][]reg.VecVirtual, nr)
		for r := range acc {
			acc[r] = make([]reg.VecVirtual, nv)
			for c := range acc[r] {
				acc[r][c] = g.YMM()
				g.ZeroVec(acc[r][c])
			}
		}
		pp, vp, j := g.GP64(), g.GP64(), g.Load("sk")
		g.MOVQ(g.ParamAddr("p"), pp)
		g.LEAQ(operand.Mem{Base: pp, Index: r0, Scale: 4}, pp) // p[j][r0]
		g.MOVQ(vCol, vp)
		vStrideB := g.Load("vStride")
		g.SHLQ(operand.U8(2), vStrideB)
		divide := g.NewLabel("pv2x_divide")
		g.TESTQ(j, j)
		g.JZ(operand.LabelRef(divide))
		inner, slow, next := g.NewLabel("pv2x_j"), g.NewLabel("pv2x_zero"), g.NewLabel("pv2x_next")
		g.Label(inner)
		vv := make([]reg.VecVirtual, nv)
		for c := range vv {
			vv[c] = g.YMM()
			g.VMOVUPS(operand.Mem{Base: vp, Disp: 32 * c}, vv[c])
		}
		// Bit r of bits: p[j][r0+r] != 0 (NEQ_UQ: NaN counts). Only the
		// block's nr probabilities are read: the 2- and 1-row blocks may
		// sit at the end of p.
		chk, bits := g.XMM(), g.GP32()
		switch nr {
		case 4:
			g.VCMPPS(operand.U8(0x04), operand.Mem{Base: pp}, zero.AsX(), chk)
		case 2:
			g.VMOVQ(operand.Mem{Base: pp}, chk)
			g.VCMPPS(operand.U8(0x04), chk, zero.AsX(), chk)
		default:
			g.VMOVSS(operand.Mem{Base: pp}, chk)
			g.VCMPPS(operand.U8(0x04), chk, zero.AsX(), chk)
		}
		g.VMOVMSKPS(chk, bits)
		g.CMPL(bits, operand.U8(1<<nr-1))
		g.JNE(operand.LabelRef(slow))
		addRow := func(r int) {
			b := g.YMM()
			g.VBROADCASTSS(operand.Mem{Base: pp, Disp: 4 * r}, b)
			for c := range nv {
				t := g.YMM()
				g.VMULPS(vv[c], b, t)
				g.VADDPS(t, acc[r][c], acc[r][c])
			}
		}
		for r := range nr {
			addRow(r)
		}
		g.JMP(operand.LabelRef(next))
		g.Label(slow)
		for r := range nr {
			skip := g.NewLabel("pv2x_skip")
			g.BTL(operand.U8(r), bits)
			g.JCC(operand.LabelRef(skip)) // bit clear: p == 0
			addRow(r)
			g.Label(skip)
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
			sum := g.YMM()
			g.VBROADCASTSS(operand.Mem{Base: sp, Disp: 4 * r}, sum)
			for c := range nv {
				g.VDIVPS(sum, acc[r][c], acc[r][c]) // acc / sum
				g.VMOVUPS(acc[r][c], operand.Mem{Base: op, Disp: 32 * c})
			}
		}
	}
	// rowBlocks emits the blocks of nv vectors for all rows: groups of
	// pvRowsAVX2, then 2, 1.
	rowBlocks := func(nv int) {
		r0, left := g.GP64(), g.Load("rows")
		g.XORQ(r0, r0)
		stepGroupsOf(g, left, pvRowsAVX2, func(w int) {
			block(w, nv, r0)
			g.ADDQ(operand.U8(w), r0)
			g.SUBQ(operand.U8(w), left)
		}, "pv2x_rows")
	}
	full, tail, done := g.NewLabel("pv2x_cols"), g.NewLabel("pv2x_coltail"), g.NewLabel("pv2x_done")
	g.Label(full)
	g.CMPQ(colsLeft, operand.U8(8*pvVecsAVX2))
	g.JL(operand.LabelRef(tail))
	rowBlocks(pvVecsAVX2)
	g.ADDQ(operand.U32(32*pvVecsAVX2), outCol)
	g.ADDQ(operand.U32(32*pvVecsAVX2), vCol)
	g.SUBQ(operand.U8(8*pvVecsAVX2), colsLeft)
	g.JMP(operand.LabelRef(full))
	g.Label(tail)
	g.TESTQ(colsLeft, colsLeft) // 0 or 8 columns left
	g.JZ(operand.LabelRef(done))
	rowBlocks(1)
	g.Label(done)
	g.VZEROUPPER()
	g.RET()
}

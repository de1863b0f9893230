package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The AVX2 forms of LayerNorm's loops (layernorm.go has the AVX-512 ones)
// for CPUs without AVX-512. There are no opmasks: the statistics load a
// row's last partial step with VMASKMOVPS (masked lanes do not fault)
// and clear the squares of its missing columns; the normalisers take whole groups of 8
// columns and leave the rest to their Go wrappers, which is exact because
// each output depends on its own column only.

// avx2Tables are the 32-byte constants of the AVX2 loops, in one DATA
// section (nnAVX2Lanes): 8 all-ones dwords then 8 zero dwords, whose
// window at dword 8-w is the VMASKMOVPS mask of the first w lanes
// (tail), and the VPERMD indices that undo the in-lane interleave of
// VPACKSSDW and VPACKUSWB on four ymm (packOrder).
type avx2Tables struct {
	tail      operand.Mem
	packOrder operand.Mem
}

// genAVX2Tables emits the DATA section of avx2Tables.
func genAVX2Tables(g *gen) avx2Tables {
	m := g.StaticGlobal("nnAVX2Lanes")
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	for i := range 16 { // in address order, as the Go assembler wants DATA
		v := uint32(0)
		if i < 8 {
			v = 0xffffffff
		}
		g.AddDatum(4*i, operand.U32(v))
	}
	// After VPACKSSDW a,b then c,d and VPACKUSWB of the two, dword k of the
	// result holds 4 bytes of source (k%4) from its half k/4; this order
	// puts source 0's two dwords first, then source 1's, ...
	for i, v := range []uint32{0, 4, 1, 5, 2, 6, 3, 7} {
		g.AddDatum(64+4*i, operand.U32(v))
	}
	return avx2Tables{tail: m, packOrder: m.Offset(64)}
}

// genLayerNormAVX2 emits the AVX2 forms of LayerNorm's and the quantisers'
// inner loops (runtime/nn kernels lnStats16, lnNormalize, lnNormalizeDual,
// quantize, minMax) for CPUs without AVX-512.
// It returns the AVX2 tables, which INT8 attention's kernels share.
func genLayerNormAVX2(g *gen) avx2Tables {
	tab := genAVX2Tables(g)
	genLNStatsAVX2(g, tab)
	genLNNormAVX2(g)
	genLNNormDualAVX2(g)
	genQuantizeAVX2(g, tab)
	return tab
}

// ymmParam broadcasts the named 4-byte float argument to a new ymm
// register.
func (g *gen) ymmParam(name string) reg.VecVirtual {
	y := g.YMM()
	g.VBROADCASTSS(g.ParamAddr(name), y)
	return y
}

// genLNStatsAVX2 emits lnStats16AVX2Asm, lnStats16Asm's statistics on
// ymm: the 32 running sums of internal/lnstats in the 4 float64 lanes of
// eight accumulators (accumulator m holds sums 4m..4m+3), so eight add
// chains per row, and the Combine tree in the same pairs as the zmm
// kernel's. The last n%32 columns are loaded in chunks of 4 under
// VMASKMOVPS masks from the lane table (masked lanes read 0 and do not
// fault); the squares of masked lanes are cleared before their add.
func genLNStatsAVX2(g *gen, tab avx2Tables) {
	g.Function("lnStats16AVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(x *float32, stride int, n int, count float64, eps float64, mean *float64, inv *float64)")
	g.Pragma("noescape")
	g.Doc("lnStats16AVX2Asm is lnStats16Asm on AVX2: it writes the float64 mean and",
		"1/sqrt(variance+eps) of 16 rows of n float32 values (row r at x[r*stride]; n >= 1,",
		"count = float64(n)) to mean[0..15] and inv[0..15], with internal/lnstats's order of sums.")
	const accs = 8
	strideB := g.Load("stride")
	g.SHLQ(operand.U8(2), strideB)
	n := g.Load("n")
	blocks, tailW := g.GP64(), g.GP64()
	g.MOVQ(n, blocks)
	g.SHRQ(operand.U8(5), blocks) // whole steps of 32 columns
	g.MOVQ(n, tailW)
	g.ANDQ(operand.U8(31), tailW)
	row, meanPtr, invPtr := g.Load("x"), g.Load("mean"), g.Load("inv")
	tp := g.GP64()
	g.LEAQ(tab.tail, tp) // RIP-relative addresses take no index
	rows := g.GP64()
	g.MOVQ(operand.U32(16), rows)

	// tailMask returns the dword mask (xmm) of chunk m of the last step:
	// the first clamp(tailW - 4m, 0, 4) lanes, the table's window at dword
	// 8 - that.
	tailMask := func(m int) reg.VecVirtual {
		w, z, four := g.GP64(), g.GP64(), g.GP64()
		g.MOVQ(tailW, w)
		g.SUBQ(operand.U8(4*m), w)
		g.XORQ(z, z)
		g.CMPQ(w, z)
		g.CMOVQLT(z, w) // max(w, 0)
		g.MOVQ(operand.U32(4), four)
		g.CMPQ(w, four)
		g.CMOVQGT(four, w) // min(w, 4)
		g.NEGQ(w)
		mask := g.XMM()
		g.VMOVDQU(operand.Mem{Base: tp, Index: w, Scale: 4, Disp: 32}, mask) // dword 8 - w
		return mask
	}
	// pass runs add(acc, v, mask) on the float64 columns of the row, 4 at
	// a time into accumulator (j%32)/4 (mask nil, or the tail chunk's
	// dword mask), and returns the accumulators.
	pass := func(add func(acc, v, mask reg.VecVirtual)) [accs]reg.VecVirtual {
		var acc [accs]reg.VecVirtual
		for m := range acc {
			acc[m] = g.YMM()
			g.ZeroVec(acc[m])
		}
		col, left := g.GP64(), g.GP64()
		g.MOVQ(row, col)
		g.MOVQ(blocks, left)
		loop, tail, done := g.NewLabel("lns2_step"), g.NewLabel("lns2_tail"), g.NewLabel("lns2_done")
		g.TESTQ(left, left)
		g.JZ(operand.LabelRef(tail))
		g.Label(loop)
		for m := range acc {
			v := g.YMM()
			g.VCVTPS2PD(operand.Mem{Base: col, Disp: 16 * m}, v)
			add(acc[m], v, nil)
		}
		g.ADDQ(operand.U8(128), col)
		g.DECQ(left)
		g.JNZ(operand.LabelRef(loop))
		g.Label(tail)
		g.TESTQ(tailW, tailW)
		g.JZ(operand.LabelRef(done))
		for m := range acc {
			mask, f := tailMask(m), g.XMM()
			g.VMASKMOVPS(operand.Mem{Base: col, Disp: 16 * m}, mask, f) // masked lanes: 0, no fault
			v := g.YMM()
			g.VCVTPS2PD(f, v)
			add(acc[m], v, mask)
		}
		g.Label(done)
		return acc
	}
	// combine returns, in the low lane of an xmm register,
	// lnstats.Combine of the accumulators: lanes l and l+4 of the zmm
	// kernel's are the low and high ymm here.
	combine := func(acc [accs]reg.VecVirtual) reg.VecVirtual {
		for _, p := range [][2]int{{0, 2}, {1, 3}, {4, 6}, {5, 7}} {
			g.VADDPD(acc[p[1]], acc[p[0]], acc[p[0]]) // s[l] + s[l+8], s[l+16] + s[l+24]
		}
		g.VADDPD(acc[4], acc[0], acc[0]) // a[l], l < 4
		g.VADDPD(acc[5], acc[1], acc[1]) // a[l], l >= 4
		g.VADDPD(acc[1], acc[0], acc[0]) // a[l] + a[l+4]
		h2 := g.XMM()
		g.VEXTRACTF128(operand.U8(1), acc[0], h2)
		g.VADDPD(h2, acc[0].AsX(), h2) // h4[l] + h4[l+2]
		h1 := g.XMM()
		g.VPERMILPD(operand.U8(1), h2, h1)
		g.VADDSD(h1, h2, h2)
		return h2
	}

	rowLoop := g.NewLabel("lns2_row")
	g.Label(rowLoop)
	sums := pass(func(acc, v, _ reg.VecVirtual) { g.VADDPD(v, acc, acc) })
	mean := combine(sums)
	g.VDIVSD(g.ParamAddr("count"), mean, mean) // sum / count
	g.VMOVSD(mean, operand.Mem{Base: meanPtr})
	yMean := g.YMM()
	g.VBROADCASTSD(mean, yMean)
	sqs := pass(func(acc, v, mask reg.VecVirtual) {
		g.VSUBPD(yMean, v, v) // x - mean
		g.VMULPD(v, v, v)
		if mask != nil {
			m64 := g.YMM()
			g.VPMOVSXDQ(mask, m64)
			g.VANDPD(m64, v, v) // past the row's end: add +0
		}
		g.VADDPD(v, acc, acc)
	})
	sq := combine(sqs)
	g.VDIVSD(g.ParamAddr("count"), sq, sq) // sq / count
	g.VADDSD(g.ParamAddr("eps"), sq, sq)
	g.VSQRTSD(sq, sq, sq)
	one := g.XMM()
	g.VMOVSD(g.consts.f64(1), one)
	g.VDIVSD(sq, one, one) // 1 / sqrt
	g.VMOVSD(one, operand.Mem{Base: invPtr})
	g.ADDQ(operand.U8(8), meanPtr)
	g.ADDQ(operand.U8(8), invPtr)
	g.ADDQ(strideB, row)
	g.DECQ(rows)
	g.JNZ(operand.LabelRef(rowLoop))
	g.VZEROUPPER()
	g.RET()
}

// quantizerAVX2 holds the ymm registers of qgemm's u8 quantisation
// (epilogue.go: quantizeU8): clamp(roundEven(maxps/minps-clamped
// v*invScale) + zp, 0, 255).
type quantizerAVX2 struct {
	inv, zp, lo, hi reg.VecVirtual
}

// newQuantizerAVX2 loads the invScale and zp arguments of the active
// function and the clamp bounds.
func (g *gen) newQuantizerAVX2() quantizerAVX2 {
	q := quantizerAVX2{inv: g.ymmParam("invScale"), zp: g.YMM(), lo: g.YMM(), hi: g.YMM()}
	zp := g.XMM()
	g.VMOVD(g.Load32("zp"), zp) // (the broadcast from a GP register is AVX-512)
	g.VPBROADCASTD(zp, q.zp)
	g.VBROADCASTSS(g.consts.f32(-quantClamp), q.lo)
	g.VBROADCASTSS(g.consts.f32(quantClamp), q.hi)
	return q
}

// codes returns the int32 codes before the clamp to [0, 255] of the 8
// floats of v: roundEven(minps(maxps(v*invScale, -clamp), clamp)) + zp,
// wrapping as Go's int32 addition does.
func (q quantizerAVX2) codes(g *gen, v reg.VecVirtual) reg.VecVirtual {
	t := g.YMM()
	g.VMULPS(q.inv, v, t) // v * invScale
	g.VMAXPS(q.lo, t, t)  // maxps(t, -clamp): NaN gives -clamp
	g.VMINPS(q.hi, t, t)  // minps(t, clamp)
	i := g.YMM()
	g.VCVTPS2DQ(t, i) // round to nearest even (MXCSR default)
	g.VPADDD(q.zp, i, i)
	return i
}

// store8 quantises the 8 floats of v and stores them as 8 bytes at m.
// The clamp to [0, 255] is the two saturating packs: int32 to int16 with
// signed saturation keeps 0..255 and keeps every value's side of that
// range, then int16 to u8 with unsigned saturation clamps.
func (q quantizerAVX2) store8(g *gen, v reg.VecVirtual, m operand.Mem) {
	i := q.codes(g, v)
	hi := g.XMM()
	g.VEXTRACTI128(operand.U8(1), i, hi)
	lo := i.AsX()
	g.VPACKSSDW(hi, lo, lo) // 8 words, in order
	g.VPACKUSWB(lo, lo, lo) // 8 bytes, twice
	g.VMOVQ(lo, m)
}

// genLNNormAVX2 emits lnNormAVX2Asm, lnNormAsm on AVX2 for whole groups of
// 8 columns: one specialised loop per flag combination.
func genLNNormAVX2(g *gen) {
	g.Function("lnNormAVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(y *float32, q *uint8, x *float32, n int, meanHi float32, meanLo float32, inv float32, gamma *float32, beta *float32, invScale float32, zp int32, flags int)")
	g.Pragma("noescape")
	g.Doc("lnNormAVX2Asm is lnNormAsm on AVX2 for n >= 8 values, a multiple of 8: y[j] =",
		"((x[j]-meanHi-meanLo)*inv)*gamma[j] + beta[j] in float32, each operation rounded, stored to y",
		"(flags&2) and/or quantised to q (flags&4) as qgemm.QuantizeU8(y[j], invScale, zp);",
		"flags&1: beta is used.")
	normVariants(g, "lnn2", lnNormVariantAVX2)
}

// lnNormVariantAVX2 emits lnNormAVX2Asm's loop for one flag combination.
func lnNormVariantAVX2(g *gen, flags int) {
	has := func(f int) bool { return flags&f != 0 }
	st := g.rowStatsParams(g.ymmParam)
	xp, gp, n := g.Load("x"), g.Load("gamma"), g.Load("n")
	var bp, yp, qp reg.GPVirtual
	if has(lnBeta) {
		bp = g.Load("beta")
	}
	if has(lnF32) {
		yp = g.Load("y")
	}
	var quant quantizerAVX2
	if has(lnU8) {
		qp = g.Load("q")
		quant = g.newQuantizerAVX2()
	}
	j := g.GP64()
	g.XORQ(j, j)
	at := func(base reg.GPVirtual) operand.Mem { return column(base, j) }
	loop := g.NewLabel("lnn2_loop")
	g.Label(loop)
	y := g.affinePSY(g.normPSY(at(xp), st), at(gp), at(bp), has(lnBeta))
	if has(lnF32) {
		g.VMOVUPS(y, at(yp))
	}
	if has(lnU8) {
		quant.store8(g, y, operand.Mem{Base: qp, Index: j, Scale: 1})
	}
	g.ADDQ(operand.U8(8), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

// column addresses float32 column j of the row at base; a nil base (an
// operand the variant does not use) gives the zero Mem.
func column(base, j reg.GPVirtual) operand.Mem {
	if base == nil {
		return operand.Mem{}
	}
	return operand.Mem{Base: base, Index: j, Scale: 4}
}

// normPSY returns z = ((x - meanHi) - meanLo) * inv for the 8 floats at
// x, each operation rounded (lnstats.Row32's Normalize).
func (g *gen) normPSY(x operand.Mem, st rowStats) reg.VecVirtual {
	z := g.YMM()
	g.VMOVUPS(x, z)
	g.VSUBPS(st.meanHi, z, z) // x - meanHi
	g.VSUBPS(st.meanLo, z, z) // - meanLo
	g.VMULPS(st.inv, z, z)
	return z
}

// affinePSY returns z*gamma + beta (lnstats.Affine), or z*gamma without a
// beta (lnstats.Scale), for the 8 floats at gamma and beta, the product
// rounded before the add.
func (g *gen) affinePSY(z reg.VecVirtual, gamma, beta operand.Mem, hasBeta bool) reg.VecVirtual {
	v := g.YMM()
	g.VMULPS(gamma, z, v) // z * gamma
	if hasBeta {
		g.VADDPS(beta, v, v)
	}
	return v
}

// genLNNormDualAVX2 emits lnNormDualAVX2Asm, lnNormDualAsm on AVX2 for
// whole groups of 8 columns: z once per column, then both outputs, each
// operation rounded on its own (lnNormalizeDualGo's order). One loop with
// betas, one without.
func genLNNormDualAVX2(g *gen) {
	g.Function("lnNormDualAVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(y *float32, q *uint8, x *float32, n int, meanHi float32, meanLo float32, inv float32, gamma *float32, beta *float32, gammaQ *float32, betaQ *float32, invScale float32, zp int32, flags int)")
	g.Pragma("noescape")
	g.Doc("lnNormDualAVX2Asm is lnNormDualAsm on AVX2 for n >= 8 values, a multiple of 8:",
		"z[j] = ((x[j]-meanHi)-meanLo)*inv, y[j] = z[j]*gamma[j] + beta[j] and q[j] =",
		"qgemm.QuantizeU8(z[j]*gammaQ[j] + betaQ[j], invScale, zp), in float32 with each operation",
		"rounded; flags&1: beta and betaQ are used (else both are ignored).")
	betaVariants(g, "lnd2", lnNormDualVariantAVX2)
}

// lnNormDualVariantAVX2 emits lnNormDualAVX2Asm's loop with or without
// betas.
func lnNormDualVariantAVX2(g *gen, beta bool) {
	st := g.rowStatsParams(g.ymmParam)
	xp, n := g.Load("x"), g.Load("n")
	yp, qp := g.Load("y"), g.Load("q")
	gp, gqp := g.Load("gamma"), g.Load("gammaQ")
	var bp, bqp reg.GPVirtual
	if beta {
		bp, bqp = g.Load("beta"), g.Load("betaQ")
	}
	quant := g.newQuantizerAVX2()
	j := g.GP64()
	g.XORQ(j, j)
	at := func(base reg.GPVirtual) operand.Mem { return column(base, j) }
	loop := g.NewLabel("lnd2_loop")
	g.Label(loop)
	z := g.normPSY(at(xp), st) // shared by both outputs
	g.VMOVUPS(g.affinePSY(z, at(gp), at(bp), beta), at(yp))
	quant.store8(g, g.affinePSY(z, at(gqp), at(bqp), beta), operand.Mem{Base: qp, Index: j, Scale: 1})
	g.ADDQ(operand.U8(8), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

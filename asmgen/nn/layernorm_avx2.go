package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The AVX2 forms of LayerNorm's loops (layernorm.go has the AVX-512 ones)
// for CPUs without AVX-512. There are no opmasks: the statistics load a
// row's last partial block of 8 with VMASKMOVPS (masked lanes do not
// fault) and skip its missing columns with branches, since those would
// change the sums of squares; the normalisers take whole groups of 8
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

// ymmParam64 broadcasts the named 8-byte float argument to the 4 lanes of
// a new ymm register.
func (g *gen) ymmParam64(name string) reg.VecVirtual {
	y := g.YMM()
	g.VBROADCASTSD(g.ParamAddr(name), y)
	return y
}

// genLNStatsAVX2 emits lnStats16AVX2Asm, lnStats16Asm's statistics on
// ymm: the 16 rows are 4 groups of 4, each group's row sums in the 4
// float64 lanes of one accumulator. Per block of 8 columns a group's 4
// rows are loaded and transposed in-lane (VUNPCKLPS/HPS, VUNPCKLPD/HPD)
// to 4 vectors holding columns u and u+4 of the 4 rows; each column is
// then widened to float64 and added in column order. The sums are
// latency-bound chains (one VADDPD per column and group), so the 4 groups
// in flight are what keeps the adder busy.
func genLNStatsAVX2(g *gen, tab avx2Tables) {
	g.Function("lnStats16AVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(x *float32, stride int, n int, count float64, eps float64, mean *float64, inv *float64)")
	g.Pragma("noescape")
	g.Doc("lnStats16AVX2Asm is lnStats16Asm on AVX2: it writes the float64 mean and",
		"1/sqrt(variance+eps) of 16 rows of n float32 values (row r at x[r*stride]; n >= 1,",
		"count = float64(n)) to mean[0..15] and inv[0..15], with sequential sums in column order.")
	s := g.Load("stride")
	g.SHLQ(operand.U8(2), s)
	s3 := g.GP64()
	g.LEAQ(operand.Mem{Base: s, Index: s, Scale: 2}, s3)
	meanPtr := g.Load("mean")

	// pass runs f(group, column) on the float64 lanes of each group's
	// 4 rows, for each column in order.
	pass := func(f func(grp int, v reg.VecVirtual)) {
		col, left := g.Load("x"), g.Load("n")
		loop, tail, done := g.NewLabel("lns2_cols"), g.NewLabel("lns2_tail"), g.NewLabel("lns2_done")
		// body processes one block of 8 columns, or with mask set the
		// first w (1..7) of them, loaded under mask.
		body := func(mask reg.VecVirtual, w reg.GPVirtual) {
			for grp := range 4 {
				p := col
				if grp > 0 {
					p = g.GP64()
					switch grp {
					case 1:
						g.LEAQ(operand.Mem{Base: col, Index: s, Scale: 4}, p)
					case 2:
						g.LEAQ(operand.Mem{Base: col, Index: s, Scale: 8}, p)
					case 3:
						g.LEAQ(operand.Mem{Base: col, Index: s3, Scale: 4}, p)
					}
				}
				rowMem := []operand.Mem{
					{Base: p}, {Base: p, Index: s, Scale: 1}, {Base: p, Index: s, Scale: 2}, {Base: p, Index: s3, Scale: 1},
				}
				var rows [4]reg.VecVirtual
				for i, m := range rowMem {
					rows[i] = g.YMM()
					if mask == nil {
						g.VMOVUPS(m, rows[i])
					} else {
						g.VMASKMOVPS(m, mask, rows[i]) // zero past w, no fault
					}
				}
				// rows a, b, c, d (columns 0-3 | 4-7) to lo = a0 b0 a1 b1 | a4 b4 a5 b5, ...
				t0, t1, t2, t3 := g.YMM(), g.YMM(), g.YMM(), g.YMM()
				g.VUNPCKLPS(rows[1], rows[0], t0)
				g.VUNPCKHPS(rows[1], rows[0], t1)
				g.VUNPCKLPS(rows[3], rows[2], t2)
				g.VUNPCKHPS(rows[3], rows[2], t3)
				cols := [4]reg.VecVirtual{g.YMM(), g.YMM(), g.YMM(), g.YMM()} // column u | column u+4
				g.VUNPCKLPD(t2, t0, cols[0])
				g.VUNPCKHPD(t2, t0, cols[1])
				g.VUNPCKLPD(t3, t1, cols[2])
				g.VUNPCKHPD(t3, t1, cols[3])
				end := g.NewLabel("lns2_group")
				for u := range 8 {
					if mask != nil && u > 0 {
						g.CMPQ(w, operand.U32(u))
						g.JLE(operand.LabelRef(end))
					}
					src := cols[u%4].AsX()
					if u >= 4 {
						src = g.XMM()
						g.VEXTRACTF128(operand.U8(1), cols[u-4], src)
					}
					v := g.YMM()
					g.VCVTPS2PD(src, v)
					f(grp, v)
				}
				g.Label(end)
			}
		}
		g.Label(loop)
		g.CMPQ(left, operand.U8(8))
		g.JL(operand.LabelRef(tail))
		body(nil, nil)
		g.ADDQ(operand.U8(32), col)
		g.SUBQ(operand.U8(8), left)
		g.JMP(operand.LabelRef(loop))

		g.Label(tail)
		g.TESTQ(left, left)
		g.JZ(operand.LabelRef(done))
		idx, tp := g.GP64(), g.GP64()
		g.MOVQ(operand.U32(8), idx)
		g.SUBQ(left, idx)
		g.LEAQ(tab.tail, tp) // RIP-relative addresses take no index
		mask := g.YMM()
		g.VMOVDQU(operand.Mem{Base: tp, Index: idx, Scale: 4}, mask) // lanes < left set
		body(mask, left)
		g.Label(done)
	}

	var sums [4]reg.VecVirtual
	for i := range sums {
		sums[i] = g.YMM()
		g.ZeroVec(sums[i])
	}
	pass(func(grp int, v reg.VecVirtual) { g.VADDPD(v, sums[grp], sums[grp]) })
	count := g.ymmParam64("count")
	for i, sum := range sums {
		g.VDIVPD(count, sum, sum) // sum / count
		g.VMOVUPD(sum, operand.Mem{Base: meanPtr, Disp: 32 * i})
	}

	var sqs [4]reg.VecVirtual
	for i := range sqs {
		sqs[i] = g.YMM()
		g.ZeroVec(sqs[i])
	}
	pass(func(grp int, v reg.VecVirtual) {
		g.VSUBPD(operand.Mem{Base: meanPtr, Disp: 32 * grp}, v, v) // x - mean
		g.VMULPD(v, v, v)
		g.VADDPD(v, sqs[grp], sqs[grp])
	})
	count = g.ymmParam64("count")
	eps := g.ymmParam64("eps")
	one := g.YMM()
	g.VBROADCASTSD(g.consts.f64(1), one)
	invPtr := g.Load("inv")
	for i, sq := range sqs {
		g.VDIVPD(count, sq, sq) // sq / count
		g.VADDPD(eps, sq, sq)
		g.VSQRTPD(sq, sq)
		g.VDIVPD(sq, one, sq) // 1 / sqrt
		g.VMOVUPD(sq, operand.Mem{Base: invPtr, Disp: 32 * i})
	}
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
// 8 columns: one specialised loop per flag combination, each step two
// halves of 4 float64 lanes.
func genLNNormAVX2(g *gen) {
	g.Function("lnNormAVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(y *float32, q *uint8, x *float32, n int, mean float64, inv float64, gamma *float32, beta *float32, invScale float32, zp int32, flags int)")
	g.Pragma("noescape")
	g.Doc("lnNormAVX2Asm is lnNormAsm on AVX2 for n >= 8 values, a multiple of 8: y[j] =",
		"float32(((x[j]-mean)*inv)*gamma[j] + beta[j]) in float64, stored to y (flags&2) and/or",
		"quantised to q (flags&4) as qgemm.QuantizeU8(y[j], invScale, zp); flags&1: beta is used.")
	normVariants(g, "lnn2", lnNormVariantAVX2)
}

// lnNormVariantAVX2 emits lnNormAVX2Asm's loop for one flag combination.
func lnNormVariantAVX2(g *gen, flags int) {
	has := func(f int) bool { return flags&f != 0 }
	mean, inv := g.ymmParam64("mean"), g.ymmParam64("inv")
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
	at := func(base reg.GPVirtual, disp int) operand.Mem {
		return operand.Mem{Base: base, Index: j, Scale: 4, Disp: disp}
	}
	loop := g.NewLabel("lnn2_loop")
	g.Label(loop)
	var outs [2]reg.VecVirtual
	for h := range outs {
		var beta *operand.Mem
		if has(lnBeta) {
			b := at(bp, 16*h)
			beta = &b
		}
		outs[h] = g.affineF32(g.zPD(at(xp, 16*h), mean, inv), at(gp, 16*h), beta)
		if has(lnF32) {
			g.VMOVUPS(outs[h].AsX(), at(yp, 16*h))
		}
	}
	if has(lnU8) {
		g.VINSERTF128(operand.U8(1), outs[1].AsX(), outs[0], outs[0])
		quant.store8(g, outs[0], operand.Mem{Base: qp, Index: j, Scale: 1})
	}
	g.ADDQ(operand.U8(8), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

// zPD returns z = (float64(x) - mean) * inv for the 4 floats at x, each
// operation rounded on its own (nn.normalize's order).
func (g *gen) zPD(x operand.Mem, mean, inv reg.VecVirtual) reg.VecVirtual {
	z := g.YMM()
	g.VCVTPS2PD(x, z)
	g.VSUBPD(mean, z, z) // x - mean
	g.VMULPD(inv, z, z)
	return z
}

// affineF32 returns, in the low xmm of a new register, float32(z*gamma +
// beta) for the 4 float64 lanes of z and the 4 floats at gamma and beta
// (no beta: nil), the product rounded before the add.
func (g *gen) affineF32(z reg.VecVirtual, gamma operand.Mem, beta *operand.Mem) reg.VecVirtual {
	v := g.YMM()
	g.VCVTPS2PD(gamma, v)
	g.VMULPD(v, z, v) // z * gamma
	if beta != nil {
		bt := g.YMM()
		g.VCVTPS2PD(*beta, bt)
		g.VADDPD(bt, v, v)
	}
	out := g.YMM()
	g.VCVTPD2PSY(v, out.AsX())
	return out
}

// genLNNormDualAVX2 emits lnNormDualAVX2Asm, lnNormDualAsm on AVX2 for
// whole groups of 8 columns: z once per column, then both outputs, each
// operation rounded on its own (lnNormalizeDualGo's order). One loop with
// betas, one without.
func genLNNormDualAVX2(g *gen) {
	g.Function("lnNormDualAVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(y *float32, q *uint8, x *float32, n int, mean float64, inv float64, gamma *float32, beta *float32, gammaQ *float32, betaQ *float32, invScale float32, zp int32, flags int)")
	g.Pragma("noescape")
	g.Doc("lnNormDualAVX2Asm is lnNormDualAsm on AVX2 for n >= 8 values, a multiple of 8:",
		"z[j] = (x[j]-mean)*inv in float64, y[j] = float32(z[j]*gamma[j] + beta[j]) and",
		"q[j] = qgemm.QuantizeU8(float32(z[j]*gammaQ[j] + betaQ[j]), invScale, zp); flags&1: beta",
		"and betaQ are used (else both are ignored).")
	betaVariants(g, "lnd2", lnNormDualVariantAVX2)
}

// lnNormDualVariantAVX2 emits lnNormDualAVX2Asm's loop with or without
// betas.
func lnNormDualVariantAVX2(g *gen, beta bool) {
	mean, inv := g.ymmParam64("mean"), g.ymmParam64("inv")
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
	at := func(base reg.GPVirtual, disp int) operand.Mem {
		return operand.Mem{Base: base, Index: j, Scale: 4, Disp: disp}
	}
	loop := g.NewLabel("lnd2_loop")
	g.Label(loop)
	var outQ [2]reg.VecVirtual
	for h := range outQ {
		z := g.zPD(at(xp, 16*h), mean, inv) // shared by both outputs
		for o, ptrs := range [][2]reg.GPVirtual{{gp, bp}, {gqp, bqp}} {
			var b *operand.Mem
			if beta {
				m := at(ptrs[1], 16*h)
				b = &m
			}
			out := g.affineF32(z, at(ptrs[0], 16*h), b)
			if o == 0 {
				g.VMOVUPS(out.AsX(), at(yp, 16*h))
			} else {
				outQ[h] = out
			}
		}
	}
	g.VINSERTF128(operand.U8(1), outQ[1].AsX(), outQ[0], outQ[0])
	quant.store8(g, outQ[0], operand.Mem{Base: qp, Index: j, Scale: 1})
	g.ADDQ(operand.U8(8), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// LayerNorm (runtime/nn/layernorm.go) computes each row's statistics in
// float64 with sequential sums, the FP32 interpreter's order. The
// assembly keeps that order and vectorises across rows instead: 16 rows
// at a time are transposed in 16x16 blocks so that each lane of two zmm
// float64 accumulators runs one row's sum down its columns. Normalising is
// elementwise and runs along the row, 8 float64 lanes at a time.

// Flag bits of lnNormAsm (runtime/nn/kernels_amd64.go).
const (
	lnBeta = 1 << iota // add beta
	lnF32              // store the f32 output
	lnU8               // store the u8-quantised output
)

func genLayerNorm(g *gen) {
	genLNStats(g)
	genLNNorm(g)
	genLNNormDual(g)
}

// widen returns the float64 forms of the low and high 8 lanes of the
// float32 vector v.
func (g *gen) widen(v reg.VecVirtual) (lo, hi reg.VecVirtual) {
	lo, hi = g.ZMM(), g.ZMM()
	g.VCVTPS2PD(v.AsY(), lo)
	t := g.YMM()
	g.VEXTRACTF32X8(operand.U8(1), v, t)
	g.VCVTPS2PD(t, hi)
	return lo, hi
}

// genLNStats emits lnStats16Asm: for rows r < 16 of n columns,
//
//	mean_r = (0 + x_r0 + x_r1 + ...) / count
//	inv_r  = 1 / sqrt((0 + d_r0*d_r0 + d_r1*d_r1 + ...) / count + eps),  d = x - mean_r
//
// in float64, each product rounded (no FMA), sums in column order.
func genLNStats(g *gen) {
	g.Function("lnStats16Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(x *float32, stride int, n int, count float64, eps float64, mean *float64, inv *float64)")
	g.Pragma("noescape")
	g.Doc("lnStats16Asm writes the float64 mean and 1/sqrt(variance+eps) of 16 rows of n",
		"float32 values (row r at x[r*stride]; n >= 1, count = float64(n)) to mean[0..15]",
		"and inv[0..15], with sequential sums in column order.")
	strideB := g.Load("stride")
	g.SHLQ(operand.U8(2), strideB)
	zCount := g.broadcastParam64("count")

	// pass runs f on the float64 lanes (rows 0-7, rows 8-15) of each
	// column in order.
	pass := func(f func(lo, hi reg.VecVirtual)) {
		col, left := g.Load("x"), g.Load("n")
		loop := g.NewLabel("ln_cols")
		g.Label(loop)
		w := g.minConst(left, 16)
		k := g.maskOf(w)
		cols := g.transpose16(g.loadRows(col, strideB, k, nil))
		next := g.NewLabel("ln_next")
		for u, c := range cols {
			if u > 0 {
				g.CMPQ(w, operand.U32(u))
				g.JLE(operand.LabelRef(next))
			}
			f(g.widen(c))
		}
		g.Label(next)
		g.ADDQ(operand.U8(64), col)
		g.SUBQ(operand.U8(16), left)
		g.JG(operand.LabelRef(loop))
	}

	sumLo, sumHi := g.zeroZMM(), g.zeroZMM()
	pass(func(lo, hi reg.VecVirtual) {
		g.VADDPD(lo, sumLo, sumLo)
		g.VADDPD(hi, sumHi, sumHi)
	})
	meanLo, meanHi := g.ZMM(), g.ZMM()
	g.VDIVPD(zCount, sumLo, meanLo) // sum / count
	g.VDIVPD(zCount, sumHi, meanHi)

	sqLo, sqHi := g.zeroZMM(), g.zeroZMM()
	pass(func(lo, hi reg.VecVirtual) {
		for _, h := range []struct{ x, mean, sq reg.VecVirtual }{{lo, meanLo, sqLo}, {hi, meanHi, sqHi}} {
			g.VSUBPD(h.mean, h.x, h.x) // x - mean
			g.VMULPD(h.x, h.x, h.x)
			g.VADDPD(h.x, h.sq, h.sq)
		}
	})
	meanPtr := g.Load("mean")
	g.VMOVUPD(meanLo, operand.Mem{Base: meanPtr})
	g.VMOVUPD(meanHi, operand.Mem{Base: meanPtr, Disp: 64})
	zEps := g.broadcastParam64("eps")
	zOne := g.ZMM()
	g.VBROADCASTSD(g.consts.f64(1), zOne)
	invPtr := g.Load("inv")
	for i, sq := range []reg.VecVirtual{sqLo, sqHi} {
		g.VDIVPD(zCount, sq, sq) // sq / count
		g.VADDPD(zEps, sq, sq)
		g.VSQRTPD(sq, sq)
		g.VDIVPD(sq, zOne, sq) // 1 / sqrt
		g.VMOVUPD(sq, operand.Mem{Base: invPtr, Disp: 64 * i})
	}
	g.VZEROUPPER()
	g.RET()
}

// genLNNorm emits lnNormAsm: one row, y_j = float32(((x_j - mean) * inv) *
// gamma_j + beta_j) in float64, stored as f32 and/or quantised to u8 like
// qgemm's epilogue. One specialised loop per flag combination.
func genLNNorm(g *gen) {
	g.Function("lnNormAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(y *float32, q *uint8, x *float32, n int, mean float64, inv float64, gamma *float32, beta *float32, invScale float32, zp int32, flags int)")
	g.Pragma("noescape")
	g.Doc("lnNormAsm normalises one row of n >= 1 values: y[j] = float32(((x[j]-mean)*inv)*gamma[j]",
		"+ beta[j]) in float64, stored to y (flags&2) and/or quantised to q (flags&4) as",
		"qgemm.QuantizeU8(y[j], invScale, zp); flags&1: beta is used.")
	normVariants(g, "lnn", lnNormVariant)
}

// normVariants emits a LayerNorm normaliser's body: a jump on the flags
// argument to the copy of variant specialised to it, for every
// combination with an output (none asked for: return).
func normVariants(g *gen, prefix string, variant func(g *gen, flags int)) {
	flags := g.Load("flags")
	variants := []int{lnF32, lnU8, lnF32 | lnU8, lnBeta | lnF32, lnBeta | lnU8, lnBeta | lnF32 | lnU8}
	labels := make([]string, len(variants))
	for i, v := range variants {
		labels[i] = g.NewLabel(prefix + "_variant")
		g.CMPQ(flags, operand.U8(v))
		g.JEQ(operand.LabelRef(labels[i]))
	}
	g.RET() // no output asked for
	for i, v := range variants {
		g.Label(labels[i])
		variant(g, v)
	}
}

func lnNormVariant(g *gen, flags int) {
	has := func(f int) bool { return flags&f != 0 }
	zMean, zInv := g.broadcastParam64("mean"), g.broadcastParam64("inv")
	xp, gp, left := g.Load("x"), g.Load("gamma"), g.Load("n")
	var bp, yp, qp reg.GPVirtual
	if has(lnBeta) {
		bp = g.Load("beta")
	}
	if has(lnF32) {
		yp = g.Load("y")
	}
	var quant quantizer
	if has(lnU8) {
		qp = g.Load("q")
		quant = g.newQuantizer()
	}
	loop := g.NewLabel("lnn_loop")
	g.Label(loop)
	w := g.minConst(left, 16)
	k := g.maskOf(w)
	kHi := g.K()
	g.KSHIFTRW(operand.U8(8), k, kHi)
	y := g.ZMM()
	halves := []struct {
		k    reg.OpmaskVirtual
		disp int
		out  reg.Register
	}{{k, 0, y.AsY()}, {kHi, 32, g.YMM()}}
	for _, h := range halves {
		v := g.ZMM()
		g.VCVTPS2PD_Z(operand.Mem{Base: xp, Disp: h.disp}, h.k, v)
		g.VSUBPD(zMean, v, v) // x - mean
		g.VMULPD(zInv, v, v)
		gm := g.ZMM()
		g.VCVTPS2PD_Z(operand.Mem{Base: gp, Disp: h.disp}, h.k, gm)
		g.VMULPD(gm, v, v)
		if has(lnBeta) {
			bt := g.ZMM()
			g.VCVTPS2PD_Z(operand.Mem{Base: bp, Disp: h.disp}, h.k, bt)
			g.VADDPD(bt, v, v)
		}
		g.VCVTPD2PS(v, h.out)
	}
	g.VINSERTF32X8(operand.U8(1), halves[1].out, y, y)
	if has(lnF32) {
		g.VMOVUPS(y, k, operand.Mem{Base: yp})
		g.ADDQ(operand.U8(64), yp)
	}
	if has(lnU8) {
		quant.store(g, y, k, operand.Mem{Base: qp})
		g.ADDQ(operand.U8(16), qp)
	}
	g.ADDQ(operand.U8(64), xp)
	g.ADDQ(operand.U8(64), gp)
	if has(lnBeta) {
		g.ADDQ(operand.U8(64), bp)
	}
	g.SUBQ(operand.U8(16), left)
	g.JG(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

// genLNNormDual emits lnNormDualAsm, the row kernel of nn.LayerNormDual:
// z_j = (x_j - mean) * inv once, then y_j = float32(z_j*gamma_j + beta_j)
// stored as f32 and float32(z_j*gammaQ_j + betaQ_j) quantised to u8, each
// in float64 with every operation rounded (lnNormalizeDualGo's order).
// One loop with betas, one without.
func genLNNormDual(g *gen) {
	g.Function("lnNormDualAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(y *float32, q *uint8, x *float32, n int, mean float64, inv float64, gamma *float32, beta *float32, gammaQ *float32, betaQ *float32, invScale float32, zp int32, flags int)")
	g.Pragma("noescape")
	g.Doc("lnNormDualAsm normalises one row of n >= 1 values once, z[j] = (x[j]-mean)*inv in float64,",
		"and stores y[j] = float32(z[j]*gamma[j] + beta[j]) and q[j] = qgemm.QuantizeU8(float32(z[j]*gammaQ[j]",
		"+ betaQ[j]), invScale, zp); flags&1: beta and betaQ are used (else both are ignored).")
	betaVariants(g, "lnd", lnNormDualVariant)
}

// betaVariants emits a dual normaliser's body: the copy of variant
// without betas, or, when the flags argument is lnBeta, the one with.
func betaVariants(g *gen, prefix string, variant func(g *gen, beta bool)) {
	flags := g.Load("flags")
	withBeta := g.NewLabel(prefix + "_beta")
	g.CMPQ(flags, operand.U8(lnBeta))
	g.JEQ(operand.LabelRef(withBeta))
	variant(g, false)
	g.Label(withBeta)
	variant(g, true)
}

func lnNormDualVariant(g *gen, beta bool) {
	zMean, zInv := g.broadcastParam64("mean"), g.broadcastParam64("inv")
	xp, left := g.Load("x"), g.Load("n")
	yp, qp := g.Load("y"), g.Load("q")
	gp, gqp := g.Load("gamma"), g.Load("gammaQ")
	var bp, bqp reg.GPVirtual
	if beta {
		bp, bqp = g.Load("beta"), g.Load("betaQ")
	}
	quant := g.newQuantizer()
	loop := g.NewLabel("lnd_loop")
	g.Label(loop)
	w := g.minConst(left, 16)
	k := g.maskOf(w)
	kHi := g.K()
	g.KSHIFTRW(operand.U8(8), k, kHi)
	y, yq := g.ZMM(), g.ZMM()
	halves := []struct {
		k       reg.OpmaskVirtual
		disp    int
		out, oq reg.Register
	}{{k, 0, y.AsY(), yq.AsY()}, {kHi, 32, g.YMM(), g.YMM()}}
	for _, h := range halves {
		z := g.ZMM()
		g.VCVTPS2PD_Z(operand.Mem{Base: xp, Disp: h.disp}, h.k, z)
		g.VSUBPD(zMean, z, z) // x - mean
		g.VMULPD(zInv, z, z)  // z, shared by both outputs
		for _, o := range []struct {
			gamma, beta reg.GPVirtual
			out         reg.Register
		}{{gp, bp, h.out}, {gqp, bqp, h.oq}} {
			v := g.ZMM()
			g.VCVTPS2PD_Z(operand.Mem{Base: o.gamma, Disp: h.disp}, h.k, v)
			g.VMULPD(v, z, v) // z * gamma
			if beta {
				bt := g.ZMM()
				g.VCVTPS2PD_Z(operand.Mem{Base: o.beta, Disp: h.disp}, h.k, bt)
				g.VADDPD(bt, v, v)
			}
			g.VCVTPD2PS(v, o.out)
		}
	}
	g.VINSERTF32X8(operand.U8(1), halves[1].out, y, y)
	g.VINSERTF32X8(operand.U8(1), halves[1].oq, yq, yq)
	g.VMOVUPS(y, k, operand.Mem{Base: yp})
	quant.store(g, yq, k, operand.Mem{Base: qp})
	ptrs := []reg.GPVirtual{xp, yp, gp, gqp}
	if beta {
		ptrs = append(ptrs, bp, bqp)
	}
	for _, p := range ptrs {
		g.ADDQ(operand.U8(64), p)
	}
	g.ADDQ(operand.U8(16), qp)
	g.SUBQ(operand.U8(16), left)
	g.JG(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

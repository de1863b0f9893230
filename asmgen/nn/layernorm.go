package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// LayerNorm (runtime/nn/layernorm.go) computes each row's statistics in
// float64 in internal/lnstats's order (the FP32 interpreter's): 32
// running sums per row, which the assembly keeps in the lanes of four
// accumulators as it runs along the row. Normalising is elementwise, in
// float32 (lnstats.Normalize, Affine), 16 lanes at a time along the row.

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

// genLNStats emits lnStats16Asm: for rows r < 16 of n columns, the mean
// and 1/sqrt(variance + eps) in float64, in internal/lnstats's order:
// column j of a row adds to float64 lane j%8 of accumulator (j%32)/8 (four
// zmm), then lnstats.Combine's tree. Rows go in pairs, each pair two
// passes along its rows (6 KiB at n = 768, in L1d for the second), 32
// columns a step; the last n%32 columns are loaded under a
// zeroing mask, the squares' adds masked too (a masked lane's x - mean is
// not 0). Each product is rounded (no FMA).
func genLNStats(g *gen) {
	g.Function("lnStats16Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(x *float32, stride int, n int, count float64, eps float64, mean *float64, inv *float64)")
	g.Pragma("noescape")
	g.Doc("lnStats16Asm writes the float64 mean and 1/sqrt(variance+eps) of 16 rows of n",
		"float32 values (row r at x[r*stride]; n >= 1, count = float64(n)) to mean[0..15]",
		"and inv[0..15], with internal/lnstats's order of sums.")
	strideB := g.Load("stride")
	g.SHLQ(operand.U8(2), strideB)
	n := g.Load("n")
	blocks, tailW := g.GP64(), g.GP64()
	g.MOVQ(n, blocks)
	g.SHRQ(operand.U8(5), blocks) // whole steps of 32 columns
	g.MOVQ(n, tailW)
	g.ANDQ(operand.U8(31), tailW)
	var kTail [4]reg.OpmaskVirtual // columns 8k.. of the last step
	kTail[0] = g.maskOf(tailW)
	for k := 1; k < 4; k++ {
		kTail[k] = g.K()
		g.KSHIFTRQ(operand.U8(8*k), kTail[0], kTail[k])
	}
	row, meanPtr, invPtr := g.Load("x"), g.Load("mean"), g.Load("inv")
	pairs := g.GP64()
	g.MOVQ(operand.U32(8), pairs)

	// pass runs add(r, acc, v, k) on the float64 columns of rows r = 0
	// and 1 of the pair at row, 8 at a time into that row's accumulator
	// k%4 (k the 8-column chunk of a step; mask nil, or the tail's), and
	// returns the accumulators: two rows' eight independent chains keep
	// the adders busy where one row's four would wait on latency.
	pass := func(add func(r int, acc, v reg.VecVirtual, mask reg.OpmaskVirtual)) [2][4]reg.VecVirtual {
		var acc [2][4]reg.VecVirtual
		for r := range acc {
			for k := range acc[r] {
				acc[r][k] = g.zeroZMM()
			}
		}
		col, left := g.GP64(), g.GP64()
		g.MOVQ(row, col)
		g.MOVQ(blocks, left)
		at := func(r, k int) operand.Mem {
			if r == 0 {
				return operand.Mem{Base: col, Disp: 32 * k}
			}
			return operand.Mem{Base: col, Index: strideB, Scale: 1, Disp: 32 * k}
		}
		loop, tail, done := g.NewLabel("lns_step"), g.NewLabel("lns_tail"), g.NewLabel("lns_done")
		g.TESTQ(left, left)
		g.JZ(operand.LabelRef(tail))
		g.Label(loop)
		for k := range 4 {
			for r := range acc {
				v := g.ZMM()
				g.VCVTPS2PD(at(r, k), v)
				add(r, acc[r][k], v, nil)
			}
		}
		g.ADDQ(operand.U8(128), col)
		g.DECQ(left)
		g.JNZ(operand.LabelRef(loop))
		g.Label(tail)
		g.TESTQ(tailW, tailW)
		g.JZ(operand.LabelRef(done))
		for k := range 4 {
			for r := range acc {
				v := g.ZMM()
				g.VCVTPS2PD_Z(at(r, k), kTail[k], v) // masked lanes: 0, no fault
				add(r, acc[r][k], v, kTail[k])
			}
		}
		g.Label(done)
		return acc
	}
	// combine returns, in the low lane of an xmm register, lnstats.Combine
	// of a row's accumulators.
	combine := func(acc [4]reg.VecVirtual) reg.VecVirtual {
		g.VADDPD(acc[1], acc[0], acc[0]) // s[l] + s[l+8]
		g.VADDPD(acc[3], acc[2], acc[2]) // s[l+16] + s[l+24]
		g.VADDPD(acc[2], acc[0], acc[0]) // a[l]
		h4 := g.YMM()
		g.VEXTRACTF64X4(operand.U8(1), acc[0], h4)
		g.VADDPD(h4, acc[0].AsY(), h4) // a[l] + a[l+4]
		h2 := g.XMM()
		g.VEXTRACTF128(operand.U8(1), h4, h2)
		g.VADDPD(h2, h4.AsX(), h2) // h4[l] + h4[l+2]
		h1 := g.XMM()
		g.VPERMILPD(operand.U8(1), h2, h1)
		g.VADDSD(h1, h2, h2)
		return h2
	}

	pairLoop := g.NewLabel("lns_pair")
	g.Label(pairLoop)
	sums := pass(func(_ int, acc, v reg.VecVirtual, _ reg.OpmaskVirtual) { g.VADDPD(v, acc, acc) })
	var zMean [2]reg.VecVirtual
	for r := range sums {
		mean := combine(sums[r])
		g.VDIVSD(g.ParamAddr("count"), mean, mean) // sum / count
		g.VMOVSD(mean, operand.Mem{Base: meanPtr, Disp: 8 * r})
		zMean[r] = g.ZMM()
		g.VBROADCASTSD(mean, zMean[r])
	}
	sqs := pass(func(r int, acc, v reg.VecVirtual, mask reg.OpmaskVirtual) {
		g.VSUBPD(zMean[r], v, v) // x - mean
		g.VMULPD(v, v, v)
		if mask == nil {
			g.VADDPD(v, acc, acc)
		} else {
			g.VADDPD(v, acc, mask, acc) // past the row's end: unchanged
		}
	})
	for r := range sqs {
		sq := combine(sqs[r])
		g.VDIVSD(g.ParamAddr("count"), sq, sq) // sq / count
		g.VADDSD(g.ParamAddr("eps"), sq, sq)
		g.VSQRTSD(sq, sq, sq)
		one := g.XMM()
		g.VMOVSD(g.consts.f64(1), one)
		g.VDIVSD(sq, one, one) // 1 / sqrt
		g.VMOVSD(one, operand.Mem{Base: invPtr, Disp: 8 * r})
	}
	g.ADDQ(operand.U8(16), meanPtr)
	g.ADDQ(operand.U8(16), invPtr)
	g.LEAQ(operand.Mem{Base: row, Index: strideB, Scale: 2}, row)
	g.DECQ(pairs)
	g.JNZ(operand.LabelRef(pairLoop))
	g.VZEROUPPER()
	g.RET()
}

// genLNNorm emits lnNormAsm: one row, y_j = ((x_j - mean) * inv) * gamma_j
// + beta_j in float32 (internal/lnstats's order), stored as f32 and/or
// quantised to u8 like qgemm's epilogue. One specialised loop per flag
// combination.
func genLNNorm(g *gen) {
	g.Function("lnNormAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(y *float32, q *uint8, x *float32, n int, meanHi float32, meanLo float32, inv float32, gamma *float32, beta *float32, invScale float32, zp int32, flags int)")
	g.Pragma("noescape")
	g.Doc("lnNormAsm normalises one row of n >= 1 values: y[j] = ((x[j]-meanHi-meanLo)*inv)*gamma[j] + beta[j]",
		"in float32, each operation rounded (internal/lnstats), stored to y (flags&2) and/or",
		"quantised to q (flags&4) as qgemm.QuantizeU8(y[j], invScale, zp); flags&1: beta is used.")
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
	st := g.rowStatsParams(g.broadcastParam)
	xp, gp := g.Load("x"), g.Load("gamma")
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
	rowSteps(g, "lnn", func(k reg.OpmaskVirtual) {
		y := g.affinePS(g.normPS(operand.Mem{Base: xp}, st, k), operand.Mem{Base: gp}, bp, k)
		if has(lnF32) {
			g.VMOVUPS(y, k, operand.Mem{Base: yp})
		}
		if has(lnU8) {
			quant.store(g, y, k, operand.Mem{Base: qp})
		}
	}, func() {
		for _, p := range []reg.GPVirtual{xp, gp, bp, yp} {
			if p != nil {
				g.ADDQ(operand.U8(64), p)
			}
		}
		if qp != nil {
			g.ADDQ(operand.U8(16), qp)
		}
	})
}

// rowSteps emits the loop of a LayerNorm normaliser over the n argument's
// columns, 16 a step: body on whole steps under an all-ones opmask, each
// followed by next (which moves the pointers on), then once on the last
// n%16 columns under the mask of their lanes (masked lanes are neither
// read, so they cannot fault, nor written).
func rowSteps(g *gen, prefix string, body func(k reg.OpmaskVirtual), next func()) {
	left := g.Load("n")
	kAll := g.K()
	g.KXNORW(kAll, kAll, kAll)
	loop, tail, done := g.NewLabel(prefix+"_loop"), g.NewLabel(prefix+"_tail"), g.NewLabel(prefix+"_done")
	g.Label(loop)
	g.CMPQ(left, operand.U8(16))
	g.JL(operand.LabelRef(tail))
	body(kAll)
	next()
	g.SUBQ(operand.U8(16), left)
	g.JMP(operand.LabelRef(loop))
	g.Label(tail)
	g.TESTQ(left, left)
	g.JZ(operand.LabelRef(done))
	body(g.maskOf(left))
	g.Label(done)
	g.VZEROUPPER()
	g.RET()
}

// rowStats are a normaliser's broadcast lnstats.Row32.
type rowStats struct{ meanHi, meanLo, inv reg.VecVirtual }

// rowStatsParams broadcasts the meanHi, meanLo and inv arguments with
// bcast (broadcastParam or ymmParam).
func (g *gen) rowStatsParams(bcast func(name string) reg.VecVirtual) rowStats {
	return rowStats{bcast("meanHi"), bcast("meanLo"), bcast("inv")}
}

// normPS returns z = ((x - meanHi) - meanLo) * inv for the 16 floats at x
// under k (other lanes 0), each operation rounded (lnstats.Row32's
// Normalize).
func (g *gen) normPS(x operand.Mem, st rowStats, k reg.OpmaskVirtual) reg.VecVirtual {
	z := g.ZMM()
	g.VMOVUPS_Z(x, k, z)
	g.VSUBPS(st.meanHi, z, z) // x - meanHi
	g.VSUBPS(st.meanLo, z, z) // - meanLo
	g.VMULPS(st.inv, z, z)
	return z
}

// affinePS returns z*gamma + beta (lnstats.Affine; lnstats.Scale when
// beta is nil), gamma and beta the 16 floats at their addresses read
// under k (other lanes 0).
func (g *gen) affinePS(z reg.VecVirtual, gamma operand.Mem, beta reg.GPVirtual, k reg.OpmaskVirtual) reg.VecVirtual {
	v := g.ZMM()
	g.VMULPS_Z(gamma, z, k, v) // z * gamma
	if beta != nil {
		g.VADDPS_Z(operand.Mem{Base: beta}, v, k, v)
	}
	return v
}

// genLNNormDual emits lnNormDualAsm, the row kernel of nn.LayerNormDual:
// z_j = (x_j - mean) * inv once, then y_j = z_j*gamma_j + beta_j stored as
// f32 and z_j*gammaQ_j + betaQ_j quantised to u8, in float32 with every
// operation rounded (lnNormalizeDualGo's order).
// One loop with betas, one without.
func genLNNormDual(g *gen) {
	g.Function("lnNormDualAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(y *float32, q *uint8, x *float32, n int, meanHi float32, meanLo float32, inv float32, gamma *float32, beta *float32, gammaQ *float32, betaQ *float32, invScale float32, zp int32, flags int)")
	g.Pragma("noescape")
	g.Doc("lnNormDualAsm normalises one row of n >= 1 values once, z[j] = ((x[j]-meanHi)-meanLo)*inv, and stores",
		"y[j] = z[j]*gamma[j] + beta[j] and q[j] = qgemm.QuantizeU8(z[j]*gammaQ[j] + betaQ[j], invScale, zp),",
		"in float32 with each operation rounded (internal/lnstats); flags&1: beta and betaQ are used",
		"(else both are ignored).")
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
	st := g.rowStatsParams(g.broadcastParam)
	xp := g.Load("x")
	yp, qp := g.Load("y"), g.Load("q")
	gp, gqp := g.Load("gamma"), g.Load("gammaQ")
	var bp, bqp reg.GPVirtual
	if beta {
		bp, bqp = g.Load("beta"), g.Load("betaQ")
	}
	quant := g.newQuantizer()
	rowSteps(g, "lnd", func(k reg.OpmaskVirtual) {
		z := g.normPS(operand.Mem{Base: xp}, st, k) // shared by both outputs
		y := g.affinePS(z, operand.Mem{Base: gp}, bp, k)
		yq := g.affinePS(z, operand.Mem{Base: gqp}, bqp, k)
		g.VMOVUPS(y, k, operand.Mem{Base: yp})
		quant.store(g, yq, k, operand.Mem{Base: qp})
	}, func() {
		ptrs := []reg.GPVirtual{xp, yp, gp, gqp}
		if beta {
			ptrs = append(ptrs, bp, bqp)
		}
		for _, p := range ptrs {
			g.ADDQ(operand.U8(64), p)
		}
		g.ADDQ(operand.U8(16), qp)
	})
}

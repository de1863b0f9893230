package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/expavo"
	"github.com/sqc-dev/sqc/asmgen/geluavo"
	"github.com/sqc-dev/sqc/internal/expf"
)

// The AVX-512 epilogue mirrors runtime/qgemm/epilogue.go operation for
// operation (same order, same constants; each activation as Act.Apply in
// runtime/qgemm/act.go computes it), so that its output has the same bits
// as epilogueGo. Keep the two in step; the runtime test
// TestEpilogueAsmMatchesGo compares them.

// Feature bits of the epilogue's flags argument
// (runtime/qgemm/epilogue_amd64.go); the bits from epiActShift up hold the
// activation's act code.
const (
	epiColSum       = 1 << iota // subtract aZero*colSum
	epiBias                     // add bias
	epiResidual                 // add the residual
	epiU8                       // quantize to u8 (else store f32)
	epiRow                      // per-row zero point (replacing aZero) and scale: dynamic quantisation
	epiResidualMul              // multiply by the residual instead of adding it (with epiResidual only)
	epiFeatureCount = iota

	epiActShift = 8
)

// The act codes: runtime/qgemm's Act values (act.go). A code no
// epilogueActs entry serves makes epilogueAVX512Asm return false, and the
// caller runs the Go epilogue.
const (
	actNone = iota
	actGelu
	actRelu
	actGeluTanh
	actGeluU8
	actGeluTanhU8
	actSilu
)

// epiMaxUnroll is the most 16-column chunks per column strip (at most 4:
// their opmasks are cut from one 64-bit mask).
const epiMaxUnroll = 4

// epiAct is an activation the assembly applies, with loops of its own for
// every feature set.
type epiAct struct {
	name  string // for labels
	codes []int  // the act codes it serves
	// unroll is the number of 16-column chunks per column strip: the
	// strip's per-column vectors (-aZero*colSum or colSum, scale, bias: up
	// to 3 zmm per chunk) stay in registers across the rows, next to what
	// the activation keeps there.
	unroll int
	// geluForms are the GELU's forms (coefficient tables) of the codes,
	// in their order; nil for an activation that is no GELU.
	geluForms []geluavo.Form
	// u8Only: the activation has loops for u8 outputs only (GEMM takes it
	// with no other); for an f32 output the assembly returns false.
	u8Only bool
	// prepare emits, before the loops, what the activation keeps in
	// registers, and returns what applies it to a row's chunks in place
	// (zero holds +0); nil for none.
	prepare func(g *gen, geluTable geluavo.Table, act epiAct) func(g *gen, vs []reg.VecVirtual, zero reg.VecVirtual)
	// avx2 applies an activation that is no GELU to the 8 lanes of v in
	// the AVX2 loops and returns the result (zero holds +0); GELU's AVX2
	// form comes from its tables.
	avx2 func(g *gen, v, zero reg.VecVirtual) reg.VecVirtual
}

// epilogueActs are the activations with assembly loops.
var epilogueActs = []epiAct{
	{name: "none", codes: []int{actNone}, unroll: epiMaxUnroll},
	// GELU's 6 coefficient tables and its temporaries limit it to 2 chunks
	// (the chunks of successive rows are independent, so out-of-order
	// execution overlaps their GELU chains). Its erf and tanh forms differ
	// in their tables only, so they share the loops.
	{name: "gelu", codes: []int{actGelu, actGeluTanh}, geluForms: []geluavo.Form{geluavo.Erf, geluavo.Tanh}, unroll: 2, prepare: prepareGelu},
	// The GELUs to u8 precision: the same loops with the short tables
	// (internal/gelu's ShortDegree), for the u8 outputs they are made for.
	{name: "gelu_u8", codes: []int{actGeluU8, actGeluTanhU8}, geluForms: []geluavo.Form{geluavo.ErfShort, geluavo.TanhShort}, u8Only: true, unroll: 2, prepare: prepareGelu},
	{name: "relu", codes: []int{actRelu}, unroll: epiMaxUnroll, prepare: prepareRelu, avx2: epilogueReluAVX2},
	// SiLU's exp takes 6 temporaries per chunk beside its constants, as
	// GELU's tables do: 2 chunks.
	{name: "silu", codes: []int{actSilu}, unroll: 2, prepare: prepareSilu, avx2: epilogueSiluAVX2},
}

const epilogueSig = "func(c *int32, ldc int, m int, n int, colSum *int32, aZero int32, rowZero *int32, scale *float32, rowScale *float32, bias *float32, res *float32, resStride int, outF32 *float32, outU8 *uint8, outStride int, invScale float32, outZero int32, clampLo float32, clampHi float32, flags int) bool"

// genEpilogue emits epilogueAVX512Asm: one specialised loop per activation
// and feature set, chosen on entry by comparisons of the act code and a
// binary tree of feature tests.
func genEpilogue(g *gen) {
	geluTable := geluavo.NewTable(g.Context, "epilogueGelu", geluavo.Erf, geluavo.Tanh, geluavo.ErfShort, geluavo.TanhShort)
	g.exp = expavo.NewTable(g.Context, "epilogueExp")

	// colMasks[i] = 1<<i - 1: the opmask bits of a step with i columns left.
	colMasks := g.StaticGlobal("epilogueColMasks")
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	for i := 0; i <= 16*epiMaxUnroll; i++ {
		g.AddDatum(8*i, operand.U64(uint64(1)<<i-1)) // i = 64: wraps to all ones
	}

	g.Function("epilogueAVX512Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr(epilogueSig)
	g.Pragma("noescape")
	g.Doc("epilogueAVX512Asm applies the epilogue to an m x n block (m, n >= 1) of int32",
		"accumulators c (row stride ldc elements) and returns true, or returns false",
		"having done nothing when it has no loop for the activation. Pointers are at",
		"column 0 of the block (row 0 for res, the output, rowZero and rowScale);",
		"strides are in elements. flags: 1 colSum, 2 bias, 4 residual, 8 u8 output",
		"(else f32), 16 per-row zero point rowZero[i] (replacing aZero) and scale",
		"rowScale[i], 32 multiply by the residual (with 4); bits 8 and up, the Act. u8 output clamps v*invScale to",
		"[clampLo, clampHi] = [-outZero, 255-outZero] (the AVX-512 loops clamp at clampLo",
		"and saturate the codes at 255).")
	epilogueActDispatch(g, "epi", func(act epiAct, set int) {
		epilogueVariant(g, geluTable, colMasks, act, set)
	})

	genEpilogueAVX2(g, geluTable)
}

// epilogueActDispatch emits an epilogue function's body after its
// signature: the choice of the activation by the act code of the flags
// argument, and under each activation the tests of the feature bits and,
// for every feature set the activation has loops for, the loops variant
// emits. The function returns false, having done nothing, for an act code
// no epilogueActs entry serves (or an f32 output with a u8Only one), and
// true after the loops. prefix begins its labels.
func epilogueActDispatch(g *gen, prefix string, variant func(act epiAct, set int)) {
	flags := g.Load("flags")
	code := g.GP64()
	g.MOVQ(flags, code)
	g.SHRQ(operand.U8(epiActShift), code)
	entries := make([]string, len(epilogueActs))
	for a, act := range epilogueActs {
		entries[a] = g.NewLabel(prefix + "_" + act.name)
		for _, c := range act.codes {
			g.CMPQ(code, operand.U32(c))
			g.JEQ(operand.LabelRef(entries[a]))
		}
	}
	noLoop, done := g.NewLabel(prefix+"_none"), g.NewLabel(prefix+"_done")
	g.Label(noLoop)
	ok := g.GP8()
	g.XORB(ok, ok) // no loop for this activation
	g.Store(ok, g.ReturnIndex(0))
	g.RET()
	for a, act := range epilogueActs {
		g.Label(entries[a])
		set := 0
		if act.u8Only {
			g.TESTQ(operand.U32(epiU8), flags)
			g.JZ(operand.LabelRef(noLoop))
			set = epiU8
		}
		epilogueDispatch(g, flags, operand.LabelRef(done), 0, set, set, func(set int) { variant(act, set) })
	}
	g.Label(done)
	g.VZEROUPPER()
	g.MOVB(operand.U8(1), ok)
	g.Store(ok, g.ReturnIndex(0))
	g.RET()
}

// epilogueDispatch emits the tests of feature bits bit and up, except the
// fixed ones (set has them already), and under them, for each feature set
// that extends set, the loops variant emits.
func epilogueDispatch(g *gen, flags reg.GPVirtual, done operand.LabelRef, bit, set, fixed int, variant func(set int)) {
	switch {
	case bit == epiFeatureCount:
		variant(set)
		g.JMP(done)
		return
	case fixed&(1<<bit) != 0, 1<<bit == epiResidualMul && set&epiResidual == 0:
		// Fixed, or a multiply with no residual: no test, no loops.
		epilogueDispatch(g, flags, done, bit+1, set, fixed, variant)
		return
	}
	on := g.NewLabel("epi_flag")
	g.TESTQ(operand.U32(1<<bit), flags)
	g.JNZ(operand.LabelRef(on))
	epilogueDispatch(g, flags, done, bit+1, set, fixed, variant)
	g.Label(on)
	epilogueDispatch(g, flags, done, bit+1, set|1<<bit, fixed, variant)
}

// prepareGelu loads the coefficient tables of the act's GELU form (one
// per act code, act.geluForms) and returns GELU, emitted interleaved step
// by step so that the chunks' chains overlap.
func prepareGelu(g *gen, geluTable geluavo.Table, act epiAct) func(g *gen, vs []reg.VecVirtual, zero reg.VecVirtual) {
	coeffs, degree := geluCoeffs(g, geluTable, act)
	eval := geluTable.LoadFrom(g.Context, operand.Mem{Base: coeffs}, degree)
	return func(g *gen, vs []reg.VecVirtual, zero reg.VecVirtual) {
		copy(vs, eval.Emit(g.Context, vs, zero))
	}
}

// geluCoeffs emits the choice, by the act code of the flags argument, of
// the coefficient tables of act's GELU form into a new register, and
// returns it with the forms' degree (one for all of act's forms, which
// share its loops).
func geluCoeffs(g *gen, geluTable geluavo.Table, act epiAct) (reg.GPVirtual, int) {
	forms := act.geluForms
	coeffs := g.GP64()
	g.LEAQ(geluTable.Coeffs(forms[0]), coeffs)
	if len(forms) > 1 {
		code := g.Load("flags")
		g.SHRQ(operand.U8(epiActShift), code)
		for i, f := range forms[1:] {
			if f.Degree() != forms[0].Degree() {
				panic("epilogue " + act.name + ": GELU forms of different degrees share loops")
			}
			alt := g.GP64()
			g.LEAQ(geluTable.Coeffs(f), alt)
			g.CMPQ(code, operand.U32(act.codes[i+1]))
			g.CMOVQEQ(alt, coeffs)
		}
	}
	return coeffs, forms[0].Degree()
}

// prepareRelu returns ReLU, which keeps nothing in registers.
func prepareRelu(*gen, geluavo.Table, epiAct) func(g *gen, vs []reg.VecVirtual, zero reg.VecVirtual) {
	return func(g *gen, vs []reg.VecVirtual, zero reg.VecVirtual) {
		for _, v := range vs {
			epilogueRelu(g, v, zero)
		}
	}
}

// prepareSilu broadcasts Exp's floor into a register and returns SiLU
// (asmgen/expavo), emitted interleaved step by step.
func prepareSilu(g *gen, _ geluavo.Table, _ epiAct) func(g *gen, vs []reg.VecVirtual, zero reg.VecVirtual) {
	lo := g.ZMM()
	g.VBROADCASTSS(g.exp.F32(expf.Min), lo)
	return func(g *gen, vs []reg.VecVirtual, zero reg.VecVirtual) {
		copy(vs, expavo.SiluZMM(g.Context, g.exp, vs, lo, zero))
	}
}

// epilogueSiluAVX2 is SiLU's AVX2 form.
func epilogueSiluAVX2(g *gen, v, zero reg.VecVirtual) reg.VecVirtual {
	return expavo.SiluYMM(g.Context, g.exp, v, zero)
}

// epilogueVariant emits the loops for act and one feature set: column
// strips of act.unroll chunks of 16 columns outermost, rows inside, so
// that each strip's per-column vectors are loaded (and aZero*colSum
// computed) once per strip instead of once per row. Every element still
// goes through epilogueGo's operations in epilogueGo's order: only the
// schedule differs. Every chunk runs under its opmask (all ones, the tail
// mask, or empty past column n), so loads never touch memory past column n.
func epilogueVariant(g *gen, geluTable geluavo.Table, colMasks operand.Mem, act epiAct, flags int) {
	has := func(f int) bool { return flags&f != 0 }
	unroll := act.unroll

	// Row strides in bytes, in registers for the whole call.
	stride := func(name string, shift uint8) reg.GPVirtual {
		s := g.Load(name)
		if shift > 0 {
			g.SHLQ(operand.U8(shift), s)
		}
		return s
	}
	ldc := stride("ldc", 2)
	var resStride, outStride, rowZero, rowScale reg.GPVirtual
	if has(epiResidual) {
		resStride = stride("resStride", 2)
	}
	if has(epiU8) {
		outStride = stride("outStride", 0)
	} else {
		outStride = stride("outStride", 2)
	}
	if has(epiRow) {
		rowScale = g.Load("rowScale")
		if has(epiColSum) {
			rowZero = g.Load("rowZero")
		}
	}
	var zAZ, zInv, zZP, zLo, zZero reg.VecVirtual
	if has(epiColSum) {
		zAZ = g.ZMM()
		if !has(epiRow) {
			g.VPBROADCASTD(g.Load32("aZero"), zAZ)
		}
	}
	if has(epiU8) {
		bcast := func(name string) reg.VecVirtual {
			z := g.ZMM()
			g.VBROADCASTSS(g.ParamAddr(name), z)
			return z
		}
		zInv, zLo = bcast("invScale"), bcast("clampLo")
		zZP = g.ZMM()
		g.VPBROADCASTD(g.Load32("outZero"), zZP)
	}
	if act.prepare != nil || (has(epiColSum) && !has(epiRow)) {
		zZero = g.ZMM()
		g.ZeroVec(zZero)
	}
	var apply func(g *gen, vs []reg.VecVirtual, zero reg.VecVirtual)
	if act.prepare != nil {
		apply = act.prepare(g, geluTable, act)
	}

	stripLoop, rowLoop := g.NewLabel("epi_strip"), g.NewLabel("epi_row")
	j := g.GP64()
	g.XORQ(j, j)
	g.Label(stripLoop)
	// The strip's opmasks come from one 64-bit mask of the
	// min(n-j, 16*unroll) low bits: chunks past column n get an empty mask.
	tab := g.GP64()
	g.LEAQ(colMasks, tab) // RIP-relative addresses take no index
	left := g.GP64()
	g.MOVQ(g.ParamAddr("n"), left)
	g.SUBQ(j, left)
	width := g.GP64()
	g.MOVQ(operand.U32(16*unroll), width)
	g.CMPQ(left, width)
	g.CMOVQLT(left, width)
	kAll := g.K()
	g.KMOVQ(operand.Mem{Base: tab, Index: width, Scale: 8}, kAll)
	ks := make([]reg.OpmaskVirtual, unroll)
	for u := range ks {
		ks[u] = kAll
		if u > 0 {
			ks[u] = g.K()
			g.KSHIFTRQ(operand.U8(16*u), kAll, ks[u])
		}
	}

	// The strip's per-column vectors.
	cols := make([]epiCols, unroll)
	colVec := func(param string, u int, f func(m, k, z operand.Op)) reg.VecVirtual {
		p := g.Load(param)
		z := g.ZMM()
		f(operand.Mem{Base: p, Index: j, Scale: 4, Disp: 64 * u}, ks[u], z)
		return z
	}
	for u := range cols {
		if has(epiColSum) {
			cols[u].colSum = colVec("colSum", u, g.VMOVDQU32_Z)
			if !has(epiRow) {
				// -(aZero*colSum): acc - aZero*colSum is acc + that, the
				// same bits in wrapping int32 arithmetic.
				g.VPMULLD(cols[u].colSum, zAZ, cols[u].colSum)
				g.VPSUBD(cols[u].colSum, zZero, cols[u].colSum)
			}
		}
		cols[u].scale = colVec("scale", u, g.VMOVUPS_Z)
		if has(epiBias) {
			cols[u].bias = colVec("bias", u, g.VMOVUPS_Z)
		}
	}

	// Row pointers at column 0 of the strip's first row; i counts rows.
	cRow := g.Load("c")
	var resRow, outRow reg.GPVirtual
	if has(epiResidual) {
		resRow = g.Load("res")
	}
	if has(epiU8) {
		outRow = g.Load("outU8")
	} else {
		outRow = g.Load("outF32")
	}
	i := g.GP64()
	g.XORQ(i, i)

	g.Label(rowLoop)
	if has(epiRow) && has(epiColSum) {
		g.VPBROADCASTD(operand.Mem{Base: rowZero, Index: i, Scale: 4}, zAZ) // this row's zero point
	}
	r := epiRegs{
		j: j, i: i, cRow: cRow, rowScale: rowScale, resRow: resRow, outRow: outRow,
		zAZ: zAZ, zInv: zInv, zZP: zZP, zLo: zLo,
	}
	vs := make([]reg.VecVirtual, unroll)
	for u := range vs {
		vs[u] = epilogueLoad(g, flags, u, ks[u], r, cols[u])
	}
	if apply != nil {
		apply(g, vs, zZero)
	}
	for u := range vs {
		epilogueStore(g, flags, u, ks[u], r, vs[u])
	}

	// Next row.
	g.ADDQ(ldc, cRow)
	if has(epiResidual) {
		g.ADDQ(resStride, resRow)
	}
	g.ADDQ(outStride, outRow)
	g.INCQ(i)
	g.CMPQ(i, g.ParamAddr("m"))
	g.JL(operand.LabelRef(rowLoop))

	// Next strip.
	g.ADDQ(operand.U8(16*unroll), j)
	g.CMPQ(j, g.ParamAddr("n"))
	g.JL(operand.LabelRef(stripLoop))
}

// epiCols are one chunk's per-column vectors for a strip.
type epiCols struct {
	colSum reg.VecVirtual // -aZero*colSum, or colSum with per-row zero points
	scale  reg.VecVirtual
	bias   reg.VecVirtual
}

// epiRegs are the registers an epilogue chunk reads.
type epiRegs struct {
	j, i, cRow, rowScale, resRow, outRow reg.GPVirtual
	zAZ, zInv, zZP, zLo                  reg.VecVirtual
}

// col4 addresses 4-byte column j+16u of the row at base.
func (r epiRegs) col4(base reg.GPVirtual, u int) operand.Mem {
	return operand.Mem{Base: base, Index: r.j, Scale: 4, Disp: 64 * u}
}

// epilogueLoad emits the part of chunk u (columns j+16u .. j+16u+15,
// under opmask k) before the activation and returns v.
func epilogueLoad(g *gen, flags, u int, k reg.OpmaskVirtual, r epiRegs, c epiCols) reg.VecVirtual {
	has := func(f int) bool { return flags&f != 0 }
	acc := g.ZMM()
	switch {
	case has(epiColSum) && !has(epiRow):
		g.VPADDD_Z(r.col4(r.cRow, u), c.colSum, k, acc) // acc + -(aZero*colSum)
	case has(epiColSum):
		cs := g.ZMM()
		g.VPMULLD(c.colSum, r.zAZ, cs)
		g.VMOVDQU32_Z(r.col4(r.cRow, u), k, acc)
		g.VPSUBD(cs, acc, acc) // acc - rowZero*colSum
	default:
		g.VMOVDQU32_Z(r.col4(r.cRow, u), k, acc)
	}
	v := g.ZMM()
	g.VCVTDQ2PS(acc, v)
	g.VMULPS(c.scale, v, v)
	if has(epiRow) {
		g.VMULPS_BCST(operand.Mem{Base: r.rowScale, Index: r.i, Scale: 4}, v, v) // v * rowScale[i]
	}
	if has(epiBias) {
		g.VADDPS(c.bias, v, v)
	}
	return v
}

// cmpNLEUQ is VCMPPS's "not less than or equal, unordered, quiet"
// predicate: true where src1 > src2 or either is NaN.
const cmpNLEUQ = 0x16

// epilogueRelu emits qgemm.Relu (act.go) on v in place: v where v > 0 or
// v is NaN, else +0 (zero holds +0). A lone VMAXPS cannot do it: it
// returns its second operand both for NaN and for two zeros, so it either
// drops NaN or keeps -0.
func epilogueRelu(g *gen, v, zero reg.VecVirtual) {
	k := g.K()
	g.VCMPPS(operand.U8(cmpNLEUQ), zero, v, k) // k = !(v <= 0)
	g.VMOVAPS_Z(v, k, v)
}

// epilogueStore emits the part of chunk u after the activation.
func epilogueStore(g *gen, flags, u int, k reg.OpmaskVirtual, r epiRegs, v reg.VecVirtual) {
	has := func(f int) bool { return flags&f != 0 }
	if has(epiResidual) {
		rz := g.ZMM()
		g.VMOVUPS_Z(r.col4(r.resRow, u), k, rz)
		if has(epiResidualMul) {
			g.VMULPS(rz, v, v)
		} else {
			g.VADDPS(rz, v, v)
		}
	}
	if has(epiU8) {
		// quantizeU8 clamps v*invScale to [-quantClamp, quantClamp], rounds,
		// adds the zero point and clamps to [0, 255]. Rounding to even is
		// monotonic and keeps integers, so clamping to the integer clampLo
		// = -outZero (inside [-quantClamp, quantClamp] with clampHi =
		// 255-outZero: epilogueAVX512 checks) before rounding gives the same
		// q where it should be 0, NaN included (it goes to clampLo), and q
		// >= 0 elsewhere. The clamp at 255 is VPMOVUSDB's unsigned
		// saturation: a q past 255 stays past it, or, where v*invScale is
		// past 2^31 (VCVTPS2DQ gives 0x80000000) or the add wraps, has bit
		// 31 set, which is past 255 unsigned too. (clampHi is then unused:
		// one operation fewer per 16 values, and one register free.)
		t := g.ZMM()
		g.VMULPS(r.zInv, v, t)
		g.VMAXPS(r.zLo, t, t) // maxps(t, clampLo)
		q := g.ZMM()
		g.VCVTPS2DQ(t, q) // round to nearest even (MXCSR default)
		g.VPADDD(r.zZP, q, q)
		g.VPMOVUSDB(q, k, operand.Mem{Base: r.outRow, Index: r.j, Scale: 1, Disp: 16 * u})
	} else {
		g.VMOVUPS(v, k, r.col4(r.outRow, u))
	}
}

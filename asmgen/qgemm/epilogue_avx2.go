package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/geluavo"
)

// The AVX2 epilogue (AVX2 + FMA3, for CPUs without AVX-512) is the AVX-512
// epilogue's operations on 8 columns per step: the same bits as
// epilogueGo, which TestEpilogueAsmMatchesGo checks for both. It has no
// opmasks, so it only takes blocks whose width is a multiple of 8; its Go
// wrapper (runtime/qgemm/epilogue_amd64.go) hands the last n%8 columns to
// epilogueGo. With no opmask loads to keep per-column vectors from
// reading past column n, and 16 registers instead of 32, it reads scale,
// bias and colSum as memory operands (L1 hits after the first row) and
// walks rows outermost.

const epilogueAVX2Sig = "func(c *int32, ldc int, m int, n int, colSum *int32, aZero int32, rowZero *int32, scale *float32, rowScale *float32, bias *float32, res *float32, resStride int, outF32 *float32, outU8 *uint8, outStride int, invScale float32, outZero int32, clampLo float32, clampHi float32, flags int) bool"

// genEpilogueAVX2 emits epilogueAVX2Asm: one loop per activation and
// feature set, dispatched as epilogueAVX512Asm's are.
func genEpilogueAVX2(g *gen, geluTable geluavo.Table) {
	g.Function("epilogueAVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr(epilogueAVX2Sig)
	g.Pragma("noescape")
	g.Doc("epilogueAVX2Asm is epilogueAVX512Asm (same arguments and result) for",
		"AVX2 + FMA3: n must be a multiple of 8.")
	frame := g.AllocLocal(4 * 32) // 4 broadcast ymm constants, shared by the variants
	epilogueActDispatch(g, "epi2", func(act epiAct, set int) {
		epilogueVariantAVX2(g, geluTable, frame, act, set)
	})
}

// epilogueReluAVX2 is qgemm.Relu's AVX2 form: v where !(v <= 0) (true
// for NaN), else +0.
func epilogueReluAVX2(g *gen, v, zero reg.VecVirtual) reg.VecVirtual {
	keep := g.YMM()
	g.VCMPPS(operand.U8(cmpNLEUQ), zero, v, keep)
	g.VANDPS(keep, v, v)
	return v
}

// epilogueVariantAVX2 emits the loops for act and one feature set: rows
// outermost, 8 columns per step, each element through epilogueGo's
// operations in epilogueGo's order.
func epilogueVariantAVX2(g *gen, geluTable geluavo.Table, frame operand.Mem, act epiAct, flags int) {
	has := func(f int) bool { return flags&f != 0 }
	bcast := func(name string) reg.VecVirtual {
		y := g.YMM()
		g.VBROADCASTSS(g.ParamAddr(name), y)
		return y
	}
	var yAZ, yZero reg.VecVirtual
	if has(epiColSum) && !has(epiRow) {
		yAZ = bcast("aZero") // the int32 bits, broadcast as they are
	}
	// The u8 quantisation's four constants are broadcast into frame and
	// read as memory operands (L1 hits): GELU's temporaries and the
	// per-row registers leave no room for them in the 16 ymm registers.
	var mInv, mLo, mHi, mZP operand.Mem
	if has(epiU8) {
		for k, name := range []string{"invScale", "clampLo", "clampHi", "outZero"} {
			g.VMOVUPS(bcast(name), frame.Offset(32*k))
		}
		mInv, mLo, mHi, mZP = frame, frame.Offset(32), frame.Offset(64), frame.Offset(96)
	}
	var gelu *geluavo.EvalAVX2
	if act.geluForms != nil {
		coeffs, degree := geluCoeffs(g, geluTable, act)
		gelu = geluTable.LoadAVX2(g.Context, operand.Mem{Base: coeffs}, degree)
	}
	if act.prepare != nil {
		yZero = g.YMM()
		g.ZeroVec(yZero)
	}

	// Row strides in bytes.
	stride := func(name string, shift uint8) reg.GPVirtual {
		s := g.Load(name)
		if shift > 0 {
			g.SHLQ(operand.U8(shift), s)
		}
		return s
	}
	ldc := stride("ldc", 2)
	var resStride, rowZero, rowScale, resRow reg.GPVirtual
	if has(epiResidual) {
		resStride = stride("resStride", 2)
		resRow = g.Load("res")
	}
	outStride, outRow := stride("outStride", 2), g.Load("outF32")
	if has(epiU8) {
		outStride, outRow = stride("outStride", 0), g.Load("outU8")
	}
	if has(epiRow) {
		rowScale = g.Load("rowScale")
		if has(epiColSum) {
			rowZero = g.Load("rowZero")
		}
	}
	scale := g.Load("scale")
	var colSum, bias reg.GPVirtual
	if has(epiColSum) {
		colSum = g.Load("colSum")
	}
	if has(epiBias) {
		bias = g.Load("bias")
	}
	n := g.Load("n")
	cRow := g.Load("c")
	i := g.GP64()
	g.XORQ(i, i)

	rowLoop, colLoop := g.NewLabel("epi2_row"), g.NewLabel("epi2_col")
	g.Label(rowLoop)
	var yRowScale reg.VecVirtual
	if has(epiRow) {
		yRowScale = g.YMM()
		g.VBROADCASTSS(operand.Mem{Base: rowScale, Index: i, Scale: 4}, yRowScale)
		if has(epiColSum) {
			yAZ = g.YMM()
			g.VPBROADCASTD(operand.Mem{Base: rowZero, Index: i, Scale: 4}, yAZ) // this row's zero point
		}
	}
	j := g.GP64()
	g.XORQ(j, j)
	g.Label(colLoop)
	col4 := func(base reg.GPVirtual) operand.Mem { return operand.Mem{Base: base, Index: j, Scale: 4} }

	acc := g.YMM()
	g.VMOVDQU(col4(cRow), acc)
	if has(epiColSum) {
		cs := g.YMM()
		g.VPMULLD(col4(colSum), yAZ, cs)
		g.VPSUBD(cs, acc, acc) // acc - zeroPoint*colSum, wrapping as in Go
	}
	v := g.YMM()
	g.VCVTDQ2PS(acc, v)
	g.VMULPS(col4(scale), v, v)
	if has(epiRow) {
		g.VMULPS(yRowScale, v, v)
	}
	if has(epiBias) {
		g.VADDPS(col4(bias), v, v)
	}
	switch {
	case gelu != nil:
		v = gelu.Emit(g.Context, v, yZero)
	case act.avx2 != nil:
		v = act.avx2(g, v, yZero)
	}
	if has(epiResidual) {
		if has(epiResidualMul) {
			g.VMULPS(col4(resRow), v, v)
		} else {
			g.VADDPS(col4(resRow), v, v)
		}
	}
	if has(epiU8) {
		// As epilogueStore: clamp to [clampLo, clampHi], round to even, add
		// the zero point; the lanes are then in [0, 255], so the
		// saturating packs only narrow them. VPACKUSDW works within 128-bit
		// lanes, hence the extract of the upper 4 lanes first.
		t := g.YMM()
		g.VMULPS(mInv, v, t)
		g.VMAXPS(mLo, t, t) // maxps(t, clampLo): NaN gives clampLo
		g.VMINPS(mHi, t, t)
		q := g.YMM()
		g.VCVTPS2DQ(t, q)
		g.VPADDD(mZP, q, q)
		hi := g.XMM()
		g.VEXTRACTI128(operand.U8(1), q, hi)
		lo := q.AsX()
		g.VPACKUSDW(hi, lo, lo) // 8 words
		g.VPACKUSWB(lo, lo, lo) // 8 bytes, twice
		g.VMOVQ(lo, operand.Mem{Base: outRow, Index: j, Scale: 1})
	} else {
		g.VMOVUPS(v, col4(outRow))
	}
	g.ADDQ(operand.U8(8), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(colLoop))

	// Next row.
	g.ADDQ(ldc, cRow)
	if has(epiResidual) {
		g.ADDQ(resStride, resRow)
	}
	g.ADDQ(outStride, outRow)
	g.INCQ(i)
	g.CMPQ(i, g.ParamAddr("m"))
	g.JL(operand.LabelRef(rowLoop))
}

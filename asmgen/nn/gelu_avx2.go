package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"

	"github.com/sqc-dev/sqc/asmgen/geluavo"
)

// genGeluAVX2 emits geluAVX2Asm and geluTanhAVX2Asm, the AVX2+FMA3 forms
// of the standalone GELUs for CPUs without AVX-512, on table (genGelu's).
func genGeluAVX2(g *gen, table geluavo.Table) {
	genGeluFormAVX2(g, table, geluavo.Erf, "geluAVX2Asm", "gelu.Gelu")
	genGeluFormAVX2(g, table, geluavo.Tanh, "geluTanhAVX2Asm", "gelu.GeluTanh")
}

// genGeluFormAVX2 emits the function name applying the GELU of form f to
// 8 floats per step (ref is its Go reference, for the doc comment). With
// no opmasks it takes whole groups of 8; its Go wrapper does the rest.
// One group per iteration: out-of-order execution overlaps the chains of
// successive groups, and two in flight would need more than 16 ymm.
func genGeluFormAVX2(g *gen, table geluavo.Table, f geluavo.Form, name, ref string) {
	g.Function(name)
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *float32, src *float32, n int)")
	g.Pragma("noescape")
	g.Doc(name+" sets dst[i] = "+ref+"(src[i]) for i < n (n >= 8, a multiple of 8);",
		"dst may be src.")
	dst, src, n := g.Load("dst"), g.Load("src"), g.Load("n")
	zero := g.YMM()
	g.ZeroVec(zero)
	eval := table.LoadAVX2(g.Context, table.Coeffs(f), f.Degree())
	j := g.GP64()
	g.XORQ(j, j)
	loop := g.NewLabel("gelu2_loop")
	g.Label(loop)
	x := g.YMM()
	g.VMOVUPS(operand.Mem{Base: src, Index: j, Scale: 4}, x)
	g.VMOVUPS(eval.Emit(g.Context, x, zero), operand.Mem{Base: dst, Index: j, Scale: 4})
	g.ADDQ(operand.U8(8), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// unaryChunks 16-float chunks go through an elementwise activation (GELU,
// SiLU) interleaved per step, so that their dependency chains overlap.
const unaryChunks = 3

// genUnary emits name, dst[i] = f(src[i]) for i < n (n >= 1; dst may be
// src) with AVX-512, unaryChunks chunks per step under opmasks. setup
// emits what f keeps in registers (zero holds +0) and returns f, applied
// to the chunks interleaved; ref names f's Go form for the doc comment,
// label the loop.
func genUnary(g *gen, name, ref, label string, setup func(zero reg.VecVirtual) func(xs []reg.VecVirtual) []reg.VecVirtual) {
	g.Function(name)
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *float32, src *float32, n int)")
	g.Pragma("noescape")
	g.Doc(name + " sets dst[i] = " + ref + "(src[i]) for i < n (n >= 1); dst may be src.")
	dst, src, n := g.Load("dst"), g.Load("src"), g.Load("n")
	f := setup(g.zeroZMM())
	j := g.GP64()
	g.XORQ(j, j)
	loop := g.NewLabel(label)
	g.Label(loop)
	left := g.GP64()
	g.MOVQ(n, left)
	g.SUBQ(j, left)
	kAll := g.maskOf(g.minConst(left, 16*unaryChunks))
	ks := make([]reg.OpmaskVirtual, unaryChunks)
	xs := make([]reg.VecVirtual, unaryChunks)
	for u := range ks {
		ks[u] = kAll
		if u > 0 {
			ks[u] = g.K()
			g.KSHIFTRQ(operand.U8(16*u), kAll, ks[u])
		}
		xs[u] = g.ZMM()
		g.VMOVUPS_Z(operand.Mem{Base: src, Index: j, Scale: 4, Disp: 64 * u}, ks[u], xs[u])
	}
	for u, y := range f(xs) {
		g.VMOVUPS(y, ks[u], operand.Mem{Base: dst, Index: j, Scale: 4, Disp: 64 * u})
	}
	g.ADDQ(operand.U8(16*unaryChunks), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

// genUnaryAVX2 is genUnary's AVX2 form: 8 floats per step, whole groups of
// 8 (n >= 8, a multiple of 8: its Go wrapper does the rest), one group per
// iteration (out-of-order execution overlaps the chains of successive
// groups; two in flight would need more than 16 ymm).
func genUnaryAVX2(g *gen, name, ref, label string, setup func(zero reg.VecVirtual) func(x reg.VecVirtual) reg.VecVirtual) {
	g.Function(name)
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *float32, src *float32, n int)")
	g.Pragma("noescape")
	g.Doc(name+" sets dst[i] = "+ref+"(src[i]) for i < n (n >= 8, a multiple of 8);",
		"dst may be src.")
	dst, src, n := g.Load("dst"), g.Load("src"), g.Load("n")
	zero := g.YMM()
	g.ZeroVec(zero)
	f := setup(zero)
	j := g.GP64()
	g.XORQ(j, j)
	loop := g.NewLabel(label)
	g.Label(loop)
	x := g.YMM()
	g.VMOVUPS(operand.Mem{Base: src, Index: j, Scale: 4}, x)
	g.VMOVUPS(f(x), operand.Mem{Base: dst, Index: j, Scale: 4})
	g.ADDQ(operand.U8(8), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

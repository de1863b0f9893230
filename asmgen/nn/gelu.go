package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/geluavo"
)

// GELU is internal/gelu's float32 erf-GELU (and GeluTanh its tanh form),
// the function a GEMM epilogue with ActGelu (ActGeluTanh) applies;
// nn.Gelu (nn.GeluTanh) applies it standalone. Both generators emit it
// with asmgen/geluavo, so standalone and fused GELU give the same bits.

// geluChunks 16-float chunks go through GELU interleaved per step, so that
// their dependency chains overlap.
const geluChunks = 3

// genGelu emits geluAsm and geluTanhAsm: dst[i] = gelu(src[i]) for i < n,
// and their AVX2 forms (gelu_avx2.go), one table for all.
func genGelu(g *gen) {
	table := geluavo.NewTable(g.Context, "nnGelu", geluavo.Erf, geluavo.Tanh)
	genGeluForm(g, table, geluavo.Erf, "geluAsm", "gelu.Gelu")
	genGeluForm(g, table, geluavo.Tanh, "geluTanhAsm", "gelu.GeluTanh")
	genGeluAVX2(g, table)
}

// genGeluForm emits the function name applying the GELU of form f (ref
// is its Go reference, for the doc comment).
func genGeluForm(g *gen, table geluavo.Table, f geluavo.Form, name, ref string) {
	g.Function(name)
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *float32, src *float32, n int)")
	g.Pragma("noescape")
	g.Doc(name + " sets dst[i] = " + ref + "(src[i]) for i < n (n >= 1); dst may be src.")
	dst, src, n := g.Load("dst"), g.Load("src"), g.Load("n")
	zero := g.zeroZMM()
	eval := table.Load(g.Context, f)
	j := g.GP64()
	g.XORQ(j, j)
	loop := g.NewLabel("gelu_loop")
	g.Label(loop)
	left := g.GP64()
	g.MOVQ(n, left)
	g.SUBQ(j, left)
	kAll := g.maskOf(g.minConst(left, 16*geluChunks))
	ks := make([]reg.OpmaskVirtual, geluChunks)
	xs := make([]reg.VecVirtual, geluChunks)
	for u := range ks {
		ks[u] = kAll
		if u > 0 {
			ks[u] = g.K()
			g.KSHIFTRQ(operand.U8(16*u), kAll, ks[u])
		}
		xs[u] = g.ZMM()
		g.VMOVUPS_Z(operand.Mem{Base: src, Index: j, Scale: 4, Disp: 64 * u}, ks[u], xs[u])
	}
	for u, y := range eval.Emit(g.Context, xs, zero) {
		g.VMOVUPS(y, ks[u], operand.Mem{Base: dst, Index: j, Scale: 4, Disp: 64 * u})
	}
	g.ADDQ(operand.U8(16*geluChunks), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

package main

import (
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/geluavo"
)

// GELU is internal/gelu's float32 erf-GELU (and GeluTanh its tanh form),
// the function a GEMM epilogue with ActGelu (ActGeluTanh) applies;
// nn.Gelu (nn.GeluTanh) applies it standalone. Both generators emit it
// with asmgen/geluavo, so standalone and fused GELU give the same bits.

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
	genUnary(g, name, ref, "gelu_loop", func(zero reg.VecVirtual) func(xs []reg.VecVirtual) []reg.VecVirtual {
		eval := table.Load(g.Context, f)
		return func(xs []reg.VecVirtual) []reg.VecVirtual { return eval.Emit(g.Context, xs, zero) }
	})
}

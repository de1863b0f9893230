package main

import (
	"github.com/mmcloughlin/avo/reg"
	"github.com/sqc-dev/sqc/asmgen/geluavo"
)

// genGeluAVX2 emits geluAVX2Asm and geluTanhAVX2Asm, the AVX2+FMA3 forms
// of the standalone GELUs for CPUs without AVX-512, on table (genGelu's).
func genGeluAVX2(g *gen, table geluavo.Table) {
	genGeluFormAVX2(g, table, geluavo.Erf, "geluAVX2Asm", "gelu.Gelu")
	genGeluFormAVX2(g, table, geluavo.Tanh, "geluTanhAVX2Asm", "gelu.GeluTanh")
}

// genGeluFormAVX2 emits the function name applying the GELU of form f to
// 8 floats per step (ref is its Go reference, for the doc comment); the
// coefficient tables stay in memory (geluavo.EvalAVX2).
func genGeluFormAVX2(g *gen, table geluavo.Table, f geluavo.Form, name, ref string) {
	genUnaryAVX2(g, name, ref, "gelu2_loop", func(zero reg.VecVirtual) func(x reg.VecVirtual) reg.VecVirtual {
		eval := table.LoadAVX2(g.Context, table.Coeffs(f), f.Degree())
		return func(x reg.VecVirtual) reg.VecVirtual { return eval.Emit(g.Context, x, zero) }
	})
}

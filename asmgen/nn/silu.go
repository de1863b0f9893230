package main

import (
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/expavo"
	"github.com/sqc-dev/sqc/internal/expf"
)

// SiLU is internal/expf's float32 x·sigmoid(x), the function a GEMM
// epilogue with ActSilu applies; nn.Silu applies it standalone. Both
// generators emit it with asmgen/expavo, so standalone and fused SiLU give
// the same bits.

// genSilu emits siluAsm (AVX-512) and siluAVX2Asm: dst[i] =
// expf.Silu(src[i]).
func genSilu(g *gen) {
	genUnary(g, "siluAsm", "expf.Silu", "silu_loop", func(zero reg.VecVirtual) func(xs []reg.VecVirtual) []reg.VecVirtual {
		lo := g.ZMM()
		g.VBROADCASTSS(g.consts.F32(expf.Min), lo)
		return func(xs []reg.VecVirtual) []reg.VecVirtual { return expavo.SiluZMM(g.Context, g.consts, xs, lo, zero) }
	})
	genUnaryAVX2(g, "siluAVX2Asm", "expf.Silu", "silu2_loop", func(zero reg.VecVirtual) func(x reg.VecVirtual) reg.VecVirtual {
		return func(x reg.VecVirtual) reg.VecVirtual { return expavo.SiluYMM(g.Context, g.consts, x, zero) }
	})
}

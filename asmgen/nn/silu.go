package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/expavo"
	"github.com/sqc-dev/sqc/internal/expf"
)

// SiLU is internal/expf's float32 x·sigmoid(x), the function a GEMM
// epilogue with ActSilu applies; nn.Silu applies it standalone. Both
// generators emit it with asmgen/expavo, so standalone and fused SiLU give
// the same bits.

// siluChunks 16-float chunks go through SiLU interleaved per step, as
// geluChunks do for GELU.
const siluChunks = 3

// genSilu emits siluAsm (AVX-512) and siluAVX2Asm: dst[i] =
// expf.Silu(src[i]).
func genSilu(g *gen) {
	g.Function("siluAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *float32, src *float32, n int)")
	g.Pragma("noescape")
	g.Doc("siluAsm sets dst[i] = expf.Silu(src[i]) for i < n (n >= 1); dst may be src.")
	dst, src, n := g.Load("dst"), g.Load("src"), g.Load("n")
	zero := g.zeroZMM()
	lo := g.ZMM()
	g.VBROADCASTSS(g.consts.F32(expf.Min), lo)
	j := g.GP64()
	g.XORQ(j, j)
	loop := g.NewLabel("silu_loop")
	g.Label(loop)
	left := g.GP64()
	g.MOVQ(n, left)
	g.SUBQ(j, left)
	kAll := g.maskOf(g.minConst(left, 16*siluChunks))
	ks := make([]reg.OpmaskVirtual, siluChunks)
	xs := make([]reg.VecVirtual, siluChunks)
	for u := range ks {
		ks[u] = kAll
		if u > 0 {
			ks[u] = g.K()
			g.KSHIFTRQ(operand.U8(16*u), kAll, ks[u])
		}
		xs[u] = g.ZMM()
		g.VMOVUPS_Z(operand.Mem{Base: src, Index: j, Scale: 4, Disp: 64 * u}, ks[u], xs[u])
	}
	for u, y := range expavo.SiluZMM(g.Context, g.consts, xs, lo, zero) {
		g.VMOVUPS(y, ks[u], operand.Mem{Base: dst, Index: j, Scale: 4, Disp: 64 * u})
	}
	g.ADDQ(operand.U8(16*siluChunks), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()

	// The AVX2 form: 8 floats per step, whole groups of 8 (its Go wrapper
	// does the rest), one group per iteration as the AVX2 GELU.
	g.Function("siluAVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *float32, src *float32, n int)")
	g.Pragma("noescape")
	g.Doc("siluAVX2Asm sets dst[i] = expf.Silu(src[i]) for i < n (n >= 8, a multiple of 8);",
		"dst may be src.")
	dst, src, n = g.Load("dst"), g.Load("src"), g.Load("n")
	yZero := g.YMM()
	g.ZeroVec(yZero)
	j = g.GP64()
	g.XORQ(j, j)
	loop = g.NewLabel("silu2_loop")
	g.Label(loop)
	x := g.YMM()
	g.VMOVUPS(operand.Mem{Base: src, Index: j, Scale: 4}, x)
	g.VMOVUPS(expavo.SiluYMM(g.Context, g.consts, x, yZero), operand.Mem{Base: dst, Index: j, Scale: 4})
	g.ADDQ(operand.U8(8), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

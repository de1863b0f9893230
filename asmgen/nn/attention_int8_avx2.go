package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// genPackValuesAVX2 emits packValues4AVX2Asm, the inner loop of INT8
// attention's value packing (runtime/nn packValues): four keys' rows
// quantised to s8 per channel and interleaved into the qgemm B layout,
// where keys 4g..4g+3 of a channel are one 32-bit word and a 16-channel
// strip's words are contiguous. Per block of 8 channels:
//
//	x_t  = cvtps2dq(minps(maxps(r_t[c] * inv[c], -127), 127))   (round to nearest even; NaN gives -127)
//	word = x_0&0xff | (x_1&0xff)<<8 | (x_2&0xff)<<16 | x_3<<24
//	colSum[c] += x_0 + x_1 + x_2 + x_3
//
// quantS8 in runtime/nn is the same arithmetic in Go.
func genPackValuesAVX2(g *gen) {
	g.Function("packValues4AVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *uint32, stripBytes int, r0 *float32, r1 *float32, r2 *float32, r3 *float32, inv *float32, colSum *int32, blocks int)")
	g.Pragma("noescape")
	g.Doc("packValues4AVX2Asm packs blocks blocks of 8 channels of the four value rows r0..r3, quantised",
		"with inv (per channel) to s8, as words dst[c] = bytes (x0, x1, x2, x3) of channel c, the 16",
		"channels of a strip contiguous and strips stripBytes apart, and adds x0+x1+x2+x3 to colSum[c].")
	dst, strip := g.Load("dst"), g.Load("stripBytes")
	rows := [4]reg.GPVirtual{g.Load("r0"), g.Load("r1"), g.Load("r2"), g.Load("r3")}
	inv, sum, blocks := g.Load("inv"), g.Load("colSum"), g.Load("blocks")
	lo, hi, ff := g.YMM(), g.YMM(), g.YMM()
	g.VBROADCASTSS(g.consts.f32(-s8Clamp), lo)
	g.VBROADCASTSS(g.consts.f32(s8Clamp), hi)
	g.VPBROADCASTD(g.consts.u32(255), ff)

	// block packs the 8 channels at the pointers into dst+disp and moves
	// the row, scale and sum pointers on by 8 channels.
	block := func(disp int) {
		s := g.YMM()
		g.VMOVUPS(operand.Mem{Base: inv}, s)
		var x [4]reg.VecVirtual
		for t, r := range rows {
			v := g.YMM()
			g.VMULPS(operand.Mem{Base: r}, s, v)
			g.VMAXPS(lo, v, v) // maxps(v, -127): NaN gives -127
			g.VMINPS(hi, v, v)
			x[t] = g.YMM()
			g.VCVTPS2DQ(v, x[t])
		}
		total := g.YMM()
		g.VPADDD(x[1], x[0], total)
		g.VPADDD(x[2], total, total)
		g.VPADDD(x[3], total, total)
		g.VPADDD(operand.Mem{Base: sum}, total, total)
		g.VMOVDQU(total, operand.Mem{Base: sum})
		word := g.YMM()
		g.VPAND(ff, x[0], word)
		for t := 1; t < 4; t++ {
			b := g.YMM()
			if t < 3 {
				g.VPAND(ff, x[t], b)
				g.VPSLLD(operand.U8(8*t), b, b)
			} else {
				g.VPSLLD(operand.U8(24), x[t], b)
			}
			g.VPOR(b, word, word)
		}
		g.VMOVDQU(word, operand.Mem{Base: dst, Disp: disp})
		for _, p := range append(rows[:], inv, sum) {
			g.ADDQ(operand.U8(32), p)
		}
	}
	loop, done := g.NewLabel("pv4"), g.NewLabel("pv4_done")
	g.Label(loop)
	g.TESTQ(blocks, blocks)
	g.JZ(operand.LabelRef(done))
	block(0) // channels 0-7 of a strip
	g.DECQ(blocks)
	g.JZ(operand.LabelRef(done))
	block(32) // channels 8-15
	g.ADDQ(strip, dst)
	g.DECQ(blocks)
	g.JMP(operand.LabelRef(loop))
	g.Label(done)
	g.VZEROUPPER()
	g.RET()
}

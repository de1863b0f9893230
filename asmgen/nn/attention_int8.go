package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// genPackQueries emits packQueries16Asm, the AVX-512 packing of INT8
// attention's query operand (runtime/nn packQueries): up to 16 query rows,
// already quantised to u8 codes with zero point 128, become one 16-column
// strip of the qgemm B layout, where column r is query r and each 32-bit
// word holds four consecutive channels as s8. Per 64 channels the 16 rows
// (xor 0x80 per byte: u8 code to s8) are one 16x16 transpose of words, and
// the column sums (the s8 sums the epilogue's zero-point term needs) come
// from the transposed words by two multiply-adds with ones.
func genPackQueries(g *gen) {
	g.Function("packQueries16Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *uint32, src *uint8, kp int, rows int, colSum *int32)")
	g.Pragma("noescape")
	g.Doc("packQueries16Asm sets dst[g*16+r] = word g of row r xor 0x80808080 (0 for rows <= r < 16) for",
		"g < kp/4, and colSum[r] = the sum of row r's bytes as s8 (0 for r >= rows), r < 16: row r is the",
		"kp u8 codes at src+r*kp (kp a multiple of 64, 1 <= rows <= 16).")
	dst, src, kp, rows, sum := g.Load("dst"), g.Load("src"), g.Load("kp"), g.Load("rows"), g.Load("colSum")
	flip, ones8, ones16 := g.ZMM(), g.ZMM(), g.ZMM()
	g.VPBROADCASTD(g.consts.u32(0x80808080), flip)
	g.VPBROADCASTD(g.consts.u32(0x01010101), ones8)
	g.VPBROADCASTD(g.consts.u32(0x00010001), ones16)
	acc := g.zeroZMM()
	off := g.GP64()
	g.XORQ(off, off)
	chunk := g.NewLabel("pq_chunk")
	g.Label(chunk)
	var z [16]reg.VecVirtual
	for r := range z {
		z[r] = g.zeroZMM()
	}
	p := g.GP64()
	g.LEAQ(operand.Mem{Base: src, Index: off, Scale: 1}, p)
	loaded := g.NewLabel("pq_loaded")
	for r := range z {
		if r > 0 {
			g.CMPQ(rows, operand.U32(r))
			g.JLE(operand.LabelRef(loaded))
		}
		g.VPXORD(operand.Mem{Base: p}, flip, z[r]) // u8 code - 128 as s8
		if r < 15 {
			g.ADDQ(kp, p)
		}
	}
	g.Label(loaded)
	out := g.transpose16(z)
	for w, v := range out {
		g.VMOVDQU32(v, operand.Mem{Base: dst, Disp: 64 * w})
		pairs, quads := g.ZMM(), g.ZMM()
		g.VPMADDUBSW(v, ones8, pairs) // s8 pairs summed into words (no saturation: |sum| <= 256)
		g.VPMADDWD(ones16, pairs, quads)
		g.VPADDD(quads, acc, acc)
	}
	g.ADDQ(operand.U32(16*64), dst)
	g.ADDQ(operand.U8(64), off)
	g.CMPQ(off, kp)
	g.JL(operand.LabelRef(chunk))
	g.VMOVDQU32(acc, operand.Mem{Base: sum})
	g.VZEROUPPER()
	g.RET()
}

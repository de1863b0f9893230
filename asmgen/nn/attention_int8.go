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

// genPackValues emits packValuesAsm, the AVX-512 packing of INT8
// attention's value operand (runtime/nn packValues) for whole groups of
// four keys in one call: for each strip of 16 channels, down the groups,
// the four keys' values quantised to s8 per channel and interleaved into
// one 64-byte row of words (keys 4g..4g+3 of channel c in word g*16+c of
// the strip), the strip's column sums kept in a register. Per channel:
//
//	x_t  = cvtps2dq(minps(maxps(v_t[c] * inv[c], -127), 127))   (round to nearest even; NaN gives -127)
//	word = x_0&0xff | (x_1&0xff)<<8 | (x_2&0xff)<<16 | x_3<<24
//	colSum[c] += x_0 + x_1 + x_2 + x_3
//
// as packValues4AVX2Asm and runtime/nn quantS8 compute it. Channels past
// hd in the last strip are read as 0 (opmask), so their words are 0.
func genPackValues(g *gen) {
	g.Function("packValuesAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *uint32, stripBytes int, v *float32, vStride int, groups int, inv *float32, colSum *int32, hd int)")
	g.Pragma("noescape")
	g.Doc("packValuesAsm packs groups groups of four value rows (row j at v+j*vStride floats, hd channels),",
		"quantised with inv (per channel) to s8, as words dst[s*stripBytes/4 + g*16 + c%16] = bytes",
		"(x0, x1, x2, x3) of channel c = 16s + c%16 and group g, zero for c >= hd up to the strip's end, and",
		"adds x0+x1+x2+x3 to colSum[c] for c < hd (groups, hd >= 1).")
	dst, strip, v, stride := g.Load("dst"), g.Load("stripBytes"), g.Load("v"), g.Load("vStride")
	groups, inv, sum, hd := g.Load("groups"), g.Load("inv"), g.Load("colSum"), g.Load("hd")
	g.SHLQ(operand.U8(2), stride) // in bytes
	stride4 := g.GP64()
	g.LEAQ(operand.Mem{Base: stride, Index: stride, Scale: 2}, stride4)
	g.ADDQ(stride, stride4) // four rows
	lo, hi, ff := g.ZMM(), g.ZMM(), g.ZMM()
	g.VBROADCASTSS(g.consts.f32(-s8Clamp), lo)
	g.VBROADCASTSS(g.consts.f32(s8Clamp), hi)
	g.VPBROADCASTD(g.consts.u32(255), ff)
	c0 := g.GP64()
	g.XORQ(c0, c0)
	stripLoop := g.NewLabel("pvs_strip")
	g.Label(stripLoop)
	left := g.GP64()
	g.MOVQ(hd, left)
	g.SUBQ(c0, left)
	k := g.maskOf(g.minConst(left, 16))
	s, acc := g.ZMM(), g.ZMM()
	g.VMOVUPS_Z(operand.Mem{Base: inv, Index: c0, Scale: 4}, k, s)
	g.VMOVDQU32_Z(operand.Mem{Base: sum, Index: c0, Scale: 4}, k, acc)
	row, out, n := g.GP64(), g.GP64(), g.GP64()
	g.LEAQ(operand.Mem{Base: v, Index: c0, Scale: 4}, row)
	g.MOVQ(dst, out)
	g.MOVQ(groups, n)
	groupLoop := g.NewLabel("pvs_group")
	g.Label(groupLoop)
	var x [4]reg.VecVirtual
	r := g.GP64()
	g.MOVQ(row, r)
	for t := range x {
		x[t] = g.ZMM()
		g.VMOVUPS_Z(operand.Mem{Base: r}, k, x[t])
		if t < 3 {
			g.ADDQ(stride, r)
		}
		g.VMULPS(s, x[t], x[t])
		g.VMAXPS(lo, x[t], x[t]) // maxps(v, -127): NaN gives -127
		g.VMINPS(hi, x[t], x[t])
		g.VCVTPS2DQ(x[t], x[t])
		g.VPADDD(x[t], acc, acc)
	}
	word := g.ZMM()
	g.VPANDD(ff, x[0], word)
	for t := 1; t < 4; t++ {
		b := g.ZMM()
		if t < 3 {
			g.VPANDD(ff, x[t], b)
			g.VPSLLD(operand.U8(8*t), b, b)
		} else {
			g.VPSLLD(operand.U8(24), x[t], b)
		}
		g.VPORD(b, word, word)
	}
	g.VMOVDQU32(word, operand.Mem{Base: out})
	g.ADDQ(operand.U8(64), out)
	g.ADDQ(stride4, row)
	g.DECQ(n)
	g.JNZ(operand.LabelRef(groupLoop))
	g.VMOVDQU32(acc, k, operand.Mem{Base: sum, Index: c0, Scale: 4})
	g.ADDQ(strip, dst)
	g.ADDQ(operand.U8(16), c0)
	g.CMPQ(c0, hd)
	g.JL(operand.LabelRef(stripLoop))
	g.VZEROUPPER()
	g.RET()
}

// genSymScales emits symScalesAsm: INT8 attention's per-channel value
// scales (runtime/nn packValues), scale[c] = symScale(m[c]) = m[c]/127, or
// 1 where m[c] == 0, and inv[c] = 1/scale[c], 16 channels per step with
// VDIVPS: both divisions correctly rounded, as Go's are, where the Go loop
// took two scalar divisions per channel (3% of a 32-token head's time).
func genSymScales(g *gen) {
	g.Function("symScalesAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(m *float32, scale *float32, inv *float32, n int)")
	g.Pragma("noescape")
	g.Doc("symScalesAsm sets scale[c] = m[c]/127 (1 where m[c] == 0) and inv[c] = 1/scale[c] for c < n (n >= 1).")
	m, scale, inv, left := g.Load("m"), g.Load("scale"), g.Load("inv"), g.Load("n")
	one := g.ZMM()
	g.VBROADCASTSS(g.consts.f32(1), one)
	zero := g.zeroZMM()
	loop := g.NewLabel("sym_loop")
	g.Label(loop)
	k := g.maskOf(g.minConst(left, 16))
	x, sc, iv := g.ZMM(), g.ZMM(), g.ZMM()
	g.VMOVUPS_Z(operand.Mem{Base: m}, k, x)
	isZero := g.K()
	g.VCMPPS(operand.U8(0), zero, x, isZero)    // EQ_OQ: m == 0 (either sign)
	g.VDIVPS_BCST(g.consts.f32(s8Clamp), x, sc) // m / 127 (symScale's divisor is s8Clamp)
	g.VMOVAPS(one, isZero, sc)                  // 1 where m == 0
	g.VDIVPS(sc, one, iv)                       // 1 / scale
	g.VMOVUPS(sc, k, operand.Mem{Base: scale})
	g.VMOVUPS(iv, k, operand.Mem{Base: inv})
	for _, p := range []reg.GPVirtual{m, scale, inv} {
		g.ADDQ(operand.U8(64), p)
	}
	g.SUBQ(operand.U8(16), left)
	g.JG(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

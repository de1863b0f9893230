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

// genProbsAVX2 emits probsT16AVX2Asm, INT8 attention's quantisation of a
// 16-row block of softmax numerators (runtime/nn quantizeProbs): sT holds
// them key-major ([key][16 rows] float32), P wants them row-major u8. Per
// block of 8 keys, each key's 16 values are quantised as quantizeU8AVX2Asm
// does (qgemm.QuantizeU8(e, 255, 0): times 255, clamped, rounded to
// nearest even, packed with saturation), two keys per ymm; the 8 x 16
// bytes are then transposed by lane swaps and byte, word and dword
// interleaves, and row r's 8 bytes are stored at p + r*kpv.
func genProbsAVX2(g *gen, tab avx2Tables) {
	g.Function("probsT16AVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(p *uint8, kpv int, sT *float32, blocks int)")
	g.Pragma("noescape")
	g.Doc("probsT16AVX2Asm sets p[r*kpv+j] = qgemm.QuantizeU8(sT[j*16+r], 255, 0) for r < 16 and",
		"j < 8*blocks (blocks >= 1).")
	sT := g.Load("sT")
	scale, lo, hi := g.YMM(), g.YMM(), g.YMM()
	g.VBROADCASTSS(g.consts.f32(255), scale)
	g.VBROADCASTSS(g.consts.f32(-quantClamp), lo)
	g.VBROADCASTSS(g.consts.f32(quantClamp), hi)
	order := g.YMM()
	g.VMOVDQU(tab.packOrder, order)
	codes := func(disp int) reg.VecVirtual {
		v := g.YMM()
		g.VMULPS(operand.Mem{Base: sT, Disp: disp}, scale, v)
		g.VMAXPS(lo, v, v) // as qgemm.QuantizeU8: NaN gives -clamp, then 0
		g.VMINPS(hi, v, v)
		g.VCVTPS2DQ(v, v)
		return v
	}
	probsLoop(g, "probs", sT, order, func(t int) reg.VecVirtual {
		c := [4]reg.VecVirtual{codes(128 * t), codes(128*t + 32), codes(128*t + 64), codes(128*t + 96)}
		g.VPACKSSDW(c[1], c[0], c[0])
		g.VPACKSSDW(c[3], c[2], c[2])
		g.VPACKUSWB(c[2], c[0], c[0])
		g.VPERMD(c[0], order, c[0])
		return c[0]
	})
}

// genProbsAVX512 emits probsT16Asm, probsT16AVX2Asm with each key's 16
// numerators quantised in one zmm: times 255, raised to +0 (NaN too), rounded
// to even and narrowed with VPMOVUSDB's unsigned saturation, which is
// qgemm.QuantizeU8(e, 255, 0) (the argument of asmgen/nn's quantizer, zero
// point 0): 4 operations a key instead of 8 and the packs. The transpose
// and stores are probsT16AVX2Asm's.
func genProbsAVX512(g *gen, tab avx2Tables) {
	g.Function("probsT16Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(p *uint8, kpv int, sT *float32, blocks int)")
	g.Pragma("noescape")
	g.Doc("probsT16Asm sets p[r*kpv+j] = qgemm.QuantizeU8(sT[j*16+r], 255, 0) for r < 16 and",
		"j < 8*blocks (blocks >= 1).")
	sT := g.Load("sT")
	scale, zero := g.ZMM(), g.zeroZMM()
	g.VBROADCASTSS(g.consts.f32(255), scale)
	order := g.YMM()
	g.VMOVDQU(tab.packOrder, order)
	key := func(disp int) reg.VecVirtual {
		v := g.ZMM()
		g.VMULPS(operand.Mem{Base: sT, Disp: disp}, scale, v)
		g.VMAXPS(zero, v, v) // maxps(t, +0): NaN gives +0
		g.VCVTPS2DQ(v, v)
		x := g.XMM()
		g.VPMOVUSDB(v, x) // past 255, or 0x80000000 past 2^31: 255
		return x
	}
	probsLoop(g, "probs5", sT, order, func(t int) reg.VecVirtual {
		y := g.YMM()
		g.VINSERTI128(operand.U8(1), key(128*t+64), key(128*t).AsY(), y)
		return y
	})
}

// probsLoop emits the block loop of the probability quantisers over the p,
// kpv and blocks arguments: keysPair(t) returns a ymm holding the 16 u8
// codes of key 2t then those of key 2t+1 of the current block of 8 keys
// at sT (rows in order); the 8 x 16 bytes are then transposed and row r's 8
// bytes stored at p + r*kpv. order is packOrder.
func probsLoop(g *gen, label string, sT reg.GPVirtual, order reg.VecVirtual, keysPair func(t int) reg.VecVirtual) {
	p, kpv, blocks := g.Load("p"), g.Load("kpv"), g.Load("blocks")
	kpv3 := g.GP64()
	g.LEAQ(operand.Mem{Base: kpv, Index: kpv, Scale: 2}, kpv3)
	loop := g.NewLabel(label)
	g.Label(loop)
	// y[t]: keys 2t and 2t+1, 16 bytes each, in row order.
	var y [4]reg.VecVirtual
	for t := range y {
		y[t] = keysPair(t)
	}
	// Keys k and k+4 share a register, low and high lane.
	a, b, c, d := g.YMM(), g.YMM(), g.YMM(), g.YMM()
	g.VPERM2I128(operand.U8(0x20), y[2], y[0], a) // keys 0 | 4
	g.VPERM2I128(operand.U8(0x31), y[2], y[0], b) // keys 1 | 5
	g.VPERM2I128(operand.U8(0x20), y[3], y[1], c) // keys 2 | 6
	g.VPERM2I128(operand.U8(0x31), y[3], y[1], d) // keys 3 | 7
	e, f, gg, h := g.YMM(), g.YMM(), g.YMM(), g.YMM()
	g.VPUNPCKLBW(b, a, e)  // rows 0-7: keys (0,1) | (4,5)
	g.VPUNPCKHBW(b, a, f)  // rows 8-15
	g.VPUNPCKLBW(d, c, gg) // rows 0-7: keys (2,3) | (6,7)
	g.VPUNPCKHBW(d, c, h)
	row := g.GP64()
	g.MOVQ(p, row)
	for i, pair := range [][2]reg.VecVirtual{{e, gg}, {e, gg}, {f, h}, {f, h}} {
		x := g.YMM()
		if i%2 == 0 {
			g.VPUNPCKLWD(pair[1], pair[0], x) // rows 4i..4i+3: keys 0-3 | 4-7
		} else {
			g.VPUNPCKHWD(pair[1], pair[0], x)
		}
		g.VPERMD(x, order, x) // row 4i+k's keys 0-7 in qword k
		xh := g.XMM()
		g.VEXTRACTI128(operand.U8(1), x, xh)
		g.VMOVQ(x.AsX(), operand.Mem{Base: row})
		g.VPEXTRQ(operand.U8(1), x.AsX(), operand.Mem{Base: row, Index: kpv, Scale: 1})
		g.VMOVQ(xh, operand.Mem{Base: row, Index: kpv, Scale: 2})
		g.VPEXTRQ(operand.U8(1), xh, operand.Mem{Base: row, Index: kpv3, Scale: 1})
		if i < 3 {
			g.LEAQ(operand.Mem{Base: row, Index: kpv, Scale: 4}, row)
		}
	}
	g.ADDQ(operand.U8(8), p)
	g.ADDQ(operand.U32(8*16*4), sT)
	g.DECQ(blocks)
	g.JNZ(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

// genPackQueriesAVX2 emits packQueries16AVX2Asm, packQueries16Asm's AVX2
// form: per 64 channels, the 16 rows x 16 words are four 8x8 word
// transposes (unpack, shuffle, 128-bit lane swap), each row flipped from
// u8 codes to s8 as it is loaded (rows past the last read as zero words),
// and the column sums are two multiply-adds with ones per transposed
// register, kept in two accumulators (rows 0-7 and 8-15).
func genPackQueriesAVX2(g *gen) {
	g.Function("packQueries16AVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *uint32, src *uint8, kp int, rows int, colSum *int32)")
	g.Pragma("noescape")
	g.Doc("packQueries16AVX2Asm is packQueries16Asm with AVX2 (kp a multiple of 64, 1 <= rows <= 16).")
	dst, src, kp, rows, sum := g.Load("dst"), g.Load("src"), g.Load("kp"), g.Load("rows"), g.Load("colSum")
	flip, ones8, ones16 := g.YMM(), g.YMM(), g.YMM()
	g.VPBROADCASTD(g.consts.u32(0x80808080), flip)
	g.VPBROADCASTD(g.consts.u32(0x01010101), ones8)
	g.VPBROADCASTD(g.consts.u32(0x00010001), ones16)
	acc := [2]reg.VecVirtual{g.YMM(), g.YMM()}
	for _, a := range acc {
		g.ZeroVec(a)
	}
	off := g.GP64()
	g.XORQ(off, off)
	chunk := g.NewLabel("pq2_chunk")
	g.Label(chunk)
	for rh := 0; rh < 16; rh += 8 {
		for wh := 0; wh < 16; wh += 8 {
			var r [8]reg.VecVirtual
			for i := range r {
				r[i] = g.YMM()
				g.ZeroVec(r[i])
			}
			p := g.GP64()
			g.LEAQ(operand.Mem{Base: src, Index: off, Scale: 1}, p)
			if rh > 0 {
				skip := g.GP64()
				g.IMUL3Q(operand.U8(rh), kp, skip) // row rh
				g.ADDQ(skip, p)
			}
			loaded := g.NewLabel("pq2_loaded")
			for i := range r {
				g.CMPQ(rows, operand.U32(rh+i))
				g.JLE(operand.LabelRef(loaded))
				g.VPXOR(operand.Mem{Base: p, Disp: 4 * wh}, flip, r[i]) // u8 code - 128 as s8
				if i < 7 {
					g.ADDQ(kp, p)
				}
			}
			g.Label(loaded)
			out := g.transpose8x8(r)
			for k, v := range out {
				g.VMOVDQU(v, operand.Mem{Base: dst, Disp: 64*(wh+k) + 4*rh})
				pairs := g.YMM()
				g.VPMADDUBSW(v, ones8, pairs) // s8 pairs summed into words (|sum| <= 256)
				g.VPMADDWD(ones16, pairs, pairs)
				g.VPADDD(pairs, acc[rh/8], acc[rh/8])
			}
		}
	}
	g.ADDQ(operand.U32(16*64), dst)
	g.ADDQ(operand.U8(64), off)
	g.CMPQ(off, kp)
	g.JL(operand.LabelRef(chunk))
	g.VMOVDQU(acc[0], operand.Mem{Base: sum})
	g.VMOVDQU(acc[1], operand.Mem{Base: sum, Disp: 32})
	g.VZEROUPPER()
	g.RET()
}

// transpose8x8 transposes an 8x8 block of 4-byte elements held in 8 ymm
// registers (in[r] lane c = element (r, c)) and returns out with out[c]
// lane r = element (r, c): unpack 32-bit pairs, shuffle 64-bit pairs, then
// swap 128-bit lanes.
func (g *gen) transpose8x8(in [8]reg.VecVirtual) [8]reg.VecVirtual {
	var t, u, out [8]reg.VecVirtual
	for i := 0; i < 8; i += 2 {
		t[i], t[i+1] = g.YMM(), g.YMM()
		g.VUNPCKLPS(in[i+1], in[i], t[i])   // a0 b0 a1 b1 | a4 b4 a5 b5
		g.VUNPCKHPS(in[i+1], in[i], t[i+1]) // a2 b2 a3 b3 | a6 b6 a7 b7
	}
	for i := 0; i < 8; i += 4 {
		for j := range 2 {
			u[i+2*j], u[i+2*j+1] = g.YMM(), g.YMM()
			g.VSHUFPS(operand.U8(0x44), t[i+2+j], t[i+j], u[i+2*j])   // columns 4k+2j of rows i..i+3
			g.VSHUFPS(operand.U8(0xEE), t[i+2+j], t[i+j], u[i+2*j+1]) // columns 4k+2j+1
		}
	}
	for c := range 4 {
		out[c], out[c+4] = g.YMM(), g.YMM()
		g.VPERM2F128(operand.U8(0x20), u[4+c], u[c], out[c])
		g.VPERM2F128(operand.U8(0x31), u[4+c], u[c], out[c+4])
	}
	return out
}

package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
)

// genRotary emits rotaryAsm, nn.Rotary on one token's row for AVX-512:
// for each 16-lane chunk of a head's half (the tables' lanes loaded once),
// every head's lower and upper lanes,
//
//	y_lo = lo*cos_lo - hi*sin_lo     (rotaryGo's float32(lo*c) + float32(-hi*s): the same bits)
//	y_hi = hi*cos_hi + lo*sin_hi
//
// each product rounded before the sum (VMULPS, then VSUBPS / VADDPS; no
// FMA), masked on the last chunk of a half.
func genRotary(g *gen) {
	g.Function("rotaryAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *float32, x *float32, cos *float32, sin *float32, heads int, half int)")
	g.Pragma("noescape")
	g.Doc("rotaryAsm is rotaryGo(dst, x, cos, sin, heads, 2*half) (heads, half >= 1): dst and x hold heads heads of 2*half floats, cos and sin 2*half.")
	dst, x, cos, sin, heads, half := g.Load("dst"), g.Load("x"), g.Load("cos"), g.Load("sin"), g.Load("heads"), g.Load("half")
	stride := g.GP64() // one head, in bytes: 2*half floats
	g.MOVQ(half, stride)
	g.SHLQ(operand.U8(3), stride)
	e := g.GP64()
	g.XORQ(e, e)
	chunks := g.NewLabel("rotary_chunks")
	g.Label(chunks)
	left := g.GP64()
	g.MOVQ(half, left)
	g.SUBQ(e, left)
	k := g.maskOf(g.minConst(left, 16))
	// The tables' lanes e .. e+15 of each half.
	cLo, cHi, sLo, sHi := g.ZMM(), g.ZMM(), g.ZMM(), g.ZMM()
	upper := g.GP64() // half + e: the upper half's lane index
	g.MOVQ(half, upper)
	g.ADDQ(e, upper)
	g.VMOVUPS_Z(operand.Mem{Base: cos, Index: e, Scale: 4}, k, cLo)
	g.VMOVUPS_Z(operand.Mem{Base: cos, Index: upper, Scale: 4}, k, cHi)
	g.VMOVUPS_Z(operand.Mem{Base: sin, Index: e, Scale: 4}, k, sLo)
	g.VMOVUPS_Z(operand.Mem{Base: sin, Index: upper, Scale: 4}, k, sHi)
	src, out := g.GP64(), g.GP64()
	g.LEAQ(operand.Mem{Base: x, Index: e, Scale: 4}, src)
	g.LEAQ(operand.Mem{Base: dst, Index: e, Scale: 4}, out)
	count := g.GP64()
	g.MOVQ(heads, count)
	headLoop := g.NewLabel("rotary_heads")
	g.Label(headLoop)
	lo, hi := g.ZMM(), g.ZMM()
	g.VMOVUPS_Z(operand.Mem{Base: src}, k, lo)
	g.VMOVUPS_Z(operand.Mem{Base: src, Index: half, Scale: 4}, k, hi)
	a, b, c, d := g.ZMM(), g.ZMM(), g.ZMM(), g.ZMM()
	g.VMULPS(cLo, lo, a)
	g.VMULPS(sLo, hi, b)
	g.VSUBPS(b, a, a) // a - b
	g.VMULPS(cHi, hi, c)
	g.VMULPS(sHi, lo, d)
	g.VADDPS(d, c, c)
	g.VMOVUPS(a, k, operand.Mem{Base: out})
	g.VMOVUPS(c, k, operand.Mem{Base: out, Index: half, Scale: 4})
	g.ADDQ(stride, src)
	g.ADDQ(stride, out)
	g.DECQ(count)
	g.JNZ(operand.LabelRef(headLoop))
	g.ADDQ(operand.U8(16), e)
	g.CMPQ(e, half)
	g.JL(operand.LabelRef(chunks))
	g.VZEROUPPER()
	g.RET()
}

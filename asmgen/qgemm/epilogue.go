package main

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The AVX-512 epilogue mirrors runtime/qgemm/epilogue.go operation for
// operation (no FMA, same order, same constants), so that its output has
// the same bits as epilogueGo. Keep the two in step; the runtime test
// TestEpilogueAVX512MatchesGo compares them.

// Flag bits of the epilogue's flags argument (runtime/qgemm/epilogue_amd64.go).
const (
	epiColSum    = 1 << iota // subtract aZero*colSum
	epiBias                  // add bias
	epiGelu                  // apply GELU
	epiResidual              // add the residual
	epiU8                    // quantize to u8 (else store f32)
	epiFlagCount = 5
)

const epilogueSig = "func(c *int32, ldc int, m int, n int, colSum *int32, aZero int32, scale *float32, bias *float32, res *float32, resStride int, outF32 *float32, outU8 *uint8, outStride int, invScale float32, outZero int32, flags int)"

// Constants of runtime/qgemm/epilogue.go.
const (
	geluUMax   float32 = 12.9
	geluTScale float32 = 0.5 / math.Sqrt2
	geluHiMask uint32  = 0xFFFFF000
	expLog2E   float32 = 1.44269504088896341
	expLn2Hi   float32 = 0.693359375
	expLn2Lo   float32 = -2.12194440e-4
	quantClamp float32 = 65536
)

var geluP = [...]float32{
	0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807,
	-0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223,
}

var expC = [...]float32{1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5}

// constTable is a read-only DATA section of 4-byte constants, used through
// embedded broadcasts.
type constTable struct {
	mem    operand.Mem
	off    map[uint32]int
	g      *gen
	frozen bool // no more constants: another DATA section is active now
}

func newConstTable(g *gen, name string) *constTable {
	return &constTable{mem: g.StaticGlobal(name), off: map[uint32]int{}, g: g}
}

// u32 returns the address of the 4-byte constant v, adding it if new.
func (t *constTable) u32(v uint32) operand.Mem {
	o, ok := t.off[v]
	if !ok {
		if t.frozen {
			panic(fmt.Sprintf("constant %#x is not in the table", v))
		}
		o = 4 * len(t.off)
		t.off[v] = o
		t.g.AddDatum(o, operand.U32(v))
	}
	return t.mem.Offset(o)
}

func (t *constTable) f32(v float32) operand.Mem { return t.u32(math.Float32bits(v)) }

// genEpilogue emits epilogueAVX512Asm: one specialised loop per flag
// combination, chosen by a binary tree of flag tests on entry.
func genEpilogue(g *gen) {
	var tailMasks operand.Mem
	consts := newConstTable(g, "epilogueConsts")
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	// Pin the table's contents in a fixed order so that regenerating gives
	// the same file.
	for _, v := range []float32{0, 1, 0.5, -0.5, geluUMax, geluTScale, expLog2E, expLn2Hi, expLn2Lo, quantClamp, -quantClamp} {
		consts.f32(v)
	}
	for _, v := range geluP {
		consts.f32(v)
	}
	for _, v := range expC {
		consts.f32(v)
	}
	for _, v := range []uint32{0x7FFFFFFF, geluHiMask, 127, 255} {
		consts.u32(v)
	}
	consts.frozen = true

	// tailMasks[i] = 1<<(i+1) - 1: the opmask of a last chunk of i+1 columns.
	tailMasks = g.StaticGlobal("epilogueTailMasks")
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	for i := 0; i < 16; i++ {
		g.AddDatum(4*i, operand.U32(1<<(i+1)-1))
	}

	g.Function("epilogueAVX512Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr(epilogueSig)
	g.Pragma("noescape")
	g.Doc("epilogueAVX512Asm applies the epilogue to an m x n block (m, n >= 1) of int32",
		"accumulators c (row stride ldc elements). Pointers are at column 0 of the",
		"block (row 0 for res and the output); strides are in elements. flags: 1",
		"colSum, 2 bias, 4 GELU, 8 residual, 16 u8 output (else f32).")
	flags := g.load("flags")
	epilogueDispatch(g, consts, tailMasks, flags, 0, 0)
}

func epilogueDispatch(g *gen, consts *constTable, tailMasks operand.Mem, flags reg.GPVirtual, bit, set int) {
	if bit == epiFlagCount {
		epilogueVariant(g, consts, tailMasks, set)
		g.VZEROUPPER()
		g.RET()
		return
	}
	on := g.label("epi_flag")
	g.TESTQ(operand.U32(1<<bit), flags)
	g.JNZ(operand.LabelRef(on))
	epilogueDispatch(g, consts, tailMasks, flags, bit+1, set)
	g.Label(on)
	epilogueDispatch(g, consts, tailMasks, flags, bit+1, set|1<<bit)
}

// epilogueVariant emits the row and column loops for one flag set. Every
// 16-column chunk runs under the opmask k: all ones, or the tail mask for
// the last chunk, so loads never touch memory past column n.
func epilogueVariant(g *gen, consts *constTable, tailMasks operand.Mem, flags int) {
	has := func(f int) bool { return flags&f != 0 }

	cRow := g.load("c")
	scale := g.load("scale")
	n := g.load("n")
	rows := g.load("m")
	var colSum, bias, resRow, outRow reg.GPVirtual
	var zAZ reg.VecVirtual
	if has(epiColSum) {
		colSum = g.load("colSum")
		zAZ = g.ZMM()
		g.VPBROADCASTD(g.load32("aZero"), zAZ)
	}
	if has(epiBias) {
		bias = g.load("bias")
	}
	if has(epiResidual) {
		resRow = g.load("res")
	}
	var zInv, zZP, zZero reg.VecVirtual
	if has(epiU8) {
		outRow = g.load("outU8")
		zInv = g.ZMM()
		inv := g.XMM()
		g.MOVSS(g.paramAddr("invScale"), inv)
		g.VBROADCASTSS(inv, zInv)
		zZP = g.ZMM()
		g.VPBROADCASTD(g.load32("outZero"), zZP)
	} else {
		outRow = g.load("outF32")
	}
	if has(epiU8) || has(epiGelu) {
		zZero = g.ZMM()
		g.zeroVec(zZero)
	}
	var zOne reg.VecVirtual
	if has(epiGelu) {
		zOne = g.ZMM()
		g.VBROADCASTSS(consts.f32(1), zOne)
	}

	// Tail mask: the low ((n-1)%16)+1 bits, so 0xFFFF when 16 divides n.
	tail := g.GP64()
	g.LEAQ(operand.Mem{Base: n, Disp: -1}, tail)
	g.ANDQ(operand.U8(15), tail)
	tab := g.GP64()
	g.LEAQ(tailMasks, tab) // RIP-relative addresses take no index
	g.MOVL(operand.Mem{Base: tab, Index: tail, Scale: 4}, tail.As32())

	rowLoop, colLoop := g.label("epi_row"), g.label("epi_col")
	g.Label(rowLoop)
	j := g.GP64()
	g.XORQ(j, j)
	g.Label(colLoop)
	// k = all ones, or the tail mask when fewer than 16 columns are left.
	left := g.GP64()
	g.MOVQ(n, left)
	g.SUBQ(j, left)
	mask := g.GP64()
	g.MOVL(operand.U32(0xFFFF), mask.As32())
	g.CMPQ(left, operand.U8(16))
	g.CMOVQLT(tail, mask)
	k := g.K()
	g.KMOVW(mask.As32(), k)

	col4 := func(base reg.GPVirtual) operand.Mem { return operand.Mem{Base: base, Index: j, Scale: 4} }

	acc := g.ZMM()
	g.VMOVDQU32_Z(col4(cRow), k, acc)
	if has(epiColSum) {
		cs := g.ZMM()
		g.VMOVDQU32_Z(col4(colSum), k, cs)
		g.VPMULLD(cs, zAZ, cs)
		g.VPSUBD(cs, acc, acc) // acc - aZero*colSum
	}
	v := g.ZMM()
	g.VCVTDQ2PS(acc, v)
	s := g.ZMM()
	g.VMOVUPS_Z(col4(scale), k, s)
	g.VMULPS(s, v, v)
	if has(epiBias) {
		bz := g.ZMM()
		g.VMOVUPS_Z(col4(bias), k, bz)
		g.VADDPS(bz, v, v)
	}
	if has(epiGelu) {
		v = geluZMM(g, consts, v, zOne, zZero)
	}
	if has(epiResidual) {
		rz := g.ZMM()
		g.VMOVUPS_Z(col4(resRow), k, rz)
		g.VADDPS(rz, v, v)
	}
	if has(epiU8) {
		t := g.ZMM()
		g.VMULPS(zInv, v, t)
		g.VMAXPS_BCST(consts.f32(-quantClamp), t, t) // maxps(t, -clamp)
		g.VMINPS_BCST(consts.f32(quantClamp), t, t)  // minps(t, clamp)
		q := g.ZMM()
		g.VCVTPS2DQ(t, q) // round to nearest even (MXCSR default)
		g.VPADDD(zZP, q, q)
		g.VPMAXSD(zZero, q, q)
		g.VPMINSD_BCST(consts.u32(255), q, q)
		g.VPMOVDB(q, k, operand.Mem{Base: outRow, Index: j, Scale: 1})
	} else {
		g.VMOVUPS(v, k, col4(outRow))
	}

	g.ADDQ(operand.U8(16), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(colLoop))

	// Next row.
	advance := func(p reg.GPVirtual, stride string, shift uint8) {
		s := g.load(stride)
		if shift > 0 {
			g.SHLQ(operand.U8(shift), s)
		}
		g.ADDQ(s, p)
	}
	advance(cRow, "ldc", 2)
	if has(epiResidual) {
		advance(resRow, "resStride", 2)
	}
	if has(epiU8) {
		advance(outRow, "outStride", 0)
	} else {
		advance(outRow, "outStride", 2)
	}
	g.DECQ(rows)
	g.JNZ(operand.LabelRef(rowLoop))
}

// geluZMM emits geluF32 of runtime/qgemm/epilogue.go on 16 lanes and
// returns the register holding the result.
func geluZMM(g *gen, consts *constTable, x, zOne, zZero reg.VecVirtual) reg.VecVirtual {
	u := g.ZMM()
	g.VPANDD_BCST(consts.u32(0x7FFFFFFF), x, u) // |x|
	uc := g.ZMM()
	g.VMINPS_BCST(consts.f32(geluUMax), u, uc) // minps(u, uMax)
	d := g.ZMM()
	g.VMULPS_BCST(consts.f32(geluTScale), uc, d)
	g.VADDPS_BCST(consts.f32(1), d, d)
	t := g.ZMM()
	g.VDIVPS(d, zOne, t) // t = 1 / (uc*tScale + 1)
	p := g.ZMM()
	g.VBROADCASTSS(consts.f32(geluP[0]), p)
	for _, c := range geluP[1:] {
		g.VMULPS(t, p, p)
		g.VADDPS_BCST(consts.f32(c), p, p)
	}
	uh := g.ZMM()
	g.VPANDD_BCST(consts.u32(geluHiMask), uc, uh)
	a := g.ZMM()
	g.VMULPS(uh, uh, a)
	g.VMULPS_BCST(consts.f32(-0.5), a, a) // a = (uh*uh) * -0.5, exact
	lo := g.ZMM()
	g.VSUBPS(uh, uc, lo) // uc - uh
	hi := g.ZMM()
	g.VADDPS(uh, uc, hi) // uc + uh
	b := g.ZMM()
	g.VMULPS(hi, lo, b)
	g.VMULPS_BCST(consts.f32(-0.5), b, b)
	g.VADDPS(p, b, b) // b = ((uc-uh)*(uc+uh))*-0.5 + p
	e := exp2partZMM(g, consts, a, b)
	q := g.ZMM()
	g.VMULPS_BCST(consts.f32(0.5), t, q)
	g.VMULPS(e, q, q) // q = (t*0.5) * e
	big := g.K()
	g.VCMPPS_BCST(operand.U8(0x1E), consts.f32(geluUMax), u, big) // u > uMax (GT_OQ)
	g.VBLENDMPS(zZero, q, big, q)                                 // q = 0 there
	omq := g.ZMM()
	g.VSUBPS(q, zOne, omq) // 1 - q
	pos := g.K()
	g.VCMPPS(operand.U8(0x1D), zZero, x, pos) // x >= 0 (GE_OQ)
	phi := g.ZMM()
	g.VBLENDMPS(omq, q, pos, phi)
	r := g.ZMM()
	g.VMULPS(phi, x, r)
	return r
}

// exp2partZMM emits exp2part of runtime/qgemm/epilogue.go.
func exp2partZMM(g *gen, consts *constTable, a, b reg.VecVirtual) reg.VecVirtual {
	s := g.ZMM()
	g.VADDPS(b, a, s)
	f := g.ZMM()
	g.VMULPS_BCST(consts.f32(expLog2E), s, f)
	ki := g.ZMM()
	g.VCVTPS2DQ(f, ki) // round to nearest even
	kf := g.ZMM()
	g.VCVTDQ2PS(ki, kf)
	h := g.ZMM()
	g.VMULPS_BCST(consts.f32(expLn2Hi), kf, h)
	r := g.ZMM()
	g.VSUBPS(h, a, r) // a - k*ln2Hi (exact)
	g.VADDPS(b, r, r)
	l := g.ZMM()
	g.VMULPS_BCST(consts.f32(expLn2Lo), kf, l)
	g.VSUBPS(l, r, r) // r - k*ln2Lo
	p := g.ZMM()
	g.VBROADCASTSS(consts.f32(expC[0]), p)
	for _, c := range expC[1:] {
		g.VMULPS(r, p, p)
		g.VADDPS_BCST(consts.f32(c), p, p)
	}
	for i := 0; i < 2; i++ {
		g.VMULPS(r, p, p)
		g.VADDPS_BCST(consts.f32(1), p, p)
	}
	g.VPADDD_BCST(consts.u32(127), ki, ki)
	g.VPSLLD(operand.U8(23), ki, ki) // 2^k
	res := g.ZMM()
	g.VMULPS(ki, p, res)
	return res
}

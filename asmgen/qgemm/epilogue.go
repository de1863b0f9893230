package main

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/geluavo"
)

// The AVX-512 epilogue mirrors runtime/qgemm/epilogue.go operation for
// operation (same order, same constants; GELU is internal/gelu's, emitted
// by asmgen/geluavo), so that its output has the same bits as epilogueGo.
// Keep the two in step; the runtime test TestEpilogueAVX512MatchesGo
// compares them.

// Flag bits of the epilogue's flags argument (runtime/qgemm/epilogue_amd64.go).
const (
	epiColSum    = 1 << iota // subtract aZero*colSum
	epiBias                  // add bias
	epiGelu                  // apply GELU
	epiResidual              // add the residual
	epiU8                    // quantize to u8 (else store f32)
	epiRow                   // per-row zero point (replacing aZero) and scale: dynamic quantisation
	epiFlagCount = 6
)

// epiUnroll is the number of 16-column chunks per column step (at most 4:
// their opmasks are cut from one 64-bit mask).
const epiUnroll = 3

const epilogueSig = "func(c *int32, ldc int, m int, n int, colSum *int32, aZero int32, rowZero *int32, scale *float32, rowScale *float32, bias *float32, res *float32, resStride int, outF32 *float32, outU8 *uint8, outStride int, invScale float32, outZero int32, flags int)"

// quantClamp is runtime/qgemm's (epilogue.go): v*OutInvScale is clamped
// to [-quantClamp, quantClamp] before rounding.
const quantClamp float32 = 65536

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
	var colMasks operand.Mem
	consts := newConstTable(g, "epilogueConsts")
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	// Pin the table's contents in a fixed order so that regenerating gives
	// the same file.
	for _, v := range []float32{quantClamp, -quantClamp} {
		consts.f32(v)
	}
	consts.frozen = true
	geluTable := geluavo.NewTable(g.Context, "epilogueGelu")

	// colMasks[i] = 1<<i - 1: the opmask bits of a step with i columns left.
	colMasks = g.StaticGlobal("epilogueColMasks")
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	for i := 0; i <= 16*epiUnroll; i++ {
		g.AddDatum(8*i, operand.U64(uint64(1)<<i-1)) // i = 64: wraps to all ones
	}

	g.Function("epilogueAVX512Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr(epilogueSig)
	g.Pragma("noescape")
	g.Doc("epilogueAVX512Asm applies the epilogue to an m x n block (m, n >= 1) of int32",
		"accumulators c (row stride ldc elements). Pointers are at column 0 of the",
		"block (row 0 for res, the output, rowZero and rowScale); strides are in",
		"elements. flags: 1 colSum, 2 bias, 4 GELU, 8 residual, 16 u8 output (else",
		"f32), 32 per-row zero point rowZero[i] (replacing aZero) and scale rowScale[i].")
	flags := g.load("flags")
	epilogueDispatch(g, consts, geluTable, colMasks, flags, 0, 0)
}

func epilogueDispatch(g *gen, consts *constTable, geluTable geluavo.Table, colMasks operand.Mem, flags reg.GPVirtual, bit, set int) {
	if bit == epiFlagCount {
		epilogueVariant(g, consts, geluTable, colMasks, set)
		g.VZEROUPPER()
		g.RET()
		return
	}
	on := g.label("epi_flag")
	g.TESTQ(operand.U32(1<<bit), flags)
	g.JNZ(operand.LabelRef(on))
	epilogueDispatch(g, consts, geluTable, colMasks, flags, bit+1, set)
	g.Label(on)
	epilogueDispatch(g, consts, geluTable, colMasks, flags, bit+1, set|1<<bit)
}

// epilogueVariant emits the row and column loops for one flag set. Every
// 16-column chunk runs under the opmask k: all ones, or the tail mask for
// the last chunk, so loads never touch memory past column n.
func epilogueVariant(g *gen, consts *constTable, geluTable geluavo.Table, colMasks operand.Mem, flags int) {
	has := func(f int) bool { return flags&f != 0 }

	cRow := g.load("c")
	scale := g.load("scale")
	n := g.load("n")
	rows := g.load("m")
	var colSum, bias, resRow, outRow, rowZero, rowScale reg.GPVirtual
	var zAZ reg.VecVirtual
	if has(epiColSum) {
		colSum = g.load("colSum")
		zAZ = g.ZMM()
		if !has(epiRow) {
			g.VPBROADCASTD(g.load32("aZero"), zAZ)
		}
	}
	if has(epiRow) {
		rowScale = g.load("rowScale")
		if has(epiColSum) {
			rowZero = g.load("rowZero")
		}
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
	var gelu *geluavo.Eval
	if has(epiGelu) {
		gelu = geluTable.Load(g.Context) // the coefficient tables stay in registers
	}

	// Each column step covers epiUnroll chunks of 16 columns (independent
	// dependency chains, for the long GELU ones). Their opmasks come from
	// one 64-bit mask of the min(n-j, 16*epiUnroll) low bits, so chunks
	// past column n get an empty mask: masked-out lanes are neither read
	// (no fault) nor written.
	tab := g.GP64()
	g.LEAQ(colMasks, tab) // RIP-relative addresses take no index

	rowLoop, colLoop := g.label("epi_row"), g.label("epi_col")
	g.Label(rowLoop)
	if has(epiRow) && has(epiColSum) {
		g.VPBROADCASTD(operand.Mem{Base: rowZero}, zAZ) // this row's zero point
	}
	j := g.GP64()
	g.XORQ(j, j)
	g.Label(colLoop)
	left := g.GP64()
	g.MOVQ(n, left)
	g.SUBQ(j, left)
	width := g.GP64()
	g.MOVQ(operand.U32(16*epiUnroll), width)
	g.CMPQ(left, width)
	g.CMOVQLT(left, width)
	bits := g.GP64()
	g.MOVQ(operand.Mem{Base: tab, Index: width, Scale: 8}, bits)
	kAll := g.K()
	g.KMOVQ(bits, kAll)

	r := epiRegs{
		j: j, cRow: cRow, scale: scale, rowScale: rowScale, colSum: colSum, bias: bias, resRow: resRow, outRow: outRow,
		zAZ: zAZ, zInv: zInv, zZP: zZP, zZero: zZero,
	}
	ks := make([]reg.OpmaskVirtual, epiUnroll)
	vs := make([]reg.VecVirtual, epiUnroll)
	for u := range ks {
		ks[u] = kAll
		if u > 0 {
			ks[u] = g.K()
			g.KSHIFTRQ(operand.U8(16*u), kAll, ks[u])
		}
		vs[u] = epilogueLoad(g, flags, u, ks[u], r)
	}
	if gelu != nil {
		// Emitted interleaved, step by step, so the chunks' chains overlap.
		vs = gelu.Emit(g.Context, vs, zZero)
	}
	for u := range ks {
		epilogueStore(g, consts, flags, u, ks[u], r, vs[u])
	}

	g.ADDQ(operand.U8(16*epiUnroll), j)
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
	if has(epiRow) {
		g.ADDQ(operand.U8(4), rowScale)
		if has(epiColSum) {
			g.ADDQ(operand.U8(4), rowZero)
		}
	}
	g.DECQ(rows)
	g.JNZ(operand.LabelRef(rowLoop))
}

// epiRegs are the registers an epilogue chunk reads.
type epiRegs struct {
	j, cRow, scale, rowScale, colSum, bias, resRow, outRow reg.GPVirtual
	zAZ, zInv, zZP, zZero                                  reg.VecVirtual
}

// col4 addresses 4-byte column j+16u of the row at base.
func (r epiRegs) col4(base reg.GPVirtual, u int) operand.Mem {
	return operand.Mem{Base: base, Index: r.j, Scale: 4, Disp: 64 * u}
}

// epilogueLoad emits the part of chunk u (columns j+16u .. j+16u+15,
// under opmask k) before the activation and returns v.
func epilogueLoad(g *gen, flags, u int, k reg.OpmaskVirtual, r epiRegs) reg.VecVirtual {
	has := func(f int) bool { return flags&f != 0 }
	acc := g.ZMM()
	g.VMOVDQU32_Z(r.col4(r.cRow, u), k, acc)
	if has(epiColSum) {
		cs := g.ZMM()
		g.VMOVDQU32_Z(r.col4(r.colSum, u), k, cs)
		g.VPMULLD(cs, r.zAZ, cs)
		g.VPSUBD(cs, acc, acc) // acc - aZero*colSum
	}
	v := g.ZMM()
	g.VCVTDQ2PS(acc, v)
	s := g.ZMM()
	g.VMOVUPS_Z(r.col4(r.scale, u), k, s)
	g.VMULPS(s, v, v)
	if has(epiRow) {
		g.VMULPS_BCST(operand.Mem{Base: r.rowScale}, v, v) // v * rowScale[i]
	}
	if has(epiBias) {
		bz := g.ZMM()
		g.VMOVUPS_Z(r.col4(r.bias, u), k, bz)
		g.VADDPS(bz, v, v)
	}
	return v
}

// epilogueStore emits the part of chunk u after the activation.
func epilogueStore(g *gen, consts *constTable, flags, u int, k reg.OpmaskVirtual, r epiRegs, v reg.VecVirtual) {
	has := func(f int) bool { return flags&f != 0 }
	if has(epiResidual) {
		rz := g.ZMM()
		g.VMOVUPS_Z(r.col4(r.resRow, u), k, rz)
		g.VADDPS(rz, v, v)
	}
	if has(epiU8) {
		t := g.ZMM()
		g.VMULPS(r.zInv, v, t)
		g.VMAXPS_BCST(consts.f32(-quantClamp), t, t) // maxps(t, -clamp)
		g.VMINPS_BCST(consts.f32(quantClamp), t, t)  // minps(t, clamp)
		q := g.ZMM()
		g.VCVTPS2DQ(t, q) // round to nearest even (MXCSR default)
		g.VPADDD(r.zZP, q, q)
		g.VPMAXSD(r.zZero, q, q)
		// q >= 0 now: the unsigned saturation of VPMOVUSDB is min(q, 255).
		g.VPMOVUSDB(q, k, operand.Mem{Base: r.outRow, Index: r.j, Scale: 1, Disp: 16 * u})
	} else {
		g.VMOVUPS(v, k, r.col4(r.outRow, u))
	}
}

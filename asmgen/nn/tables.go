package main

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/sqc-dev/sqc/asmgen/expavo"
	"github.com/sqc-dev/sqc/internal/expf"
)

// Constants of runtime/qgemm (epilogue.go: the u8 quantisation every
// quantiser shares) and runtime/nn. Exp's are internal/expf's (pinned in
// the table from asmgen/expavo's lists), GELU's internal/gelu's, in their
// own table (asmgen/geluavo). Kept in step with those files by the runtime
// tests, which compare every kernel with its Go version bit for bit.
const (
	quantClamp float32 = 65536
	s8Clamp    float32 = 127 // runtime/nn quantS8: symmetric s8 codes
)

// constTable is a read-only DATA section of 4- and 8-byte constants, used
// through embedded broadcasts (AVX-512), and of 32-byte vectors of eight
// copies of a float32, used as the m256 operands of the AVX2 kernels,
// which have no embedded broadcast.
type constTable struct {
	mem    operand.Mem
	off    map[constKey]int
	size   int
	g      *gen
	frozen bool // no more constants: another DATA section is active now
}

// constKey is a constant's bits and its size in bytes.
type constKey struct {
	bits uint64
	size int
}

// get returns the address of the constant v of the given size (4 or 8
// bytes, or 32 for eight copies of the 4-byte v), adding it if new.
func (t *constTable) get(v uint64, size int) operand.Mem {
	key := constKey{v, size}
	o, ok := t.off[key]
	if !ok {
		if t.frozen {
			panic(fmt.Sprintf("constant %#x (%d bytes) is not in the table", v, size))
		}
		o = (t.size + size - 1) / size * size
		t.size = o + size
		t.off[key] = o
		switch size {
		case 4:
			t.g.AddDatum(o, operand.U32(uint32(v)))
		case 8:
			t.g.AddDatum(o, operand.U64(v))
		default:
			for i := 0; i < size; i += 4 {
				t.g.AddDatum(o+i, operand.U32(uint32(v)))
			}
		}
	}
	return t.mem.Offset(o)
}

// F32, F32x8 and U32x8 give asmgen/expavo the table (expavo.Consts).
func (t *constTable) F32(v float32) operand.Mem   { return t.f32(v) }
func (t *constTable) F32x8(v float32) operand.Mem { return t.f32x8(v) }
func (t *constTable) U32x8(v uint32) operand.Mem  { return t.u32x8(v) }

func (t *constTable) u32(v uint32) operand.Mem  { return t.get(uint64(v), 4) }
func (t *constTable) f32(v float32) operand.Mem { return t.u32(math.Float32bits(v)) }
func (t *constTable) f64(v float64) operand.Mem { return t.get(math.Float64bits(v), 8) }

// u32x8 and f32x8 address eight copies of v (32 bytes).
func (t *constTable) u32x8(v uint32) operand.Mem  { return t.get(uint64(v), 32) }
func (t *constTable) f32x8(v float32) operand.Mem { return t.u32x8(math.Float32bits(v)) }

// genTables emits the constant table and the column-mask table. The
// table's contents are pinned here, in a fixed order, so that regenerating
// gives the same file.
func genTables(g *gen) {
	t := &constTable{mem: g.StaticGlobal("nnConsts"), off: map[constKey]int{}, g: g}
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	for _, v := range []float64{1} {
		t.f64(v)
	}
	for _, v := range []float32{0, 1, expf.Log2E, expf.Ln2Hi, expf.Ln2Lo, expf.Min, expf.Max, quantClamp, -quantClamp, float32(math.Inf(1))} {
		t.f32(v)
	}
	for _, v := range expf.Poly {
		t.f32(v)
	}
	for _, v := range []uint32{127, 255} {
		t.u32(v)
	}
	for _, v := range []float32{s8Clamp, -s8Clamp, 255} { // after the older constants: their offsets stay
		t.f32(v)
	}
	// |x| as a bit mask (absMaxColsAsm); then packQueries16Asm's u8-to-s8
	// flip and its byte and word ones.
	for _, v := range []uint32{0x7fffffff, 0x80808080, 0x01010101, 0x00010001} {
		t.u32(v)
	}
	for _, v := range expavo.Scalars() { // those not pinned above: after them, so their offsets stay
		t.u32(v)
	}
	for _, v := range expavo.Vectors() {
		t.u32x8(v)
	}
	t.u32x8(0x7fffffff) // |x| as a bit mask (absMaxColsAVX2Asm)
	t.frozen = true
	g.consts = t

	// colMasks[i] = 1<<i - 1: the opmask bits of a step with i columns left.
	g.colMasks = g.StaticGlobal("nnColMasks")
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	for i := 0; i <= 64; i++ {
		g.AddDatum(8*i, operand.U64(uint64(1)<<i-1)) // i = 64: wraps to all ones
	}

	g.iota16 = g.StaticGlobal("nnIota16")
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	for i := range 16 {
		g.AddDatum(4*i, operand.U32(uint32(i)))
	}
}

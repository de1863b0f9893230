package expavo

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
)

// Table is a read-only DATA section of every constant the emitters read
// (Scalars, then Vectors), for a generator that has no constant table of
// its own (asmgen/qgemm). It implements Consts.
type Table struct {
	mem     operand.Mem
	scalars map[uint32]int // byte offsets
	vectors map[uint32]int
}

// NewTable declares the table as the static global name. It starts a new
// DATA section: call it before a function, not while the caller is still
// adding data to another global.
func NewTable(ctx *build.Context, name string) *Table {
	t := &Table{mem: ctx.StaticGlobal(name), scalars: map[uint32]int{}, vectors: map[uint32]int{}}
	ctx.DataAttributes(attr.RODATA | attr.NOPTR)
	vs := Vectors()
	at := 32 * len(vs) // the vectors first, 32-byte aligned from the start
	for i, v := range vs {
		t.vectors[v] = 32 * i
		for b := 0; b < 32; b += 4 {
			ctx.AddDatum(32*i+b, operand.U32(v))
		}
	}
	for _, v := range Scalars() {
		t.scalars[v] = at
		ctx.AddDatum(at, operand.U32(v))
		at += 4
	}
	return t
}

// F32 implements Consts.
func (t *Table) F32(v float32) operand.Mem { return t.at(t.scalars, math.Float32bits(v)) }

// F32x8 implements Consts.
func (t *Table) F32x8(v float32) operand.Mem { return t.U32x8(math.Float32bits(v)) }

// U32x8 implements Consts.
func (t *Table) U32x8(v uint32) operand.Mem { return t.at(t.vectors, v) }

func (t *Table) at(offsets map[uint32]int, v uint32) operand.Mem {
	o, ok := offsets[v]
	if !ok {
		panic(fmt.Sprintf("expavo: constant %#x is not in the table", v))
	}
	return t.mem.Offset(o)
}

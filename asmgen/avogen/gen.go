package avogen

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Gen is an avo build context with the helpers every sqc generator uses:
// unique labels, argument loads and the vector zeroing idiom. Generators
// embed it (asmgen/kernels.Builder does, and through it asmgen/qgemm;
// asmgen/nn directly), so that a file draws its labels from one counter.
type Gen struct {
	*build.Context
	labels int
}

// NewGen returns a Gen emitting into ctx.
func NewGen(ctx *build.Context) *Gen { return &Gen{Context: ctx} }

// NewLabel returns a fresh label name starting with prefix (place it with
// Label).
func (g *Gen) NewLabel(prefix string) string {
	g.labels++
	return fmt.Sprintf("%s_%d", prefix, g.labels)
}

// ParamAddr returns the memory operand of the named argument of the active
// function (for instructions that take it straight from memory).
func (g *Gen) ParamAddr(name string) operand.Mem {
	b, err := g.Param(name).Resolve()
	if err != nil {
		panic(fmt.Sprintf("parameter %s: %v", name, err))
	}
	return b.Addr
}

// Load loads the named integer or pointer argument into a new register.
func (g *Gen) Load(name string) reg.GPVirtual {
	r := g.GP64()
	g.Context.Load(g.Param(name), r)
	return r
}

// Load32 loads the named 4-byte argument into a new 32-bit register.
func (g *Gen) Load32(name string) reg.GPVirtual {
	r := g.GP32()
	g.MOVL(g.ParamAddr(name), r)
	return r
}

// ZeroVec zeroes the vector register z with VPXORD z, z, z (VPXOR for
// ymm), marked as not reading z: avo does not know the zeroing idiom and
// would otherwise keep z live from the function entry.
func (g *Gen) ZeroVec(z reg.VecVirtual) {
	op := "VPXORD"
	if z.Size() == 32 {
		op = "VPXOR"
	}
	g.Instruction(&ir.Instruction{
		Opcode: op, Operands: []operand.Op{z, z, z},
		Inputs: []operand.Op{z, z}, Outputs: []operand.Op{z}, CancellingInputs: true,
	})
}

// Interleaved emits the same step on n independent chunks, one step at
// a time for all of them, so that their dependency chains overlap (the
// form of asmgen/geluavo's and asmgen/expavo's vector functions).
type Interleaved struct {
	ctx *build.Context
	n   int
}

// Interleave returns the interleaver of n chunks emitting into ctx.
func Interleave(ctx *build.Context, n int) Interleaved { return Interleaved{ctx, n} }

// ZMMs returns n new zmm registers, one per chunk.
func (c Interleaved) ZMMs() []reg.VecVirtual {
	v := make([]reg.VecVirtual, c.n)
	for i := range v {
		v[i] = c.ctx.ZMM()
	}
	return v
}

// Each runs f for every chunk i in order.
func (c Interleaved) Each(f func(i int)) {
	for i := range c.n {
		f(i)
	}
}

// Command nn generates the amd64 assembly of sqc's runtime/nn package: the
// AVX-512 inner loops of multi-head attention (transposes, q·k scores,
// softmax, P·V), of LayerNorm (row statistics and normalisation, with the
// optional u8 output), of activation quantisation and of the standalone
// erf-GELU.
//
// It is run by `go generate ./runtime/nn/`:
//
//	go run ../../asmgen/nn -out kernels_amd64.s -stubs stubs_amd64.go -pkg nn
//
// Every kernel computes the same bits as the pure-Go kernel of runtime/nn it
// replaces: the same float operations, rounded the same way, in the same
// order per output, and no fused multiply-add (the Go kernels round every
// product explicitly). Where the Go code reduces sequentially, the
// assembly vectorises across independent outputs (query rows of
// attention, rows of LayerNorm) instead of reordering a sum.
package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/avogen"
)

// generatorCommand is how go:generate runs this program from runtime/nn;
// it is recorded in the "Code generated" header so that the header does
// not depend on where the generator binary was built.
const generatorCommand = "go run ../../asmgen/nn"

func main() { avogen.Main("nn", generatorCommand, "nn", generate) }

// generate builds every function and compiles the file with avo's passes.
func generate() (*ir.File, error) {
	g := newGen()
	g.ConstraintExpr("amd64,!noasm") // amd64 && !noasm, in the old syntax avo parses

	genTables(g)
	genAttention(g)
	genLayerNorm(g)
	genQuantize(g)
	genGelu(g)

	return avogen.Compile(g.Context)
}

// gen wraps avo's build context with a generator of unique labels and the
// read-only tables every kernel shares.
type gen struct {
	*build.Context
	labels int

	consts   *constTable
	colMasks operand.Mem // colMasks[i] (8 bytes each) = 1<<i - 1, i = 0..64
}

func newGen() *gen { return &gen{Context: build.NewContext()} }

// label returns a fresh label name starting with prefix.
func (g *gen) label(prefix string) string {
	g.labels++
	return fmt.Sprintf("%s_%d", prefix, g.labels)
}

// paramAddr returns the memory operand of the named argument of the active
// function (for instructions that take it straight from memory).
func (g *gen) paramAddr(name string) operand.Mem {
	b, err := g.Param(name).Resolve()
	if err != nil {
		panic(fmt.Sprintf("parameter %s: %v", name, err))
	}
	return b.Addr
}

// load loads the named integer or pointer argument into a new register.
func (g *gen) load(name string) reg.GPVirtual {
	r := g.GP64()
	g.Load(g.Param(name), r)
	return r
}

// load32 loads the named 4-byte argument into a new 32-bit register.
func (g *gen) load32(name string) reg.GPVirtual {
	r := g.GP32()
	g.MOVL(g.paramAddr(name), r)
	return r
}

// broadcastParam broadcasts the named 4-byte float argument to all lanes
// of a new zmm register.
func (g *gen) broadcastParam(name string) reg.VecVirtual {
	z := g.ZMM()
	g.VBROADCASTSS(g.paramAddr(name), z)
	return z
}

// broadcastParam64 broadcasts the named 8-byte float argument to the 8
// lanes of a new zmm register.
func (g *gen) broadcastParam64(name string) reg.VecVirtual {
	z := g.ZMM()
	g.VBROADCASTSD(g.paramAddr(name), z)
	return z
}

// zeroVec zeroes the vector register z with VPXORD z, z, z, marked as not
// reading z: avo does not know the AVX-512 zeroing idiom and would
// otherwise keep z live from the function entry.
func (g *gen) zeroVec(z reg.VecVirtual) {
	g.Instruction(&ir.Instruction{
		Opcode:           "VPXORD",
		Operands:         []operand.Op{z, z, z},
		Inputs:           []operand.Op{z, z},
		Outputs:          []operand.Op{z},
		CancellingInputs: true,
	})
}

// zeroZMM returns a new zeroed zmm register.
func (g *gen) zeroZMM() reg.VecVirtual {
	z := g.ZMM()
	g.zeroVec(z)
	return z
}

// maskOf loads into a new opmask register the low-bits mask of the width
// held in w (0 <= w <= 64): colMasks[w] = 1<<w - 1.
func (g *gen) maskOf(w reg.GPVirtual) reg.OpmaskVirtual {
	tab := g.GP64()
	g.LEAQ(g.colMasks, tab) // RIP-relative addresses take no index
	bits := g.GP64()
	g.MOVQ(operand.Mem{Base: tab, Index: w, Scale: 8}, bits)
	k := g.K()
	g.KMOVQ(bits, k)
	return k
}

// minConst returns a new register holding min(x, c).
func (g *gen) minConst(x reg.GPVirtual, c int) reg.GPVirtual {
	w := g.GP64()
	g.MOVQ(operand.U32(c), w)
	g.CMPQ(x, w)
	g.CMOVQLT(x, w)
	return w
}

// forEach runs f for i in [0, n).
func forEach(n int, f func(i int)) {
	for i := range n {
		f(i)
	}
}

// Command nn generates the amd64 assembly of sqc's runtime/nn package: the
// AVX-512 inner loops of multi-head attention (transposes, q·k scores,
// softmax, P·V), of LayerNorm (row statistics and normalisation, with the
// optional u8 output), of activation quantisation and of the standalone
// erf-GELU and of the float32 dense layer, and the AVX2 forms of all of them but attention's transposes.
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
	genSilu(g)
	genRotary(g)
	genAttentionAVX2(g)
	tab := genLayerNormAVX2(g)
	genPackQueries(g)
	genPackValues(g)
	genSymScales(g)
	genPackValuesAVX2(g)
	genPackQueriesAVX2(g)
	genProbsAVX2(g, tab)
	genProbsAVX512(g, tab)
	genLinear(g)
	genLinearAVX2(g)
	genRelGather(g)

	return avogen.Compile(g.Context)
}

// gen is avogen's Gen (avo's build context with unique labels, argument
// loads and the zeroing idiom) with the read-only tables every kernel
// shares.
type gen struct {
	*avogen.Gen

	consts   *constTable
	colMasks operand.Mem // colMasks[i] (8 bytes each) = 1<<i - 1, i = 0..64
	iota16   operand.Mem // 0, 1, ..., 15 as 4-byte integers (a zmm's lane numbers)
}

func newGen() *gen { return &gen{Gen: avogen.NewGen(build.NewContext())} }

// broadcastParam broadcasts the named 4-byte float argument to all lanes
// of a new zmm register.
func (g *gen) broadcastParam(name string) reg.VecVirtual {
	z := g.ZMM()
	g.VBROADCASTSS(g.ParamAddr(name), z)
	return z
}

// zeroZMM returns a new zeroed zmm register.
func (g *gen) zeroZMM() reg.VecVirtual {
	z := g.ZMM()
	g.ZeroVec(z)
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

// Command qgemm generates the amd64 assembly of sqc's runtime/qgemm package:
// the AMX, AVX512-VNNI and AVX2 u8 x s8 -> s32 micro-kernels, the AVX-512
// and AVX2 epilogues and the register-only peak loops used by BenchmarkPeak.
//
// It is run by `go generate ./runtime/qgemm/`:
//
//	go run ../../asmgen/qgemm -out kernels_amd64.s -stubs stubs_amd64.go -pkg qgemm
//
// Go's assembler and avo have no AMX mnemonics, so AMX instructions are
// built as placeholder avo instructions (so that avo's register allocator
// sees their address registers) and lowered to verified BYTE encodings by a
// pass that runs after register allocation (see amxenc.go).
package main

import (
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"

	"github.com/sqc-dev/sqc/asmgen/avogen"
	"github.com/sqc-dev/sqc/asmgen/expavo"
	"github.com/sqc-dev/sqc/asmgen/kernels"
)

// generatorCommand is how go:generate runs this program from
// runtime/qgemm; it is recorded in the "Code generated" header so that the
// header does not depend on where the generator binary was built.
const generatorCommand = "go run ../../asmgen/qgemm"

func main() { avogen.Main("qgemm", generatorCommand, "qgemm", generate) }

// generate builds every function, compiles the file with avo's passes and
// then lowers the AMX placeholders to bytes.
func generate() (*ir.File, error) {
	g := newGen()
	g.ConstraintExpr("amd64,!noasm") // amd64 && !noasm, in the old syntax avo parses

	genAMXKernel(g, "qgemmAMX", realTiles{g}, amxEpiNone, amxPrefetchNone)
	genAMXKernel(g, "qgemmAMXEmulated", newEmuTiles(g), amxEpiNone, amxPrefetchNone)
	genAMXKernel(g, "qgemmAMXEmulatedAVX2", newEmuTilesAVX2(g), amxEpiNone, amxPrefetchNone)
	genAMXKernel(g, "qgemmAMXFused", realTiles{g}, amxEpiBlock, amxPrefetchNone)
	genAMXKernel(g, "qgemmAMXFusedEmulated", newEmuTiles(g), amxEpiBlock, amxPrefetchNone)
	genAMXKernel(g, "qgemmAMXPipelined", realTiles{g}, amxEpiPipelined, amxPrefetchNone)
	genAMXKernel(g, "qgemmAMXPipelinedEmulated", newEmuTiles(g), amxEpiPipelined, amxPrefetchNone)
	genAMXKernel(g, "qgemmAMXPipelinedPrefetch", realTiles{g}, amxEpiPipelined, amxPrefetchStep)
	genAMXKernel(g, "qgemmAMXPipelinedPrefetchEmulated", newEmuTiles(g), amxEpiPipelined, amxPrefetchStep)
	genAMXKernel(g, "qgemmAMXPipelinedPrefetchPair", realTiles{g}, amxEpiPipelined, amxPrefetchPair)
	genAMXKernel(g, "qgemmAMXPipelinedPrefetchPairEmulated", newEmuTiles(g), amxEpiPipelined, amxPrefetchPair)
	genVNNIKernel(g)
	genAVX2Kernel(g)
	genEpilogue(g)
	genPeaks(g)

	return avogen.Compile(g.Context, lowerAMX)
}

// gen is asmgen/kernels' Builder (avo's build context with unique labels,
// argument loads and the zeroing idiom), shared with the blocked GEMM
// kernels so that the whole file draws labels from one counter.
type gen struct {
	*kernels.Builder
	exp *expavo.Table // the epilogue's exp constants (genEpilogue sets it)
}

func newGen() *gen { return &gen{Builder: kernels.NewBuilder(build.NewContext())} }

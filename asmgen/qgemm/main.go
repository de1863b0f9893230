// Command qgemm generates the amd64 assembly of sqc's runtime/qgemm package:
// the AMX, AVX512-VNNI and AVX2 u8 x s8 -> s32 micro-kernels, the AVX-512
// epilogue and the register-only peak loops used by BenchmarkPeak.
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
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/kernels"
)

// generatorCommand is how go:generate runs this program from
// runtime/qgemm; it is recorded in the "Code generated" header so that the
// header does not depend on where the generator binary was built.
const generatorCommand = "go run ../../asmgen/qgemm"

func main() {
	// avo's build package registers its own flags on flag.CommandLine, so
	// this program uses a FlagSet of its own.
	fs := flag.NewFlagSet("qgemm", flag.ExitOnError)
	out := fs.String("out", "", "assembly output file")
	stubs := fs.String("stubs", "", "Go stub declarations output file")
	pkg := fs.String("pkg", "qgemm", "Go package name of the output")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on bad flags
	if *out == "" || *stubs == "" {
		fmt.Fprintln(os.Stderr, "usage: qgemm -out FILE.s -stubs FILE.go [-pkg NAME]")
		os.Exit(2)
	}
	if err := run(*out, *stubs, *pkg); err != nil {
		fmt.Fprintln(os.Stderr, "qgemm:", err)
		os.Exit(1)
	}
}

func run(out, stubs, pkg string) error {
	f, err := generate()
	if err != nil {
		return err
	}
	argv := append(strings.Fields(generatorCommand),
		"-out", filepath.Base(out), "-stubs", filepath.Base(stubs), "-pkg", pkg)
	cfg := printer.Config{Argv: argv, Pkg: pkg}
	for _, o := range []struct {
		path string
		p    printer.Printer
	}{{out, printer.NewGoAsm(cfg)}, {stubs, printer.NewStubs(cfg)}} {
		b, err := o.p.Print(f)
		if err != nil {
			return fmt.Errorf("printing %s: %w", o.path, err)
		}
		if err := os.WriteFile(o.path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// generate builds every function, compiles the file with avo's passes and
// then lowers the AMX placeholders to bytes.
func generate() (*ir.File, error) {
	g := newGen()
	g.ConstraintExpr("amd64,!noasm") // amd64 && !noasm, in the old syntax avo parses

	genAMXKernel(g, "qgemmAMX", realTiles{g})
	genAMXKernel(g, "qgemmAMXEmulated", newEmuTiles(g))
	genVNNIKernel(g)
	genAVX2Kernel(g)
	genEpilogue(g)
	genPeaks(g)

	f, err := g.Result()
	if list, ok := err.(build.ErrorList); ok {
		errs := make([]error, len(list))
		for i, e := range list {
			errs[i] = e
		}
		return nil, errors.Join(errs...)
	}
	if err != nil {
		return nil, err
	}
	// Compile each function alone first, so that an error names it.
	for _, fn := range f.Functions() {
		single := &ir.File{Sections: []ir.Section{fn}}
		if err := pass.Compile.Execute(single); err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name, err)
		}
	}
	if err := pass.Func(pass.IncludeTextFlagHeader).Execute(f); err != nil {
		return nil, err
	}
	if err := pass.FunctionPass(lowerAMX).Execute(f); err != nil {
		return nil, err
	}
	return f, nil
}

// gen is asmgen/kernels' Builder (avo's build context with unique labels,
// argument loads and the zeroing idiom), shared with the blocked GEMM
// kernels so that the whole file draws labels from one counter.
type gen struct {
	*kernels.Builder
}

func newGen() *gen { return &gen{kernels.NewBuilder(build.NewContext())} }

// paramAddr returns the memory operand of the named argument of the active
// function (for instructions that take it straight from memory).
func (g *gen) paramAddr(name string) operand.Mem {
	b, err := g.Param(name).Resolve()
	if err != nil {
		panic(fmt.Sprintf("parameter %s: %v", name, err))
	}
	return b.Addr
}

// load32 loads the named 4-byte argument into a new 32-bit register.
func (g *gen) load32(name string) reg.GPVirtual {
	r := g.GP32()
	g.MOVL(g.paramAddr(name), r)
	return r
}

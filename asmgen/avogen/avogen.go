// Package avogen is what sqc's avo generators share: compiling a build
// context into a printed-ready file with errors that name the function
// (Compile), the command-line driver of a go:generate generator that writes
// the assembly and its Go stubs (Main); avogentest.CheckUpToDate is the
// test that regenerates into a temporary directory and fails on any
// difference from the checked-in files.
package avogen

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
)

// Compile runs avo's passes over everything ctx built: each function is
// compiled alone first, so that an error names it; build errors are joined
// into one. lower, if given, runs on every function after the text flags
// header is in place (asmgen/qgemm lowers its AMX placeholders to bytes
// there, after register allocation).
func Compile(ctx *build.Context, lower ...func(*ir.Function) error) (*ir.File, error) {
	f, err := ctx.Result()
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
	for _, fn := range f.Functions() {
		single := &ir.File{Sections: []ir.Section{fn}}
		if err := pass.Compile.Execute(single); err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name, err)
		}
	}
	if err := pass.Func(pass.IncludeTextFlagHeader).Execute(f); err != nil {
		return nil, err
	}
	for _, l := range lower {
		if err := pass.FunctionPass(l).Execute(f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Main is a generator's main: it parses -out FILE.s -stubs FILE.go [-pkg
// NAME] (name is the program's name for messages, defaultPkg the -pkg
// default), calls generate and writes the assembly and the Go stubs. The
// "Code generated" header records command (how go:generate runs the
// generator, e.g. "go run ../../asmgen/nn") and the file names, not where
// the binary was built, so the output does not depend on it. It exits 2 on
// usage errors and 1 on failures.
func Main(name, command, defaultPkg string, generate func() (*ir.File, error)) {
	// avo's build package registers its own flags on flag.CommandLine, so
	// the generator uses a FlagSet of its own.
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	out := fs.String("out", "", "assembly output file")
	stubs := fs.String("stubs", "", "Go stub declarations output file")
	pkg := fs.String("pkg", defaultPkg, "Go package name of the output")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on bad flags
	if *out == "" || *stubs == "" {
		fmt.Fprintf(os.Stderr, "usage: %s -out FILE.s -stubs FILE.go [-pkg NAME]\n", name)
		os.Exit(2)
	}
	if err := write(command, *out, *stubs, *pkg, generate); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func write(command, out, stubs, pkg string, generate func() (*ir.File, error)) error {
	f, err := generate()
	if err != nil {
		return err
	}
	argv := append(strings.Fields(command), "-out", filepath.Base(out), "-stubs", filepath.Base(stubs), "-pkg", pkg)
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

// Command sqc compiles BERT-family encoders (ONNX files or HuggingFace
// directories) into SmoothQuant INT8 Go packages, and inspects, runs,
// evaluates and benchmarks them.
//
// Exit status: 0 on success, 2 for bad input (a file or flag sqc cannot
// use: the message names it), 1 for internal failures.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// usageError marks a bad command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.Run(args)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "sqc: %v\n", err)
	var ue usageError
	if errors.Is(err, compiler.ErrBadInput) || errors.Is(err, tokenizer.ErrBadInput) || errors.As(err, &ue) {
		return 2
	}
	return 1
}

func newApp(stdout, stderr io.Writer) *cli.App {
	onUsageError := func(_ *cli.Context, err error, _ bool) error {
		return usageError{err.Error()}
	}
	app := &cli.App{
		Name:           "sqc",
		Usage:          "SmoothQuant INT8 compiler for BERT-family encoders",
		Writer:         stdout,
		ErrWriter:      stderr,
		ExitErrHandler: func(*cli.Context, error) {}, // run() prints and picks the exit status
		OnUsageError:   onUsageError,
		Commands: []*cli.Command{
			demoCommand(),
			inspectCommand(),
			runCommand(),
			benchCommand(),
			rooflineCommand(),
			evalCommand(),
			compileCommand(),
		},
	}
	// A bad flag is bad input: one line on stderr, exit status 2, no
	// usage dump on stdout.
	for _, c := range app.Commands {
		c.OnUsageError = onUsageError
	}
	return app
}

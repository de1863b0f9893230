// Command sqc compiles BERT-family encoders (ONNX files or HuggingFace
// directories) into SmoothQuant INT8 Go packages, and inspects, runs,
// evaluates and benchmarks them.
//
// Exit status: 0 on success, 2 for bad input (a file or flag sqc cannot
// use: the message names it), 1 for internal failures (I/O errors, and
// bugs: a recovered panic of the command or of the INT8 engine). Either
// way sqc prints one line on stderr.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// usageError marks a bad command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		// A bug, not bad input: one line and exit status 1, rather than
		// Go's trace and status 2.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "sqc: %s: %v%s\n", compiler.ErrInternal, r, panicSite())
			code = 1
		}
	}()
	app := newApp(stdout, stderr)
	err := app.Run(args)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "sqc: %s\n", oneLine(err.Error()))
	return exitCode(err)
}

// exitCode is the exit status for a command's error: 2 for bad input (a
// file, flag or request sqc cannot use), 1 for everything else, among
// them a recovered panic of the FP32 interpreter or INT8 engine even where it is reported
// through a bad-input error.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, compiler.ErrInternal): // the FP32 interpreter's and the INT8 engine's
		return 1
	case errors.Is(err, compiler.ErrBadInput), // tokenizer.ErrBadInput too: the same sentinel
		errors.Is(err, modelrt.ErrInvalidInput), errors.As(err, &ue):
		return 2
	}
	return 1
}

// oneLine joins the lines of a multi-line message with "; ".
func oneLine(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return l == "" }), "; ")
}

// panicSite is " (at file.go:line)" for the function that panicked, when
// called from a deferred recover, or "".
func panicSite() string {
	if site := compiler.PanicSite(); site != "" {
		return " (at " + site + ")"
	}
	return ""
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
			serveCommand(),
			tokenizeCommand(),
		},
	}
	// A bad flag is bad input: one line on stderr, exit status 2, no
	// usage dump on stdout.
	for _, c := range app.Commands {
		c.OnUsageError = onUsageError
	}
	return app
}

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/reliability"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// TestExitCode: bad input exits 2, anything else 1, and an internal
// failure of the INT8 engine 1 even where a bad-input error carries it.
func TestExitCode(t *testing.T) {
	internal := fmt.Errorf("model.onnx: step #3 nn.LayerNorm (node \"ln\"): %w: index out of range", compiler.ErrInternal)
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{compiler.BadInput("model.onnx", "node x", compiler.ErrUnsupportedOp), 2},
		{fmt.Errorf("loading: %w", compiler.BadInput("ids.jsonl", "", compiler.ErrMalformed)), 2},
		{&tokenizer.InputError{Err: tokenizer.ErrEmptyVocab}, 2},
		{fmt.Errorf("batch: %w", &modelrt.InputError{Sequence: 1, Err: modelrt.ErrTokenOutOfRange}), 2},
		{usageError{"give one precision"}, 2},
		{internal, 1},
		{compiler.BadInput("model.onnx", "", internal), 1},
		{fmt.Errorf("writing package out: %w", fs.ErrPermission), 1},
		{errors.New("internal error: the passes did not reproduce the graph"), 1},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// panickingWriter panics on every write (a bug in the command's output
// path); failingWriter fails every write (a closed pipe).
type panickingWriter struct{}

func (panickingWriter) Write([]byte) (int, error) {
	var table []int
	return table[3], nil
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestRunInternalFailures: a command that panics, or fails on something
// other than its input, prints one line on stderr and exits 1 (not Go's
// trace and status 2, and not the bad-input status 2).
func TestRunInternalFailures(t *testing.T) {
	cmds, err := reliability.ValidCommands(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"sqc"}, cmds[2]...) // run --fp32 --model model.onnx --ids
	if args[1] != "run" {
		t.Fatalf("unexpected command %v", args)
	}
	for _, c := range []struct {
		name     string
		stdout   interface{ Write([]byte) (int, error) }
		mentions []string
	}{
		{"panic", panickingWriter{}, []string{"internal error", "index out of range", "exitcode_test.go:"}},
		{"error", failingWriter{}, []string{"broken pipe"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var errb strings.Builder
			code := run(args, c.stdout, &errb)
			errs := errb.String()
			if code != 1 || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "sqc: ") {
				t.Errorf("exit %d, stderr %q; want exit 1 and one line", code, errs)
			}
			for _, s := range c.mentions {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr does not mention %q: %q", s, errs)
				}
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("verify failed:\n  node a: bad\n  node b: worse\n"); got != "verify failed:; node a: bad; node b: worse" {
		t.Errorf("got %q", got)
	}
	if got := oneLine("plain  message"); got != "plain  message" {
		t.Errorf("got %q", got)
	}
}

package main

import (
	"bytes"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/internal/reliability"
)

// TestReliabilityBadInputCLI runs every case of the reliability package's
// bad-input table through the command line: exit status 2, exactly one
// line on stderr naming the file (and the tensor, node or value at
// fault), nothing on stdout, no panic.
func TestReliabilityBadInputCLI(t *testing.T) {
	for _, c := range reliability.BadInputCases() {
		t.Run(c.Name, func(t *testing.T) {
			if c.NeedsFlag != "" && !hasFlag(c.NeedsFlag) {
				t.Skipf("skipping: the CLI has no %s yet", c.NeedsFlag)
			}
			in, err := c.Build(t.TempDir())
			if err != nil {
				t.Fatalf("building the input: %v", err)
			}
			code, out, errs := runCLISafely(t, in.Args)
			t.Logf("sqc %s\n%s", strings.Join(in.Args, " "), errs)
			if code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			if out != "" {
				t.Errorf("stdout is not empty: %q", out)
			}
			if lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n"); len(lines) != 1 || errs == "" {
				t.Errorf("want one line on stderr, got %d: %q", len(lines), errs)
			}
			for _, s := range in.Mentions {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr does not mention %q", s)
				}
			}
		})
	}
}

// runCLISafely is runCLI with a panic reported as a test failure.
func runCLISafely(t *testing.T, args []string) (code int, stdout, stderr string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("sqc %s panicked: %v\n%s", strings.Join(args, " "), r, debug.Stack())
		}
	}()
	var out, errb bytes.Buffer
	code = run(append([]string{"sqc"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// hasFlag reports whether "command --flag" exists in the CLI.
func hasFlag(spec string) bool {
	cmd, flag, _ := strings.Cut(spec, " --")
	for _, c := range newApp(io.Discard, io.Discard).Commands {
		if c.Name != cmd {
			continue
		}
		for _, f := range c.Flags {
			if slices.Contains(f.Names(), flag) {
				return true
			}
		}
	}
	return false
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
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
			dir := t.TempDir()
			in, err := c.Build(dir)
			if err != nil {
				t.Fatalf("building the input: %v", err)
			}
			for _, args := range in.Commands {
				code, out, errs := runCLISafely(t, args)
				cmd := "sqc " + strings.Join(args, " ")
				t.Logf("%s\n%s", cmd, errs)
				if code != 2 {
					t.Errorf("%s: exit status %d, want 2", cmd, code)
				}
				if out != "" {
					t.Errorf("%s: stdout is not empty: %q", cmd, out)
				}
				if lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n"); len(lines) != 1 || errs == "" {
					t.Errorf("%s: want one line on stderr, got %d: %q", cmd, len(lines), errs)
				}
				mentions := in.Mentions
				if in.CommandMentions != nil {
					mentions = in.CommandMentions
				}
				for _, s := range mentions {
					if !strings.Contains(errs, s) {
						t.Errorf("%s: stderr does not mention %q", cmd, s)
					}
				}
			}
			// `sqc compile --out DIR/out` must not leave a package behind.
			if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
				t.Errorf("a failed command left %s behind", filepath.Join(dir, "out"))
			}
		})
	}
}

// TestReliabilityValidInputsCLI: the same commands on the unbroken files
// succeed, so each bad-input case fails for its own fault.
func TestReliabilityValidInputsCLI(t *testing.T) {
	cmds, err := reliability.ValidCommands(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range cmds {
		if code, out, errs := runCLISafely(t, args); code != 0 || out == "" {
			t.Errorf("sqc %s: exit status %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errs)
		}
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

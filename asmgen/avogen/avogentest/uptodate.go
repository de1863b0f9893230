// Package avogentest is the regenerate-and-diff test of packages whose
// assembly an asmgen generator writes (see asmgen/avogen).
package avogentest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CheckUpToDate is the regenerate-and-diff test of a package whose
// kernels_amd64.s and stubs_amd64.go come from the generator in directory
// generator (relative to the test's package, e.g. "../../asmgen/nn"): it
// builds the generator for the host, runs it into a temporary directory
// with -pkg pkg and fails on any difference from the checked-in files, or
// a missing "Code generated ... DO NOT EDIT." header. It skips when the go
// command is not on PATH.
func CheckUpToDate(t *testing.T, generator, pkg string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH; cannot build the generator")
	}
	dir := t.TempDir()
	gen := filepath.Join(dir, pkg+"gen")
	build := exec.Command(goTool, "build", "-o", gen, generator)
	// The generator runs here, so it is built for this host even when the
	// test itself is cross-built (GOARCH=arm64 under qemu).
	build.Env = append(os.Environ(), "GOOS=", "GOARCH=", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the generator %s: %v\n%s", generator, err, out)
	}
	run := exec.Command(gen, "-out", "kernels_amd64.s", "-stubs", "stubs_amd64.go", "-pkg", pkg)
	run.Dir = dir
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("running the generator %s: %v\n%s", generator, err, out)
	}
	regenerate := "run go generate in this package's directory"
	for _, name := range []string{"kernels_amd64.s", "stubs_amd64.go"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v (%s)", name, err, regenerate)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the output of %s at line %d; %s", name, generator, firstDiffLine(got, want), regenerate)
		}
		if first, _, _ := strings.Cut(string(got), "\n"); !strings.HasPrefix(first, "// Code generated ") || !strings.HasSuffix(first, " DO NOT EDIT.") {
			t.Errorf("%s lacks the generated-code header", name)
		}
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(la) && i < len(lb); i++ {
		if !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

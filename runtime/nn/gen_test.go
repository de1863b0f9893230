package nn

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesUpToDate runs the avo generator (asmgen/nn) into a
// temporary directory and fails on any difference from the checked-in
// kernels_amd64.s and stubs_amd64.go: edit the generator, then run
// `go generate ./runtime/nn/`.
func TestGeneratedFilesUpToDate(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH; cannot build the generator")
	}
	dir := t.TempDir()
	gen := filepath.Join(dir, "nngen")
	build := exec.Command(goTool, "build", "-o", gen, "../../asmgen/nn")
	// The generator runs here, so it is built for this host even when the
	// test itself is cross-built (GOARCH=arm64 under qemu).
	build.Env = append(os.Environ(), "GOOS=", "GOARCH=", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the generator: %v\n%s", err, out)
	}
	run := exec.Command(gen, "-out", "kernels_amd64.s", "-stubs", "stubs_amd64.go", "-pkg", "nn")
	run.Dir = dir
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("running the generator: %v\n%s", err, out)
	}
	for _, name := range []string{"kernels_amd64.s", "stubs_amd64.go"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v (run go generate ./runtime/nn/)", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's output at line %d; run go generate ./runtime/nn/",
				name, firstDiffLine(got, want))
		}
		if !bytes.HasPrefix(got, []byte("// Code generated ")) || !strings.Contains(strings.SplitN(string(got), "\n", 2)[0], " DO NOT EDIT.") {
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

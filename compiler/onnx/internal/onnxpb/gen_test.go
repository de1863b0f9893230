package onnxpb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// protocVersionLine is the one line of onnx.pb.go that records the protoc
// version; protoc's version changes nothing else in the output, so it is
// masked before comparing. protoc-gen-go's version is pinned by go.mod and
// is compared like every other line.
var protocVersionLine = regexp.MustCompile(`(?m)^// \tprotoc +v.*$`)

// TestGeneratedCodeIsCurrent regenerates onnx.pb.go with gen.go into a
// temporary directory and fails on any difference from the checked-in file.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping code regeneration in -short mode")
	}
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc not on PATH (apt-get install protobuf-compiler); cannot check onnx.pb.go is current")
	}
	out := t.TempDir()
	cmd := exec.Command("go", "run", "gen.go", "-out", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run gen.go: %v\n%s", err, msg)
	}
	fresh, err := os.ReadFile(filepath.Join(out, "onnx.pb.go"))
	if err != nil {
		t.Fatal(err)
	}
	checkedIn, err := os.ReadFile("onnx.pb.go")
	if err != nil {
		t.Fatal(err)
	}
	mask := []byte("// \tprotoc <version>")
	fresh = protocVersionLine.ReplaceAll(fresh, mask)
	checkedIn = protocVersionLine.ReplaceAll(checkedIn, mask)
	if !bytes.Equal(fresh, checkedIn) {
		t.Fatalf("onnx.pb.go is stale: run `go generate` in %s (fresh output differs from the checked-in file; first difference at byte %d)",
			"compiler/onnx/internal/onnxpb", firstDiff(fresh, checkedIn))
	}
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

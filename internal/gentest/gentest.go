// Package gentest builds and runs programs against packages `sqc compile`
// generates, for tests: it lays out a throwaway module outside the
// repository (so a test never leaves files in the work tree) whose go.mod
// points at this checkout with a replace directive, puts the generated
// package at import path "sqcgentest/m" and a main program beside it, and
// runs `go run` there with the module cache only (GOPROXY=off).
package gentest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/internal/testmodels"
)

// Import is the import path of the generated package in the module.
const Import = "sqcgentest/m"

// Module creates the module and returns its root; the generated package
// goes in PackageDir(root). The directory is removed when the test ends.
func Module(t *testing.T) string {
	t.Helper()
	repo, err := testmodels.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	gomod := "module sqcgentest\n\ngo 1.26.0\n\nrequire github.com/sqc-dev/sqc v0.0.0\n\nreplace github.com/sqc-dev/sqc => " + repo + "\n"
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// PackageDir is where the generated package goes in the module at root.
func PackageDir(root string) string { return filepath.Join(root, "m") }

// Run writes mainSrc as the module's main package and runs it with args,
// returning its standard output; its standard error goes to the test's.
func Run(t *testing.T, root, mainSrc string, args ...string) []byte {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "main.go"), []byte(mainSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"run", "."}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run of a program on the generated package: %v", err)
	}
	return out
}

// Build runs `go build` of the module's packages with extra environment
// (GOARCH=arm64, CGO_ENABLED=0, ...) and go flags (-tags noasm), failing
// the test on an error.
func Build(t *testing.T, root string, env []string, flags ...string) {
	t.Helper()
	cmd := exec.Command("go", append(append([]string{"build", "-o", os.DevNull}, flags...), "./m")...)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v of the generated package with %v: %v\n%s", flags, env, err, out)
	}
}

//go:build ignore

// gen.go regenerates onnx.pb.go from onnx.proto. It builds protoc-gen-go from
// the google.golang.org/protobuf module that go.mod requires (so the
// generator version is pinned by go.mod, not by whatever is on PATH) and runs
// protoc with it.
//
// Usage: go run gen.go [-out dir]   (default: the current directory)
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// goPackage is the import path the generated code lives at; onnx.proto has
// no go_package option, so protoc-gen-go is told it with an M flag.
const goPackage = "github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"

func main() {
	out := flag.String("out", ".", "directory to write onnx.pb.go into")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	tmp, err := os.MkdirTemp("", "onnxpb-gen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	plugin := filepath.Join(tmp, "protoc-gen-go")
	build := exec.Command("go", "build", "-o", plugin, "google.golang.org/protobuf/cmd/protoc-gen-go")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building protoc-gen-go: %w", err)
	}
	protoc := exec.Command("protoc",
		"--plugin=protoc-gen-go="+plugin,
		"--go_out="+out,
		"--go_opt=paths=source_relative",
		"--go_opt=Monnx.proto="+goPackage,
		"onnx.proto")
	protoc.Stdout, protoc.Stderr = os.Stdout, os.Stderr
	if err := protoc.Run(); err != nil {
		return fmt.Errorf("running protoc: %w", err)
	}
	return nil
}

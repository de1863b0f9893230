package codegen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// TestActCodeNamesQgemmConstants checks that actCode, which derives a
// constant's name from the activation's String, names a constant that
// runtime/qgemm declares, for every activation: a generated package using
// an activation whose name and constant disagree would not compile.
func TestActCodeNamesQgemmConstants(t *testing.T) {
	files, err := filepath.Glob("../runtime/qgemm/*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, spec := range g.Specs {
					for _, name := range spec.(*ast.ValueSpec).Names {
						declared[name.Name] = true
					}
				}
			}
		}
	}
	n := 0
	for a := qgemm.Act(0); a.String() != fmt.Sprintf("Act(%d)", uint8(a)); a++ {
		code := fmt.Sprintf("%#v", actCode(a))
		name := code[strings.LastIndex(code, ".")+1:]
		if !declared[name] {
			t.Errorf("activation %q: actCode gives %s, which runtime/qgemm does not declare", a, code)
		}
		n++
	}
	if n < 4 {
		t.Fatalf("found %d activations, want at least none, gelu, relu and gelu_tanh", n)
	}
}

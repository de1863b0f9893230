package codegen

import (
	"fmt"
	"os"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	sqcexec "github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/passes"
)

// TestEveryStepKindIsGenerated generates packages from programs that
// together hold every step kind exec.Lower emits (exec.StepKinds) and
// fails if a kind has no generated form or is missing from them (then a
// program holding it must be added here). The bitwise comparisons of
// these packages with exec are TestEncoderPackageMatchesExec,
// TestGenericOpsPackageMatchesExec and examples/sentiment's tests.
func TestEveryStepKindIsGenerated(t *testing.T) {
	var programs []*sqcexec.Schedule
	for _, act := range []string{compiler.QLinearStatic, compiler.QLinearDynamic} {
		programs = append(programs, demoProgram(t, act).Schedule)
	}
	src, err := os.ReadFile("testdata/generic_ops.sqc")
	if err != nil {
		t.Fatal(err)
	}
	g, err := compiler.ParseText(string(src))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sqcexec.Lower(g)
	if err != nil {
		t.Fatal(err)
	}
	programs = append(programs, s)
	cfg, err := hf.Preset("bert-tiny") // pooler (Tanh), token types
	if err != nil {
		t.Fatal(err)
	}
	if g, err = hf.Build(cfg, hf.RandomWeights(3)); err != nil {
		t.Fatal(err)
	}
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		t.Fatal(err)
	}
	if s, err = sqcexec.Lower(g); err != nil { // FP32: LinearF32, standalone activations
		t.Fatal(err)
	}
	programs = append(programs, s)

	seen := map[string]bool{}
	for i, p := range programs {
		opts := Options{Package: "m", ModelName: fmt.Sprint("program", i), MaxBatch: 2, MaxSeq: 16}
		if _, err := Generate(p, opts); err != nil {
			t.Fatalf("program %d: %v", i, err)
		}
		for _, st := range p.Steps() {
			seen[fmt.Sprintf("%T", st)] = true
		}
	}
	for _, k := range sqcexec.StepKinds() {
		if !seen[fmt.Sprintf("%T", k)] {
			t.Errorf("no program here holds a %T: its generated form is untested", k)
		}
	}
}

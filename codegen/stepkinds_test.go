package codegen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	sqcexec "github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
)

// TestEveryStepKindHasEveryPiece generates packages from programs that
// together hold every step kind exec.Lower emits (exec.StepKinds), runs
// them in process with exec.Program.Replay, and fails if a kind has no
// generated form, no cost (what the roofline places it by), or a run that
// cannot be repeated in place (what the roofline times), or is missing
// from them (then a program holding it must be added here). Operands are
// TestOperandsCoverEverySlotField's. The bitwise comparisons of these
// packages with exec are TestEncoderPackageMatchesExec,
// TestGenericOpsPackageMatchesExec and examples/sentiment's tests.
func TestEveryStepKindHasEveryPiece(t *testing.T) {
	var programs []*sqcexec.Schedule
	for _, act := range []string{compiler.QLinearStatic, compiler.QLinearDynamic} {
		programs = append(programs, demoProgram(t, act).Schedule)
	}
	// FP32 attention: its output is quantised by a step of its own
	// (QuantizeStep), which INT8 attention's u8 epilogue replaces.
	programs = append(programs, demoProgramWith(t, passes.QuantOptions{Act: compiler.QLinearStatic, Attention: "fp32"}).Schedule)
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
	// The ModernBERT classifier, FP32: rotary embeddings (RotaryStep), its
	// GLU's product (MulStep) and mean pooling's sum (MaskedSumStep).
	if g, err = onnx.Load(filepath.Join(testmodels.TinyDir(t, testmodels.TinyModernBertCls), "model.onnx")); err != nil {
		t.Fatal(err)
	}
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		t.Fatal(err)
	}
	if s, err = sqcexec.Lower(g); err != nil {
		t.Fatal(err)
	}
	programs = append(programs, s)

	seen := map[string]bool{}
	for i, p := range programs {
		opts := Options{Package: "m", ModelName: fmt.Sprint("program", i), MaxBatch: 2, MaxSeq: 16}
		if _, err := Generate(p, opts); err != nil {
			t.Fatalf("program %d: %v", i, err)
		}
		replayEveryStep(t, p)
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

// replayEveryStep runs schedule s on a batch of 2 sequences of 12 tokens
// with exec.Program.Replay and checks every step's cost and that it runs
// again.
func replayEveryStep(t *testing.T, s *sqcexec.Schedule) {
	t.Helper()
	p, err := sqcexec.NewProgram(s, sqcexec.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	in := map[string]*compiler.Tensor{}
	for _, v := range s.Inputs() {
		x := compiler.NewTensor(compiler.Int64, 2, 12)
		for i := range x.I64 {
			switch {
			case strings.Contains(v.Name, "mask"):
				x.I64[i] = 1
			case strings.Contains(v.Name, "ids") && !strings.Contains(v.Name, "type"):
				x.I64[i] = int64(1 + i%7)
			}
		}
		in[v.Name] = x
	}
	err = p.Replay(in, func(i int, st sqcexec.Step, c sqcexec.Cost, again func() error) error {
		if c.Kind == "" || c.Label == "" || c.Bytes <= 0 || c.Ops < 0 {
			t.Errorf("step #%d %s: cost %+v", i, st.Call(), c)
		}
		return again() // its bits: compiler/exec's TestReplayRepeatsInPlace
	})
	if err != nil {
		t.Fatal(err)
	}
}

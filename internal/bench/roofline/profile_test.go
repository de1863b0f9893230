package roofline

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/internal/bench"
)

// tinyINT8 returns bert-tiny quantised (random weights) and inputs of
// 2 x 16 tokens.
func tinyINT8(t *testing.T) (*bench.Model, map[string]*compiler.Tensor) {
	t.Helper()
	m, err := bench.Load(bench.Source{Config: "bert-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Quantize(bench.QuantOptions{Threads: 1}); err != nil {
		t.Fatal(err)
	}
	in, err := m.Inputs(2, 16, bench.InputSeed)
	if err != nil {
		t.Fatal(err)
	}
	return m, in
}

// TestProfileProgram replays every step of a tiny INT8 program.
func TestProfileProgram(t *testing.T) {
	m, in := tinyINT8(t)
	prog, err := exec.Compile(m.Graph, exec.Options{Threads: 2}) // 2: parallel loops to count
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	prof, err := ProfileProgram(prog, in, ProfileOptions{Batch: 2, Seq: 16, PerOp: time.Millisecond, PassBudget: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if prof.Passes < MinPasses || prof.InPassSeconds <= 0 {
		t.Errorf("%d passes timed step by step, %g s in them", prof.Passes, prof.InPassSeconds)
	}
	if prof.Loops < 1 || prof.LoopWaitSeconds < 0 || prof.LoopWaitSeconds > prof.InPassSeconds {
		t.Errorf("%g parallel loops per pass, callers waiting %g s of a %g s pass", prof.Loops, prof.LoopWaitSeconds, prof.InPassSeconds)
	}
	// Copying the outputs of a 2 x 16 pass is far cheaper than the pass;
	// the bound is loose because the difference is of two noisy times, and
	// it has 2 ms of slack for a descheduled thread: this pass takes ~0.1
	// ms, and a go test ./... on 2 cores once put 0.37 ms between them. It
	// still catches a per-run total or a unit mix-up (100x or more).
	if math.Abs(prof.OutsideSeconds) > 3*prof.InPassSeconds+2e-3 {
		t.Errorf("whole passes differ from traced ones by %g s, in a pass of %g s", prof.OutsideSeconds, prof.InPassSeconds)
	}
	inPass := 0.0
	for _, p := range prof.Points {
		if p.InPassSeconds <= 0 {
			t.Errorf("%s: in-pass time %g", p.Label, p.InPassSeconds)
		}
		inPass += float64(p.Count) * p.InPassSeconds
	}
	if d := inPass - prof.InPassSeconds; d > 1e-9 || d < -1e-9 {
		t.Errorf("groups' in-pass times add up to %g s, the steps' to %g s", inPass, prof.InPassSeconds)
	}
	steps, kinds := 0, map[string]int{}
	share := 0.0
	norms := 0 // LayerNorms, those run inside a GEMM included
	for _, p := range prof.Points {
		steps += p.Count
		kinds[p.Kind] += p.Count
		if strings.Contains(p.Label, "LayerNorm") {
			norms += p.Count
		}
		share += p.Share
		counted := p.Kind != exec.KindGather && p.Kind != exec.KindGeneric
		if p.Seconds <= 0 || p.Bytes <= 0 || (counted && (p.Ops <= 0 || p.Intensity <= 0)) {
			t.Errorf("point %+v", p)
		}
	}
	if steps != len(prog.Steps()) {
		t.Errorf("%d steps replayed, program has %d", steps, len(prog.Steps()))
	}
	// 6 QLinears per layer x 2 layers (4 with Q, K and V fused into one by
	// passes.FuseQKV); one attention per layer; two LayerNorms per layer
	// (passes.FuseLayerNormIntoQLinear runs them inside the GEMMs before
	// them) and the embeddings'.
	if g := kinds[exec.KindGEMM]; (g != 12 && g != 8) || kinds[exec.KindAttention] != 2 || norms < 5 {
		t.Errorf("steps by kind %v, %d LayerNorms", kinds, norms)
	}
	if share < 0.999 || share > 1.001 {
		t.Errorf("shares add up to %v", share)
	}
	for i := 1; i < len(prof.Points); i++ {
		if prof.Points[i].Share > prof.Points[i-1].Share {
			t.Error("points are not sorted by share")
		}
	}
	if _, err := ProfileProgram(prog, in, ProfileOptions{Batch: 0, Seq: 16}); err == nil {
		t.Error("batch 0 accepted")
	}
}

func TestMeasureCeilings(t *testing.T) {
	cs, err := MeasureCeilings(CeilingOptions{Threads: 1, Budget: time.Millisecond, L2Bytes: 64 << 10, DRAMBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range cs {
		names[c.Name] = true
		if c.Value <= 0 || c.Threads != 1 || c.How == "" {
			t.Errorf("ceiling %+v", c)
		}
	}
	if !names["L2"] || !names["DRAM"] {
		t.Errorf("ceilings %v lack L2 or DRAM", names)
	}
	if _, err := MeasureCeilings(CeilingOptions{}); err == nil {
		t.Error("0 threads accepted")
	}
}

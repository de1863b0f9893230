package reliability

import (
	"context"
	"fmt"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/examples/sentiment/sentimentmodel"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// isaNames are the kernel families, fastest first.
var isaNames = []string{"amx", "vnni", "avx2", "go"}

// workerCounts are the pool sizes determinism is checked at: serial, this
// machine's core count, and more workers than cores (work split finer).
var workerCounts = []int{1, 2, 8}

// repeats is how many times each configuration runs: once is enough to
// compare configurations, three times also catches run-to-run drift.
func repeats() int {
	if testing.Short() || raceEnabled {
		return 1
	}
	return 3
}

// determinismTexts are the inputs: all sentences, or the first three
// under -short and the race detector.
func determinismTexts() []string {
	if testing.Short() || raceEnabled {
		return sentences[:3]
	}
	return sentences
}

// TestDeterminismProgram: the INT8 engine gives bitwise identical outputs
// across repeated runs, worker counts and forced kernel families, for
// static and dynamic activation quantisation. The reference is the pure-Go
// kernel on one worker.
func TestDeterminismProgram(t *testing.T) {
	d := loadDemo(t)
	in := batch(d.encode(determinismTexts()))
	for _, act := range []string{compiler.QLinearStatic, compiler.QLinearDynamic} {
		t.Run(act, func(t *testing.T) {
			g := quantizedDemo(t, d, act)
			want, err := compileProgram(t, g, "go", 1).Run(in)
			if err != nil {
				t.Fatal(err)
			}
			for _, isa := range isaNames {
				t.Run(isa, func(t *testing.T) {
					if !isaAvailable(isa) {
						t.Skipf("skipping: this machine cannot run %s kernels (it runs %v)", isa, availableISAs())
					}
					for _, threads := range workerCounts {
						p := compileProgram(t, g, isa, threads)
						if got := p.Engine().ISA().String(); got != isa {
							t.Fatalf("asked for %s, engine runs %s", isa, got)
						}
						for rep := range repeats() {
							got, err := p.Run(in)
							if err != nil {
								t.Fatal(err)
							}
							if diff := diffBits(got, want); diff != "" {
								t.Fatalf("%d workers, run %d: %s (reference: go, 1 worker)", threads, rep+1, diff)
							}
						}
					}
				})
			}
		})
	}
}

// TestDeterminismSQCISA: the SQC_ISA environment variable forces the
// kernel family of a Program compiled without Options.ISA, with the same
// bits as Options.ISA.
func TestDeterminismSQCISA(t *testing.T) {
	d := loadDemo(t)
	in := batch(d.encode(sentences[:3]))
	g := quantizedDemo(t, d, compiler.QLinearStatic)
	want, err := compileProgram(t, g, "go", 1).Run(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, isa := range isaNames {
		t.Run(isa, func(t *testing.T) {
			if !isaAvailable(isa) {
				t.Skipf("skipping: this machine cannot run %s kernels (it runs %v)", isa, availableISAs())
			}
			t.Setenv(qgemm.EnvISA, isa)
			p := compileProgram(t, g, "", 2)
			if got := p.Engine().ISA().String(); got != isa {
				t.Fatalf("SQC_ISA=%s, engine runs %s", isa, got)
			}
			got, err := p.Run(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := diffBits(got, want); diff != "" {
				t.Fatalf("SQC_ISA=%s: %s", isa, diff)
			}
		})
	}
}

// TestDeterminismGenerated: the generated package of the example
// (examples/sentiment/sentimentmodel, the demo model compiled by `sqc
// compile`) gives bitwise identical logits across repeated runs, worker
// counts and kernel families.
func TestDeterminismGenerated(t *testing.T) {
	d := loadDemo(t)
	b := sentimentmodel.Batch{InputIDs: d.encode(determinismTexts())}
	var want [][]float32
	var ref string
	for _, isa := range isaNames {
		t.Run(isa, func(t *testing.T) {
			if !isaAvailable(isa) {
				t.Skipf("skipping: this machine cannot run %s kernels (it runs %v)", isa, availableISAs())
			}
			for _, threads := range workerCounts {
				m, err := sentimentmodel.NewWithOptions(sentimentmodel.Options{ISA: isa, Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				for rep := range repeats() {
					out, err := m.Run(context.Background(), b)
					if err != nil {
						m.Close()
						t.Fatal(err)
					}
					if want == nil {
						want, ref = out.Logits, m.Describe()
						continue
					}
					if diff := diffRows(out.Logits, want); diff != "" {
						t.Errorf("%s, %d workers, run %d: %s (reference: %s, 1 worker)", m.Describe(), threads, rep+1, diff, ref)
					}
				}
				m.Close()
			}
		})
	}
}

// diffRows describes the first bitwise difference between two sets of
// logits, or returns "".
func diffRows(got, want [][]float32) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		a := map[string]*compiler.Tensor{"logits": {DType: compiler.Float32, Shape: []int64{int64(len(got[i]))}, F32: got[i]}}
		b := map[string]*compiler.Tensor{"logits": {DType: compiler.Float32, Shape: []int64{int64(len(want[i]))}, F32: want[i]}}
		if d := diffBits(a, b); d != "" {
			return fmt.Sprintf("sequence %d: %s", i, d)
		}
	}
	return ""
}

package exec

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
)

// TestSentenceTransformersExportPacks: a sentence-transformers model as
// optimum exports it (mean pooling and Normalize in the graph: Clip and
// ReduceL2, which the ONNX frontend reads as Max/Min and Sqrt of a sum of
// squares) gives PyTorch's (and ONNX Runtime's) token and sentence
// embeddings, and its schedule runs padding-free: the pooling's masked
// sum is an sqc.MaskedSum of each sequence's real tokens. Packed ==
// padded == alone, bit for bit, FP32 and INT8.
func TestSentenceTransformersExportPacks(t *testing.T) {
	dir := testmodels.TinyDir(t, testmodels.TinySTBertMean)
	ref, err := testmodels.LoadModelReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.RunPipeline(g, passes.Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	out, err := interp.Run(g, ref.Inputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range ref.OutputNames() {
		if d := testmodels.TensorMaxAbsDiff(out[name], ref.Outputs[name]); !(d <= 1e-5) {
			t.Errorf("%s differs from PyTorch by %.3g", name, d)
		} else {
			t.Logf("%s: max |sqc - torch| = %.3g", name, d)
		}
	}
	t.Run("ONNX Runtime", func(t *testing.T) {
		res := testmodels.RunORT(t, dir)
		for _, name := range ref.OutputNames() {
			if d := testmodels.TensorMaxAbsDiff(res[name], out[name]); !(d <= 1e-5) {
				t.Errorf("%s: ONNX Runtime differs from sqc by %.3g", name, d)
			} else {
				t.Logf("%s: max |ORT - sqc| = %.3g", name, d)
			}
		}
	})
	exs := padIDExamples(0, 120)
	for i := range exs {
		exs[i].TokenTypeIDs = make([]int64, len(exs[i].InputIDs))
	}
	q := quantizeForTest(t, g, &testmodels.Reference{Examples: exs})
	for _, c := range []struct {
		name string
		g    *compiler.Graph
	}{{"fp32", g}, {"int8", q}} {
		for _, threads := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/T=%d", c.name, threads), func(t *testing.T) {
				p := compile(t, c.g, nil, threads)
				if r := p.PackingReason(); r != "" {
					t.Fatalf("schedule runs padded: %s", r)
				}
				padded, err := Compile(explicitQuant(t, c.g), Options{Threads: threads, Padded: true})
				if err != nil {
					t.Fatal(err)
				}
				defer padded.Close()
				in := padWith(t, c.g, exs, 0)
				got := run(t, p, in)
				if p.run.offsets == nil {
					t.Fatal("the mixed batch ran padded")
				}
				sameRealTokens(t, "packed vs padded", exs, got, run(t, padded, in), -1)
				for b := range exs {
					sameRealTokens(t, "packed vs alone", exs, got, run(t, p, padWith(t, c.g, exs[b:b+1], 0)), b)
				}
			})
		}
	}
}

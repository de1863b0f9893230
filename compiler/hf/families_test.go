package hf

import (
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// The tiny random-weight models of every family (internal/testmodels,
// made with PyTorch by internal/testmodels/gen/make_models.py): the FP32
// interpreter on the graph built from config.json + model.safetensors,
// and on the torch.onnx export's graph, must reproduce PyTorch's outputs
// for a right-padded batch within referenceTolerance, at every position
// (padded ones included).

// loadTiny returns a tiny model's folder and reference.
func loadTiny(t *testing.T, name string) (string, *testmodels.ModelReference) {
	t.Helper()
	dir := testmodels.TinyDir(t, name)
	ref, err := testmodels.LoadModelReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, ref
}

// checkAgainstReference runs g on the reference batch and compares every
// reference output; it returns the worst difference.
func checkAgainstReference(t *testing.T, what string, g *compiler.Graph, ref *testmodels.ModelReference) float64 {
	t.Helper()
	return compareWithReference(t, what, g, ref, false)
}

// checkRealTokens is checkAgainstReference on the real tokens only
// (compiler.ZeroMaskedTokens on both sides): for DeBERTa, whose padded
// rows transformers computes otherwise than sqc (see buildDeBERTa).
func checkRealTokens(t *testing.T, what string, g *compiler.Graph, ref *testmodels.ModelReference) {
	t.Helper()
	compareWithReference(t, what, g, ref, true)
}

func compareWithReference(t *testing.T, what string, g *compiler.Graph, ref *testmodels.ModelReference, realOnly bool) float64 {
	t.Helper()
	it, err := interp.New(g)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	out, err := it.Run(ref.Inputs, &interp.Options{Threads: 2})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(out) != len(ref.Outputs) {
		t.Errorf("%s: %d outputs, PyTorch gave %d (%v)", what, len(out), len(ref.Outputs), ref.OutputNames())
	}
	want := ref.Outputs
	if realOnly {
		want = map[string]*compiler.Tensor{}
		for name, o := range ref.Outputs {
			want[name] = o.Clone()
		}
		compiler.ZeroMaskedTokens(out, ref.Inputs[inAttentionMask])
		compiler.ZeroMaskedTokens(want, ref.Inputs[inAttentionMask])
	}
	worst := 0.0
	for _, name := range ref.OutputNames() {
		d := testmodels.TensorMaxAbsDiff(out[name], want[name])
		t.Logf("%s: %s max |sqc - torch| = %.3g (real tokens only: %v)", what, name, d, realOnly)
		if !(d <= referenceTolerance) {
			t.Errorf("%s: %s differs from PyTorch by %.3g > %g", what, name, d, referenceTolerance)
		}
		worst = max(worst, d)
	}
	return worst
}

func TestTinyFamiliesMatchTorch(t *testing.T) {
	for _, name := range testmodels.TinyModels {
		t.Run(name, func(t *testing.T) {
			dir, ref := loadTiny(t, name)
			hg, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			og, err := onnx.Load(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			sameInterface(t, hg, og)
			checkAgainstReference(t, "safetensors", hg, ref)
			checkAgainstReference(t, "onnx", og, ref)
		})
	}
}

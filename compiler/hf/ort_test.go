package hf

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestTinyFamiliesMatchONNXRuntime runs each tiny model's torch.onnx
// export with ONNX Runtime (testmodels.RunORT) and compares its outputs
// with PyTorch's and with the FP32 interpreter's on the same ONNX graph. It
// skips where node or onnxruntime-node is absent.
func TestTinyFamiliesMatchONNXRuntime(t *testing.T) {
	for _, name := range testmodels.TinyModels {
		t.Run(name, func(t *testing.T) {
			dir, ref := loadTiny(t, name)
			level := "all"
			if slices.Contains(testmodels.TinyModernBertModels, name) {
				level = "basic" // ONNX Runtime 1.30 crashes optimising LayerNormalization without a bias (testmodels.RunORTAt)
			}
			res := testmodels.RunORTAt(t, dir, level)
			g, err := onnx.Load(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			it, err := interp.New(g)
			if err != nil {
				t.Fatal(err)
			}
			ours, err := it.Run(ref.Inputs, &interp.Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, out := range ref.OutputNames() {
				ortT, ok := res[out]
				if !ok {
					t.Fatalf("ONNX Runtime gave no %s", out)
				}
				vsTorch := testmodels.TensorMaxAbsDiff(ortT, ref.Outputs[out])
				vsSqc := testmodels.TensorMaxAbsDiff(ortT, ours[out])
				t.Logf("%s: max |ORT - torch| = %.3g, max |ORT - sqc| = %.3g", out, vsTorch, vsSqc)
				if !(vsTorch <= referenceTolerance) || !(vsSqc <= referenceTolerance) {
					t.Errorf("%s: ONNX Runtime differs from PyTorch by %.3g and from sqc by %.3g (> %g)", out, vsTorch, vsSqc, referenceTolerance)
				}
			}
		})
	}
}

package hf

import (
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// ortNodeModulesEnv names the node_modules directory holding npm's
// onnxruntime-node (.ci/run installs it).
const ortNodeModulesEnv = "SQC_ORT_NODE_MODULES"

// TestTinyFamiliesMatchONNXRuntime runs each tiny model's torch.onnx
// export with ONNX Runtime (internal/testmodels/gen/ort_run.js) and
// compares its outputs with PyTorch's and with the FP32 interpreter's on
// the same ONNX graph. It skips where node or onnxruntime-node is absent.
func TestTinyFamiliesMatchONNXRuntime(t *testing.T) {
	node, err := osexec.LookPath("node")
	if err != nil {
		t.Skip("skipping: node is not installed")
	}
	modules := os.Getenv(ortNodeModulesEnv)
	if modules == "" {
		t.Skipf("skipping: $%s is unset (npm install --ignore-scripts onnxruntime-node@1.30.0, then point it at node_modules)", ortNodeModulesEnv)
	}
	if _, err := os.Stat(filepath.Join(modules, "onnxruntime-node", "package.json")); err != nil {
		t.Skipf("skipping: no onnxruntime-node under $%s=%s", ortNodeModulesEnv, modules)
	}
	root, err := testmodels.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "internal", "testmodels", "gen", "ort_run.js")
	for _, name := range testmodels.TinyModels {
		t.Run(name, func(t *testing.T) {
			dir, ref := loadTiny(t, name)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := osexec.CommandContext(ctx, node, script, dir)
			cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
			cmd.Stderr = os.Stderr
			raw, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v", script, err)
			}
			var res struct {
				Outputs map[string]struct {
					Shape []int64   `json:"shape"`
					Data  []float64 `json:"data"`
				} `json:"outputs"`
			}
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatalf("%s output: %v", script, err)
			}
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
				o, ok := res.Outputs[out]
				if !ok {
					t.Fatalf("ONNX Runtime gave no %s", out)
				}
				ortT := compiler.NewTensor(compiler.Float32, o.Shape...)
				if len(ortT.F32) != len(o.Data) {
					t.Fatalf("ONNX Runtime %s: %d values for shape %v", out, len(o.Data), o.Shape)
				}
				for i, v := range o.Data {
					ortT.F32[i] = float32(v)
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

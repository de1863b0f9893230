package testmodels

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/compiler"
)

// ORTNodeModulesEnv names the node_modules directory holding npm's
// onnxruntime-node (.ci/run installs it; bench/peers.sh has one in
// /tmp/peers-cache/node/node_modules).
const ORTNodeModulesEnv = "SQC_ORT_NODE_MODULES"

// RunORT runs dir/model.onnx with ONNX Runtime on dir/reference.json's
// "inputs" (gen/ort_run.js) and returns its outputs by name. It skips t
// where node or onnxruntime-node is absent.
func RunORT(t testing.TB, dir string) map[string]*compiler.Tensor {
	t.Helper()
	return RunORTAt(t, dir, "all")
}

// RunORTAt is RunORT with the session's graph optimisation level
// ("disabled", "basic", "extended" or "all"): ONNX Runtime 1.30 crashes
// (SIGSEGV) creating an "extended" or "all" session for an opset-17 graph
// whose LayerNormalization has no bias (ModernBERT's), which "basic" does
// not.
func RunORTAt(t testing.TB, dir, level string) map[string]*compiler.Tensor {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipping: node is not installed")
	}
	modules := os.Getenv(ORTNodeModulesEnv)
	if modules == "" {
		t.Skipf("skipping: $%s is unset (npm install --ignore-scripts onnxruntime-node@1.30.0, then point it at node_modules)", ORTNodeModulesEnv)
	}
	if _, err := os.Stat(filepath.Join(modules, "onnxruntime-node", "package.json")); err != nil {
		t.Skipf("skipping: no onnxruntime-node under $%s=%s", ORTNodeModulesEnv, modules)
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "internal", "testmodels", "gen", "ort_run.js")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, dir)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "SQC_ORT_LEVEL="+level)
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v", script, dir, err)
	}
	outs, err := decodeORTOutputs(raw)
	if err != nil {
		t.Fatalf("%s output: %v", script, err)
	}
	return outs
}

// decodeORTOutputs reads ort_run.js's {"outputs": {name: {"shape",
// "data"}}} into float32 tensors.
func decodeORTOutputs(raw []byte) (map[string]*compiler.Tensor, error) {
	var res struct {
		Outputs map[string]struct {
			Shape []int64   `json:"shape"`
			Data  []float64 `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	outs := map[string]*compiler.Tensor{}
	for name, o := range res.Outputs {
		t := compiler.NewTensor(compiler.Float32, o.Shape...)
		if len(t.F32) != len(o.Data) {
			return nil, fmt.Errorf("%s: %d values for shape %v", name, len(o.Data), o.Shape)
		}
		for i, v := range o.Data {
			t.F32[i] = float32(v)
		}
		outs[name] = t
	}
	return outs, nil
}

// WriteORTInputs writes reference.json with the int64 inputs in (each
// [batch, seq]) as rows, the form ort_run.js reads, into dir.
func WriteORTInputs(dir string, in map[string]*compiler.Tensor) error {
	rows := map[string][][]int64{}
	for name, t := range in {
		if t.DType != compiler.Int64 || len(t.Shape) != 2 {
			return fmt.Errorf("input %s: %s%v, want i64 [batch, seq]", name, t.DType, t.Shape)
		}
		n := int(t.Shape[1])
		for r := range int(t.Shape[0]) {
			rows[name] = append(rows[name], t.I64[r*n:(r+1)*n])
		}
	}
	data, err := json.Marshal(map[string]any{"inputs": rows})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "reference.json"), data, 0o644)
}

package codegen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	sqcexec "github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/internal/gentest"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// genericMain runs the generated package m on the sequences of
// inputs.json and prints its outputs' bits as JSON.
const genericMain = `package main

import (
	"context"
	"encoding/json"
	"math"
	"os"

	"sqcgentest/m"
)

func bits(rows [][]float32) [][]uint32 {
	out := make([][]uint32, len(rows))
	for i, r := range rows {
		for _, v := range r {
			out[i] = append(out[i], math.Float32bits(v))
		}
	}
	return out
}

func main() {
	var b m.Batch
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(data, &b); err != nil {
		panic(err)
	}
	model, err := m.New()
	if err != nil {
		panic(err)
	}
	out, err := model.Run(context.Background(), b)
	if err != nil {
		panic(err)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"hidden": bits(out.LastHiddenState), "logits": bits(out.Logits)})
}
`

// TestGenericOpsPackageMatchesExec compiles a graph made of every generic
// op class around one embedding lookup (testdata/generic_ops.sqc), checks
// that exec lowers each of them to a runtime/ops step, that the generated
// package calls runtime/ops for them, and that its outputs equal the
// in-process engine's bit for bit on sequences of mixed lengths.
func TestGenericOpsPackageMatchesExec(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a generated package")
	}
	src, err := os.ReadFile("testdata/generic_ops.sqc")
	if err != nil {
		t.Fatal(err)
	}
	g, err := compiler.ParseText(string(src))
	if err != nil {
		t.Fatal(err)
	}
	prog, err := sqcexec.Compile(g, sqcexec.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	generic := map[string]bool{}
	for _, st := range prog.Steps() {
		if s, ok := st.(*sqcexec.OpStep); ok {
			generic[s.Op.Op] = true
		}
	}
	for _, op := range []string{"Unsqueeze", "Slice", "Cast", "Equal", "Not", "CumSum", "Mul", "Sub", "Where", "Div", "MatMul",
		"Pow", "Sqrt", "Erf", "Neg", "Sigmoid", "Less", "Greater", "Softmax", "Transpose", "Identity", "ReduceSum", "ReduceMean",
		"Concat", "Reshape", "Squeeze", "Gemm", "ConstantOfShape", "Range", "Expand", "Add"} {
		if !generic[op] {
			t.Errorf("no generic step runs %s", op)
		}
		if !ops.Supports(op) {
			t.Errorf("runtime/ops has no %s", op)
		}
	}
	pkg, err := Generate(prog.Schedule, Options{Package: "m", ModelName: "generic-ops", MaxBatch: 2, MaxSeq: 16})
	if err != nil {
		t.Fatal(err)
	}
	if sched := string(pkg.Files["schedule.go"]); !strings.Contains(sched, `Op:    "CumSum"`) || !strings.Contains(sched, "ops.CopyInto(") {
		t.Fatalf("schedule.go does not call runtime/ops for the generic steps:\n%s", sched)
	}
	mod := gentest.Module(t)
	if err := Write(gentest.PackageDir(mod), pkg); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		env   []string
		flags []string
	}{{[]string{"GOARCH=arm64"}, nil}, {nil, []string{"-tags", "noasm"}}, {[]string{"CGO_ENABLED=0"}, nil}} {
		gentest.Build(t, mod, b.env, b.flags...)
	}
	// Mixed lengths (one chunk padded), ids 0 inside the mask, a batch
	// larger than MaxBatch.
	b := modelrt.Batch{
		InputIDs:      [][]int64{{3, 7, 0, 9, 1}, {4}, {12, 0, 5, 5, 8, 9, 10, 11, 2}, {49, 1}},
		AttentionMask: [][]int64{{1, 1, 1, 1, 1}, {1}, {1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 0}},
	}
	in, _ := json.Marshal(b)
	if err := os.WriteFile(filepath.Join(mod, "inputs.json"), in, 0o644); err != nil {
		t.Fatal(err)
	}
	var got struct{ Hidden, Logits [][]uint32 }
	if err := json.Unmarshal(gentest.Run(t, mod, genericMain, "inputs.json"), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Hidden) != len(b.InputIDs) || len(got.Logits) != len(b.InputIDs) {
		t.Fatalf("%d and %d results for %d sequences", len(got.Hidden), len(got.Logits), len(b.InputIDs))
	}
	for i, ids := range b.InputIDs {
		// Each sequence alone through exec: the generated Run pads
		// within its chunks, so its answer must not depend on them.
		n := int64(len(ids))
		res, err := prog.Run(map[string]*compiler.Tensor{
			"input_ids":      {DType: compiler.Int64, Shape: []int64{1, n}, I64: slices.Clone(ids)},
			"attention_mask": {DType: compiler.Int64, Shape: []int64{1, n}, I64: slices.Clone(b.AttentionMask[i])},
		})
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string][]float32{"hidden": res["last_hidden_state"].F32, "logits": res["logits"].F32} {
			sameBits(t, name, i, map[string][][]uint32{"hidden": got.Hidden, "logits": got.Logits}[name][i], want)
		}
	}
	t.Logf("%d generic op kinds, %d sequences: generated package bit-identical to compiler/exec", len(generic), len(b.InputIDs))
}

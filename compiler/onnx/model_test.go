package onnx

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

func TestDecodeTinyModel(t *testing.T) {
	g, err := Decode(marshal(t, tinyModel()), "dir/tiny.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if g.Opset != 14 || g.Name != "tiny" {
		t.Errorf("opset %d name %q, want 14 tiny", g.Opset, g.Name)
	}
	if len(g.Inputs) != 1 || g.Inputs[0].Name != "x" || g.Inputs[0].DType != compiler.Float32 ||
		!slices.Equal(g.Inputs[0].Shape, compiler.Shape{{Size: -1, Param: "batch"}, {Size: 4}}) {
		t.Errorf("inputs = %+v", g.Inputs)
	}
	if len(g.Outputs) != 1 || g.Outputs[0].Name != "y" ||
		!slices.Equal(g.Outputs[0].Shape, compiler.Shape{{Size: -1, Param: "batch"}, {Size: 1}, {Size: 2}}) {
		t.Errorf("outputs = %+v", g.Outputs)
	}
	if v := g.Values["z"]; v == nil || v.DType != compiler.Float32 || len(v.Shape) != 2 {
		t.Errorf("value_info z = %+v", v)
	}
	if w := g.Initializers["W"]; w == nil || !slices.Equal(w.Shape, []int64{4, 2}) || !slices.Equal(w.F32, []float32{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("W = %+v", w)
	}
	if b := g.Initializers["B"]; b == nil || !slices.Equal(b.F32, []float32{0.25, -0.25}) {
		t.Errorf("B = %+v", b)
	}
	ops := make([]string, len(g.Nodes))
	for i, n := range g.Nodes {
		ops[i] = n.Op
	}
	if want := []string{"Gemm", "Constant", "Unsqueeze", "Constant", "Mul"}; !slices.Equal(ops, want) {
		t.Errorf("ops %v, want %v", ops, want)
	}
	gemm := g.Nodes[0]
	if gemm.AttrInt("transB", -1) != 0 || gemm.AttrFloat("alpha", 0) != 1 || !slices.Equal(gemm.Inputs, []string{"x", "W", "B"}) {
		t.Errorf("gemm = %+v", gemm)
	}
	axes := g.Nodes[1].Attrs["value"]
	if len(g.Nodes[1].Attrs) != 1 || axes.Kind != compiler.AttrTensor || axes.Tensor.DType != compiler.Int64 ||
		!slices.Equal(axes.Tensor.Shape, []int64{1}) || !slices.Equal(axes.Tensor.I64, []int64{1}) {
		t.Errorf("Constant value_ints not normalized: %+v", g.Nodes[1].Attrs)
	}
	half := g.Nodes[3].Attrs["value"].Tensor
	if half == nil || half.DType != compiler.Float32 || half.Shape == nil || len(half.Shape) != 0 || !slices.Equal(half.F32, []float32{0.5}) {
		t.Errorf("scalar Constant = %+v", half)
	}
	wantMeta := map[string]string{"source": "dir/tiny.onnx", "producer": "sqc-test", "graph_name": "tiny", "ir_version": "8"}
	if !maps.Equal(g.Meta, wantMeta) {
		t.Errorf("meta = %v, want %v", g.Meta, wantMeta)
	}
}

func TestConstantForms(t *testing.T) {
	m := tinyModel()
	m.Graph.Node[1] = node("Constant", "axes", nil, []string{"axes"}, intAttr("value_int", 1))
	m.Graph.Node = append(m.Graph.Node, node("Constant", "fs", nil, []string{"fs"}, floatsAttrOf("value_floats", 1.5, 2.5)))
	g, err := Decode(marshal(t, m), "")
	if err != nil {
		t.Fatal(err)
	}
	if v := g.Nodes[1].Attrs["value"].Tensor; v.DType != compiler.Int64 || len(v.Shape) != 0 || !slices.Equal(v.I64, []int64{1}) {
		t.Errorf("value_int -> %+v", v)
	}
	if v := g.Nodes[5].Attrs["value"].Tensor; v.DType != compiler.Float32 || !slices.Equal(v.Shape, []int64{2}) || !slices.Equal(v.F32, []float32{1.5, 2.5}) {
		t.Errorf("value_floats -> %+v", v)
	}
}

// modelFacts is what /work/shared/models/README.md states about a model.
type modelFacts struct {
	dir     string
	opset   int64
	inputs  []string
	ops     map[string]int
	nodes   int
	weights int64 // float32 initializer elements the ONNX file holds
}

func TestLoadSharedModels(t *testing.T) {
	shared := sharedDir(t)
	for _, m := range []modelFacts{
		{
			dir: "sst2-bert-mini", opset: 14, nodes: 476, weights: 11_171_074,
			inputs: []string{"input_ids", "attention_mask", "token_type_ids"},
			ops: map[string]int{"Constant": 137, "Add": 60, "Gather": 37, "Unsqueeze": 35, "Shape": 33, "MatMul": 32,
				"Mul": 18, "ReduceMean": 18, "Div": 17, "Concat": 16, "Reshape": 16, "Transpose": 16, "Sub": 10,
				"Pow": 9, "Sqrt": 9, "Erf": 4, "Softmax": 4, "Gemm": 2, "Cast": 1, "Slice": 1, "Tanh": 1},
		},
		{
			dir: "sst2-distilbert-tiny", opset: 17, nodes: 179, weights: 4_385_922,
			inputs: []string{"input_ids", "attention_mask"},
			ops: map[string]int{"Constant": 60, "Add": 19, "MatMul": 16, "Unsqueeze": 13, "Concat": 10, "Reshape": 10,
				"Gather": 8, "Transpose": 8, "Shape": 7, "LayerNormalization": 5, "Div": 4, "Mul": 4, "Cast": 2,
				"Erf": 2, "Expand": 2, "Gemm": 2, "Softmax": 2, "Where": 2, "Equal": 1, "Relu": 1, "Slice": 1},
		},
	} {
		t.Run(m.dir, func(t *testing.T) {
			path := filepath.Join(shared, "models", m.dir, "model.onnx")
			g, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if g.Opset != m.opset {
				t.Errorf("opset %d, want %d", g.Opset, m.opset)
			}
			if len(g.Nodes) != m.nodes {
				t.Errorf("%d nodes, want %d", len(g.Nodes), m.nodes)
			}
			hist := map[string]int{}
			for _, n := range g.Nodes {
				hist[n.Op]++
			}
			if !maps.Equal(hist, m.ops) {
				t.Errorf("op histogram\n got %v\nwant %v", hist, m.ops)
			}
			var names []string
			for _, in := range g.Inputs {
				names = append(names, in.Name)
				want := compiler.Shape{{Size: -1, Param: "batch"}, {Size: -1, Param: "sequence"}}
				if in.DType != compiler.Int64 || !slices.Equal(in.Shape, want) {
					t.Errorf("input %s: %s%v, want i64[batch sequence]", in.Name, in.DType, in.Shape)
				}
			}
			if !slices.Equal(names, m.inputs) {
				t.Errorf("inputs %v, want %v", names, m.inputs)
			}
			if len(g.Outputs) != 1 || g.Outputs[0].Name != "logits" || g.Outputs[0].DType != compiler.Float32 ||
				!slices.Equal(g.Outputs[0].Shape, compiler.Shape{{Size: -1, Param: "batch"}, {Size: 2}}) {
				t.Errorf("outputs %+v, want logits f32[batch 2]", g.Outputs[0])
			}
			var f32 int64
			for name, w := range g.Initializers {
				if err := w.Check(); err != nil {
					t.Errorf("initializer %s: %v", name, err)
				}
				if w.DType == compiler.Float32 {
					f32 += int64(len(w.F32))
				}
			}
			if f32 != m.weights {
				t.Errorf("%d float32 initializer elements, want the README's %d parameters", f32, m.weights)
			}
			if g.Meta["source"] != path || g.Meta["producer"] != "pytorch" {
				t.Errorf("meta %v", g.Meta)
			}
			t.Logf("%s: opset %d, %d nodes, %d initializers, %d inputs, meta %v", m.dir, g.Opset, len(g.Nodes), len(g.Initializers), len(g.Inputs), g.Meta)
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.onnx")
	_, err := Load(path)
	if !errors.Is(err, compiler.ErrBadInput) || !errorNames(err, path) {
		t.Fatalf("err = %v", err)
	}
}

// BenchmarkLoadBertMini measures loading the 44.8 MB sst2-bert-mini model
// (parse, decode 11.2M float32 weights, wire and check the graph).
func BenchmarkLoadBertMini(b *testing.B) {
	path := filepath.Join(sharedDir(b), "models", "sst2-bert-mini", "model.onnx")
	for b.Loop() {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}

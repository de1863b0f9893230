package hf

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestLoadSharedModels checks the structure of the graphs built from the
// two SST-2 models: interface, op mix, parameter count, and that every
// parameter holds the file's values in the layout the graph uses.
func TestLoadSharedModels(t *testing.T) {
	cases := []struct {
		model      string
		inputs     []string
		params     int64 // README.md's parameter counts
		layers     int
		hidden     int
		ops        map[string]int
		classifier []string // head parameters that keep their HF names
	}{
		{
			model:  "sst2-bert-mini",
			inputs: []string{"input_ids", "attention_mask", "token_type_ids"},
			params: 11_171_074, layers: 4, hidden: 256,
			// Per layer: 6 MatMul (q, k, v, attention output, FFN in, FFN
			// out) + 2 in attention, 2 LayerNorms, 1 Softmax, 1 Erf.
			ops:        map[string]int{"MatMul": 32, "LayerNormalization": 9, "Softmax": 4, "Erf": 4, "Gemm": 2, "Tanh": 1, "Cast": 1},
			classifier: []string{"bert.pooler.dense.weight", "classifier.weight", "classifier.bias"},
		},
		{
			model:      "sst2-distilbert-tiny",
			inputs:     []string{"input_ids", "attention_mask"},
			params:     4_385_922,
			layers:     2,
			hidden:     128,
			ops:        map[string]int{"MatMul": 16, "LayerNormalization": 5, "Softmax": 2, "Erf": 2, "Gemm": 2, "Relu": 1, "Where": 2},
			classifier: []string{"pre_classifier.weight", "classifier.weight", "classifier.bias"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			dir := testmodels.ModelDir(t, tc.model)
			g, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if g.Opset != 17 {
				t.Errorf("opset %d, want 17", g.Opset)
			}
			var names []string
			for _, in := range g.Inputs {
				names = append(names, in.Name)
				if in.DType != compiler.Int64 || len(in.Shape) != 2 || in.Shape[0].Param != "batch" || in.Shape[1].Param != "sequence" {
					t.Errorf("input %s: %s%v, want i64[batch sequence]", in.Name, in.DType, in.Shape)
				}
			}
			if !slices.Equal(names, tc.inputs) {
				t.Errorf("inputs %v, want %v", names, tc.inputs)
			}
			if len(g.Outputs) != 1 || g.Outputs[0].Name != "logits" || g.Outputs[0].DType != compiler.Float32 ||
				len(g.Outputs[0].Shape) != 2 || g.Outputs[0].Shape[0].Param != "batch" || g.Outputs[0].Shape[1].Size != 2 {
				t.Errorf("outputs %+v, want logits f32[batch 2]", g.Outputs[0])
			}
			ops := map[string]int{}
			for _, n := range g.Nodes {
				ops[n.Op]++
			}
			for op, want := range tc.ops {
				if ops[op] != want {
					t.Errorf("%d %s nodes, want %d", ops[op], op, want)
				}
			}
			checkTopological(t, g)

			// Parameters: every HF parameter appears once, either under its
			// own name or transposed as "<name>.T"; constants are "const.*".
			var params int64
			for name, w := range g.Initializers {
				if !strings.HasPrefix(name, "const.") {
					params += compiler.NumElements(w.Shape)
				}
			}
			if params != tc.params {
				t.Errorf("%d parameters, want %d", params, tc.params)
			}
			st, err := OpenSafetensors(filepath.Join(dir, SafetensorsFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tc.classifier {
				want, err := st.Weight(name, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := g.Initializers[name]; got == nil || !slices.Equal(got.F32, want.F32) {
					t.Errorf("initializer %s does not hold the file's tensor", name)
				}
			}
			query := strings.Replace(tc.classifier[0], "pooler.dense", "encoder.layer.0.attention.self.query", 1)
			if tc.model == "sst2-distilbert-tiny" {
				query = "distilbert.transformer.layer.0.attention.q_lin.weight"
			}
			stored, err := st.Weight(query, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkTransposed(t, g.Initializers[query+".T"], stored)

			for k, want := range map[string]string{
				"model_type": strings.Split(tc.model, "-")[1], "id2label.0": "negative", "id2label.1": "positive",
				"source": dir, "num_hidden_layers": strconv.Itoa(tc.layers), "hidden_size": strconv.Itoa(tc.hidden),
			} {
				if g.Meta[k] != want {
					t.Errorf("Meta[%s] = %q, want %q", k, g.Meta[k], want)
				}
			}
			verifyGraph(t, g)
		})
	}
}

// checkTopological checks that every node input is a graph input, an
// initializer or the output of an earlier node, and that names are unique.
func checkTopological(t *testing.T, g *compiler.Graph) {
	t.Helper()
	defined := map[string]bool{}
	for _, in := range g.Inputs {
		defined[in.Name] = true
	}
	for name := range g.Initializers {
		if defined[name] {
			t.Errorf("initializer %s shadows a graph input", name)
		}
		defined[name] = true
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if !defined[in] {
				t.Errorf("node %s (%s) reads %q before it is defined", n.Name, n.Op, in)
			}
		}
		for _, out := range n.Outputs {
			if defined[out] {
				t.Errorf("node %s redefines %q", n.Name, out)
			}
			defined[out] = true
		}
	}
	for _, out := range g.Outputs {
		if !defined[out.Name] {
			t.Errorf("graph output %s is never produced", out.Name)
		}
	}
}

// checkTransposed checks that got is want ([out, in]) transposed.
func checkTransposed(t *testing.T, got, want *compiler.Tensor) {
	t.Helper()
	if got == nil || len(want.Shape) != 2 || !slices.Equal(got.Shape, []int64{want.Shape[1], want.Shape[0]}) {
		t.Fatalf("transposed weight: got %v, want the transpose of %v", got, want.Shape)
	}
	out, in := want.Shape[0], want.Shape[1]
	for o := range out {
		for i := range in {
			if got.F32[i*out+o] != want.F32[o*in+i] {
				t.Fatalf("transposed weight differs at [%d][%d]", i, o)
			}
		}
	}
}

// verifyGraph runs the IR verifier and shape inference, and checks that
// inference derives the declared output shapes from the symbolic inputs.
func verifyGraph(t *testing.T, g *compiler.Graph) {
	t.Helper()
	if err := g.Verify(); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	declared := map[string]string{}
	for _, out := range g.Outputs {
		declared[out.Name] = shapeString(out.Shape)
	}
	if err := g.InferShapes(); err != nil {
		t.Fatalf("InferShapes: %v", err)
	}
	for _, out := range g.Outputs {
		v := g.Values[out.Name]
		if v == nil || shapeString(v.Shape) != declared[out.Name] || v.DType != compiler.Float32 {
			t.Errorf("output %s: inferred %+v, declared %s", out.Name, v, declared[out.Name])
		}
	}
}

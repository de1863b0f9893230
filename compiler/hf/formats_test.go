package hf

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/nlpodyssey/safetensors"
	"github.com/x448/float16"

	"github.com/sqc-dev/sqc/compiler"
)

// TestStorageVariants loads the same tiny checkpoints stored in the ways
// `transformers` checkpoints differ, and checks each gives the same graph.
func TestStorageVariants(t *testing.T) {
	for _, arch := range []string{ArchBertModel, ArchBertForSequence, ArchDistilBertModel, ArchDistilBertForSequence} {
		t.Run(arch, func(t *testing.T) {
			m := newTinyModel(t, arch, false)
			want, err := Load(m.write(t))
			if err != nil {
				t.Fatal(err)
			}
			checkTopological(t, want)
			verifyGraph(t, want)

			variants := map[string]func(name string) string{
				// Base models saved from a task model keep the prefix; task
				// models saved by hand sometimes lose it.
				"toggled prefix": func(name string) string {
					prefix := m.config["model_type"].(string) + "."
					if rest, ok := strings.CutPrefix(name, prefix); ok {
						return rest
					}
					if strings.HasPrefix(name, "classifier.") || strings.HasPrefix(name, "pre_classifier.") {
						return name
					}
					return prefix + name
				},
				// TensorFlow-era checkpoints name LayerNorm parameters gamma/beta.
				"gamma and beta": func(name string) string {
					name = strings.Replace(name, "LayerNorm.weight", "LayerNorm.gamma", 1)
					return strings.Replace(name, "LayerNorm.bias", "LayerNorm.beta", 1)
				},
			}
			for vname, rename := range variants {
				renamed := &tinyModel{config: m.config, tensors: map[string]*compiler.Tensor{}}
				for name, w := range m.tensors {
					renamed.tensors[rename(name)] = w
				}
				got, err := Load(renamed.write(t))
				if err != nil {
					t.Fatalf("%s: %v", vname, err)
				}
				sameGraphs(t, vname, got, want)
			}
		})
	}
}

// TestHalfPrecisionWeights checks that F16, BF16 and F64 files load as the
// float32 values they hold.
func TestHalfPrecisionWeights(t *testing.T) {
	m := newTinyModel(t, ArchBertForSequence, false)
	encode := map[safetensors.DType]struct {
		size   int
		put    func(b []byte, v float32)
		widen  func(v float32) float32 // the float32 the stored value means
		format string
	}{
		safetensors.F16: {2, func(b []byte, v float32) {
			binary.LittleEndian.PutUint16(b, float16.Fromfloat32(v).Bits())
		}, func(v float32) float32 { return float16.Fromfloat32(v).Float32() }, "F16"},
		safetensors.BF16: {2, func(b []byte, v float32) {
			binary.LittleEndian.PutUint16(b, uint16(math.Float32bits(v)>>16))
		}, func(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ 0xffff) }, "BF16"},
		safetensors.F64: {8, func(b []byte, v float32) {
			binary.LittleEndian.PutUint64(b, math.Float64bits(float64(v)))
		}, func(v float32) float32 { return v }, "F64"},
	}
	for dt, enc := range encode {
		t.Run(enc.format, func(t *testing.T) {
			views := map[string]safetensors.TensorView{}
			widened := &tinyModel{config: m.config, tensors: map[string]*compiler.Tensor{}}
			for name, w := range m.tensors {
				data := make([]byte, enc.size*len(w.F32))
				ww := compiler.NewTensor(compiler.Float32, w.Shape...)
				for i, v := range w.F32 {
					enc.put(data[enc.size*i:], v)
					ww.F32[i] = enc.widen(v)
				}
				views[name] = view(t, dt, w.Shape, data)
				widened.tensors[name] = ww
			}
			st, err := safetensors.Serialize(views, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Load(writeModel(t, m.configJSON(t), st))
			if err != nil {
				t.Fatal(err)
			}
			want, err := Load(widened.write(t))
			if err != nil {
				t.Fatal(err)
			}
			sameGraphs(t, enc.format, got, want)
		})
	}
}

// sameGraphs compares structure and initializer contents.
func sameGraphs(t *testing.T, what string, got, want *compiler.Graph) {
	t.Helper()
	if len(got.Nodes) != len(want.Nodes) {
		t.Fatalf("%s: %d nodes, want %d", what, len(got.Nodes), len(want.Nodes))
	}
	for i := range got.Nodes {
		if g, w := got.Nodes[i], want.Nodes[i]; g.Op != w.Op || !slices.Equal(g.Inputs, w.Inputs) || !slices.Equal(g.Outputs, w.Outputs) {
			t.Fatalf("%s: node %d is %s%v->%v, want %s%v->%v", what, i, g.Op, g.Inputs, g.Outputs, w.Op, w.Inputs, w.Outputs)
		}
	}
	if !slices.Equal(got.InitializerNames(), want.InitializerNames()) {
		t.Fatalf("%s: initializers %v, want %v", what, got.InitializerNames(), want.InitializerNames())
	}
	for name, w := range want.Initializers {
		g := got.Initializers[name]
		if !slices.Equal(g.Shape, w.Shape) || !slices.Equal(g.F32, w.F32) || !slices.Equal(g.I64, w.I64) {
			t.Fatalf("%s: initializer %s differs", what, name)
		}
	}
}

// TestBaseModelOutputs checks the interface of the base architectures.
func TestBaseModelOutputs(t *testing.T) {
	for arch, outputs := range map[string][]string{
		ArchBertModel:       {"last_hidden_state", "pooler_output"},
		ArchDistilBertModel: {"last_hidden_state"},
	} {
		g, err := Build(tinyConfig(arch), RandomWeights(1))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range g.Outputs {
			names = append(names, o.Name+shapeString(o.Shape))
		}
		want := []string{"last_hidden_state[batch sequence 8]", "pooler_output[batch 8]"}[:len(outputs)]
		if !slices.Equal(names, want) {
			t.Errorf("%s outputs %v, want %v", arch, names, want)
		}
		if _, ok := g.Meta["id2label.0"]; ok {
			t.Errorf("%s: base model has labels in Meta", arch)
		}
		checkTopological(t, g)
	}
}

func shapeString(s compiler.Shape) string {
	dims := make([]string, len(s))
	for i, d := range s {
		dims[i] = d.String()
	}
	return "[" + strings.Join(dims, " ") + "]"
}

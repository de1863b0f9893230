package hf

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestTokenClassifierOfEveryFamily turns each tiny model of a family with
// a *ForTokenClassification into one (its encoder's parameters under the
// task prefix, without a pooler, plus a random `classifier`) and checks
// the built graph's logits against the head applied by hand, in float64,
// to every token of the base model's last_hidden_state. PyTorch itself is
// compared on the tiny token classifiers of TinyTokenModels (BERT, XLM-R,
// DistilBERT, ModernBERT, whose head differs); this covers the families
// those leave out (CamemBERT, ELECTRA, MPNet, ALBERT, DeBERTa v1 and v2)
// and both kinds of source checkpoint (base and sequence classifier).
func TestTokenClassifierOfEveryFamily(t *testing.T) {
	labels := []string{"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}
	covered := map[string]bool{}
	for _, name := range slices.Concat(testmodels.TinyModels, testmodels.TinyDeBERTaModels) {
		dir, ref := loadTiny(t, name)
		cfg, err := LoadConfig(filepath.Join(dir, ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		arch := tokenArchitecture(cfg.ModelType)
		if arch == "" || cfg.IsTokenClassifier() || cfg.ModelType == ModelModernBERT || cfg.IsJina() {
			continue
		}
		covered[arch] = true
		t.Run(name, func(t *testing.T) {
			tok := tokenClassifierFolder(t, dir, cfg, arch, labels)
			g, err := Load(tok)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Outputs) != 1 || g.Outputs[0].Name != outLogits || shapeString(g.Outputs[0].Shape) != "[batch sequence 5]" {
				t.Fatalf("outputs %v, want logits [batch, sequence, 5]", g.Outputs)
			}
			if g.Meta["id2label.3"] != "B-LOC" {
				t.Errorf("Meta id2label.3 = %q, want B-LOC", g.Meta["id2label.3"])
			}
			enc, err := LoadEncoder(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := runGraph(t, g, ref.Inputs)[outLogits]
			hidden := runGraph(t, enc, ref.Inputs)[outLastHidden]
			w := g.Initializers
			h := int(hidden.Shape[2])
			var want []float32
			for r := range len(hidden.F32) / h {
				want = append(want, dense(hidden.F32[r*h:(r+1)*h], transposed(w["classifier.weight.T"]), w["classifier.bias"], nil)...)
			}
			if d := maxAbsDiff(got.F32, want); !(d <= onnxTolerance) {
				t.Errorf("logits differ from classifier(last_hidden_state) by %.3g", d)
			}
		})
	}
	for _, arch := range tokenClassifiers {
		if !covered[arch] && arch != ArchModernBertForToken {
			t.Errorf("%s: no tiny model of its family to build it from", arch)
		}
	}
}

// tokenArchitecture is the token classifier of a model_type, or "".
func tokenArchitecture(modelType string) string {
	for _, a := range architecturesByType[modelType] {
		if slices.Contains(tokenClassifiers, a) {
			return a
		}
	}
	return ""
}

// tokenClassifierFolder writes dir's model as the token classifier arch
// would be saved: config.json naming arch and labels, the encoder's
// parameters under the task prefix (a base checkpoint's prefixed, a
// classifier's head and every pooler dropped) and a random classifier.
func tokenClassifierFolder(t *testing.T, dir string, cfg Config, arch string, labels []string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	id2label, label2id := map[string]string{}, map[string]int{}
	for i, l := range labels {
		id2label[strconv.Itoa(i)], label2id[l] = l, i
	}
	raw["architectures"], raw["id2label"], raw["label2id"] = []string{arch}, id2label, label2id
	delete(raw, "num_labels")
	st, err := OpenSafetensors(filepath.Join(dir, SafetensorsFile))
	if err != nil {
		t.Fatal(err)
	}
	prefix := cfg.ParamPrefix()
	m := &tinyModel{config: raw, tensors: map[string]*compiler.Tensor{}}
	for _, name := range st.Names() {
		stored := name
		if !cfg.IsClassifier() {
			stored = prefix + name
		}
		if !strings.HasPrefix(stored, prefix) || strings.Contains(stored, "pooler.") {
			continue // the sequence classifier's head, the poolers
		}
		w, err := st.Weight(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		m.tensors[stored] = w
	}
	h := int64(cfg.HiddenSize)
	rng := rand.New(rand.NewPCG(5, uint64(len(labels))))
	weight, bias := compiler.NewTensor(compiler.Float32, int64(len(labels)), h), compiler.NewTensor(compiler.Float32, int64(len(labels)))
	for i := range weight.F32 {
		weight.F32[i] = float32(rng.NormFloat64()) / 4
	}
	for i := range bias.F32 {
		bias.F32[i] = float32(rng.NormFloat64())
	}
	m.tensors["classifier.weight"], m.tensors["classifier.bias"] = weight, bias
	return m.write(t)
}

// runGraph runs g's FP32 interpreter on inputs.
func runGraph(t *testing.T, g *compiler.Graph, inputs map[string]*compiler.Tensor) map[string]*compiler.Tensor {
	t.Helper()
	it, err := interp.New(g)
	if err != nil {
		t.Fatal(err)
	}
	feeds := map[string]*compiler.Tensor{}
	for _, in := range g.Inputs {
		feeds[in.Name] = inputs[in.Name]
	}
	out, err := it.Run(feeds, &interp.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// transposed is w [in, out] as [out, in] (a registered "<name>.T" back in
// torch's layout).
func transposed(w *compiler.Tensor) *compiler.Tensor {
	in, out := w.Shape[0], w.Shape[1]
	tt := compiler.NewTensor(compiler.Float32, out, in)
	for i := range in {
		for o := range out {
			tt.F32[o*in+i] = w.F32[i*out+o]
		}
	}
	return tt
}

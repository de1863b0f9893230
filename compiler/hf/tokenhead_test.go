package hf

import (
	"encoding/json"
	"fmt"
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

// TestTokenHeadsOfEveryFamily turns each tiny model of a family with a
// *ForTokenClassification or *ForQuestionAnswering into one (its
// encoder's parameters under the task prefix, without a pooler, plus a
// random `classifier` or `qa_outputs`) and checks the built graph's
// outputs against the head applied by hand, in float64, to every token of
// the base model's last_hidden_state. PyTorch itself is compared on the
// tiny models of TinyTokenModels and the QA ones (BERT, XLM-R,
// DistilBERT, ModernBERT, whose token head differs); this covers the
// families those leave out (CamemBERT, ELECTRA, MPNet, ALBERT, DeBERTa v1
// and v2) and both kinds of source checkpoint (base and sequence
// classifier).
func TestTokenHeadsOfEveryFamily(t *testing.T) {
	labels := []string{"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}
	covered := map[string]bool{}
	for _, name := range slices.Concat(testmodels.TinyModels, testmodels.TinyDeBERTaModels) {
		dir, ref := loadTiny(t, name)
		cfg, err := LoadConfig(filepath.Join(dir, ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.perTokenHead() || cfg.ModelType == ModelModernBERT || cfg.IsJina() {
			continue
		}
		for _, arch := range architecturesByType[cfg.ModelType] {
			qa := slices.Contains(questionAnswerers, arch)
			if !qa && !slices.Contains(tokenClassifiers, arch) {
				continue
			}
			covered[arch] = true
			t.Run(name+"/"+arch, func(t *testing.T) {
				outs, want := "[logits: f32[batch, sequence, 5]]", []string{outLogits}
				head, n := "classifier", len(labels)
				if qa {
					outs, want = "[start_logits: f32[batch, sequence] end_logits: f32[batch, sequence]]", []string{outStartLogits, outEndLogits}
					head, n = "qa_outputs", 2
				}
				g, err := Load(taskFolder(t, dir, cfg, arch, head, labels, n))
				if err != nil {
					t.Fatal(err)
				}
				if got := fmt.Sprint(g.Outputs); got != outs {
					t.Fatalf("outputs %s, want %s", got, outs)
				}
				if got := g.Meta["id2label.3"]; (got == "B-LOC") == qa {
					t.Errorf("Meta id2label.3 = %q", got)
				}
				enc, err := LoadEncoder(dir)
				if err != nil {
					t.Fatal(err)
				}
				res := runGraph(t, g, ref.Inputs)
				hidden := runGraph(t, enc, ref.Inputs)[outLastHidden]
				w := g.Initializers
				h := int(hidden.Shape[2])
				var logits []float32
				for r := range len(hidden.F32) / h {
					logits = append(logits, dense(hidden.F32[r*h:(r+1)*h], transposed(w[head+".weight.T"]), w[head+".bias"], nil)...)
				}
				for j, out := range want {
					got := res[out].F32
					if qa { // column j of the [tokens, 2] logits
						var col []float32
						for r := range len(logits) / 2 {
							col = append(col, logits[2*r+j])
						}
						if d := maxAbsDiff(got, col); !(d <= onnxTolerance) {
							t.Errorf("%s differs from qa_outputs(last_hidden_state)[..., %d] by %.3g", out, j, d)
						}
					} else if d := maxAbsDiff(got, logits); !(d <= onnxTolerance) {
						t.Errorf("logits differ from classifier(last_hidden_state) by %.3g", d)
					}
				}
			})
		}
	}
	for _, arch := range slices.Concat(tokenClassifiers, questionAnswerers) {
		if !covered[arch] && arch != ArchModernBertForToken && arch != ArchModernBertForQA { // tiny models of their own
			t.Errorf("%s: no tiny model of its family to build it from", arch)
		}
	}
}

// taskFolder writes dir's model as the per-token task model arch would be
// saved: config.json naming arch and labels, the encoder's parameters
// under the task prefix (a base checkpoint's prefixed, a classifier's head
// and every pooler dropped) and a random head Linear of n outputs.
func taskFolder(t *testing.T, dir string, cfg Config, arch, head string, labels []string, n int) string {
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
	if head == "qa_outputs" { // QA configs keep the default two labels
		delete(raw, "id2label")
		delete(raw, "label2id")
	}
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
	rng := rand.New(rand.NewPCG(5, uint64(n)))
	weight, bias := compiler.NewTensor(compiler.Float32, int64(n), h), compiler.NewTensor(compiler.Float32, int64(n))
	for i := range weight.F32 {
		weight.F32[i] = float32(rng.NormFloat64()) / 4
	}
	for i := range bias.F32 {
		bias.F32[i] = float32(rng.NormFloat64())
	}
	m.tensors[head+".weight"], m.tensors[head+".bias"] = weight, bias
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

package hf

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nlpodyssey/safetensors"

	"github.com/sqc-dev/sqc/compiler"
)

// tinyModel is a small random checkpoint written the way `transformers`
// saves one, for tests that need files they can break.
type tinyModel struct {
	config  map[string]any
	tensors map[string]*compiler.Tensor // stored name -> [out, in] layout, f32
}

// recorder is a WeightSource that remembers what Build asked for.
type recorder struct {
	inner WeightSource
	got   map[string]*compiler.Tensor
	order []string
}

func (r *recorder) Weight(name string, shape []int64) (*compiler.Tensor, error) {
	t, err := r.inner.Weight(name, shape)
	if err == nil {
		r.got[name] = t
		r.order = append(r.order, name)
	}
	return t, err
}

// tinyConfig is a 2-layer, 8-wide model of the given architecture.
func tinyConfig(arch string) Config {
	c := Config{
		Architecture: arch, VocabSize: 20, HiddenSize: 8, NumLayers: 2, NumHeads: 2,
		IntermediateSize: 12, MaxPositions: 16, HiddenAct: ActGELU, LayerNormEps: 1e-12,
		Labels: []string{"negative", "positive", "neutral"},
	}
	if strings.HasPrefix(arch, "Distil") {
		c.ModelType = ModelDistilBERT
	} else {
		c.ModelType, c.TypeVocabSize = ModelBERT, 3
	}
	return c
}

// newTinyModel makes a random checkpoint. A base model saved alone stores
// its parameters without the "bert."/"distilbert." prefix; with addPrefix
// they get it, as when the encoder of a task model is saved.
func newTinyModel(t testing.TB, arch string, addPrefix bool) *tinyModel {
	t.Helper()
	return newModel(t, tinyConfig(arch), addPrefix)
}

func newModel(t testing.TB, cfg Config, addPrefix bool) *tinyModel {
	t.Helper()
	rec := &recorder{inner: RandomWeights(7), got: map[string]*compiler.Tensor{}}
	if _, err := Build(cfg, rec); err != nil {
		t.Fatalf("building tiny %s: %v", cfg.Architecture, err)
	}
	m := &tinyModel{config: configMap(cfg), tensors: map[string]*compiler.Tensor{}}
	for name, w := range rec.got {
		if addPrefix && !cfg.IsClassifier() {
			name = cfg.ModelType + "." + name
		}
		m.tensors[name] = w
	}
	return m
}

// configMap is the config.json `transformers` would write for c.
func configMap(c Config) map[string]any {
	id2label := map[string]string{}
	label2id := map[string]int{}
	for i, l := range c.Labels {
		id2label[strconv.Itoa(i)] = l
		label2id[l] = i
	}
	m := map[string]any{
		"model_type": c.ModelType, "architectures": []string{c.Architecture},
		"vocab_size": c.VocabSize, "max_position_embeddings": c.MaxPositions,
		"id2label": id2label, "label2id": label2id, "torch_dtype": "float32", "pad_token_id": 0,
	}
	if c.IsRoBERTa() {
		m["pad_token_id"] = c.PadTokenID
	}
	if c.hasBertKeys() {
		m["hidden_size"], m["num_hidden_layers"], m["num_attention_heads"] = c.HiddenSize, c.NumLayers, c.NumHeads
		m["intermediate_size"], m["hidden_act"], m["type_vocab_size"] = c.IntermediateSize, c.HiddenAct, c.TypeVocabSize
		m["layer_norm_eps"], m["position_embedding_type"] = c.LayerNormEps, "absolute"
	} else {
		m["dim"], m["n_layers"], m["n_heads"] = c.HiddenSize, c.NumLayers, c.NumHeads
		m["hidden_dim"], m["activation"], m["sinusoidal_pos_embds"] = c.IntermediateSize, c.HiddenAct, false
	}
	return m
}

func (m *tinyModel) configJSON(t testing.TB) []byte {
	t.Helper()
	b, err := json.MarshalIndent(m.config, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// safetensorsBytes serializes the tensors as F32 with the library.
func (m *tinyModel) safetensorsBytes(t testing.TB) []byte {
	t.Helper()
	views := map[string]safetensors.TensorView{}
	for name, w := range m.tensors {
		views[name] = f32View(t, w)
	}
	b, err := safetensors.Serialize(views, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func f32View(t testing.TB, w *compiler.Tensor) safetensors.TensorView {
	t.Helper()
	data := make([]byte, 4*len(w.F32))
	for i, v := range w.F32 {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	return view(t, safetensors.F32, w.Shape, data)
}

func view(t testing.TB, dt safetensors.DType, shape []int64, data []byte) safetensors.TensorView {
	t.Helper()
	s := make([]uint64, len(shape))
	for i, d := range shape {
		s[i] = uint64(d)
	}
	v, err := safetensors.NewTensorView(dt, s, data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// write puts config.json and model.safetensors into a fresh directory.
func (m *tinyModel) write(t testing.TB) string {
	t.Helper()
	return writeModel(t, m.configJSON(t), m.safetensorsBytes(t))
}

func writeModel(t testing.TB, cfg, st []byte) string {
	t.Helper()
	dir := t.TempDir()
	if cfg != nil {
		if err := os.WriteFile(filepath.Join(dir, ConfigFile), cfg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if st != nil {
		if err := os.WriteFile(filepath.Join(dir, SafetensorsFile), st, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Package tinymodel writes small random-weight HuggingFace BERT folders
// (config.json and model.safetensors, as `transformers` saves them) for
// tests that need a model of a shape no shared model has: a single-logit
// cross-encoder, a multi-label classifier, the encoder of a
// sentence-transformers folder.
package tinymodel

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nlpodyssey/safetensors"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
)

// recorder keeps the parameters Build asks a WeightSource for.
type recorder struct {
	inner hf.WeightSource
	got   map[string]*compiler.Tensor
}

func (r *recorder) Weight(name string, shape []int64) (*compiler.Tensor, error) {
	t, err := r.inner.Weight(name, shape)
	if err == nil {
		r.got[name] = t
	}
	return t, err
}

// Parameters returns the random parameters (hf.RandomWeights(seed)) of
// the BERT model cfg describes, by their `transformers` names.
func Parameters(cfg hf.Config, seed uint64) (map[string]*compiler.Tensor, error) {
	rec := &recorder{inner: hf.RandomWeights(seed), got: map[string]*compiler.Tensor{}}
	if _, err := hf.Build(cfg, rec); err != nil {
		return nil, err
	}
	return rec.got, nil
}

// Config is the config.json `transformers` writes for a BERT cfg, with
// extra keys added (problem_type, ...).
func Config(cfg hf.Config, extra map[string]any) map[string]any {
	m := map[string]any{
		"architectures": []string{cfg.Architecture}, "model_type": hf.ModelBERT, "vocab_size": cfg.VocabSize,
		"hidden_size": cfg.HiddenSize, "num_hidden_layers": cfg.NumLayers, "num_attention_heads": cfg.NumHeads,
		"intermediate_size": cfg.IntermediateSize, "hidden_act": cfg.HiddenAct, "max_position_embeddings": cfg.MaxPositions,
		"type_vocab_size": cfg.TypeVocabSize, "layer_norm_eps": cfg.LayerNormEps, "pad_token_id": 0,
		"position_embedding_type": "absolute", "torch_dtype": "float32",
	}
	if len(cfg.Labels) > 0 {
		id2label, label2id := map[string]string{}, map[string]int{}
		for i, l := range cfg.Labels {
			id2label[strconv.Itoa(i)], label2id[l] = l, i
		}
		m["id2label"], m["label2id"] = id2label, label2id
	}
	maps.Copy(m, extra)
	return m
}

// JSON is v indented, with a final newline.
func JSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}

// Safetensors serialises float32 tensors in the safetensors format.
func Safetensors(tensors map[string]*compiler.Tensor) ([]byte, error) {
	views := map[string]safetensors.TensorView{}
	for name, w := range tensors {
		data := make([]byte, 4*len(w.F32))
		for i, v := range w.F32 {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
		shape := make([]uint64, len(w.Shape))
		for i, d := range w.Shape {
			shape[i] = uint64(d)
		}
		v, err := safetensors.NewTensorView(safetensors.F32, shape, data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		views[name] = v
	}
	return safetensors.Serialize(views, map[string]string{"format": "pt"})
}

// WriteBERT writes config.json (Config(cfg, extra)) and model.safetensors
// (Parameters(cfg, seed)) into dir.
func WriteBERT(dir string, cfg hf.Config, seed uint64, extra map[string]any) error {
	params, err := Parameters(cfg, seed)
	if err != nil {
		return err
	}
	st, err := Safetensors(params)
	if err != nil {
		return err
	}
	js, err := JSON(Config(cfg, extra))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, hf.ConfigFile), js, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, hf.SafetensorsFile), st, 0o644)
}

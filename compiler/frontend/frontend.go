// Package frontend loads a model from whatever the user points sqc at: an
// .onnx file (compiler/onnx), a HuggingFace directory holding config.json
// and model.safetensors (compiler/hf), a sentence-transformers folder
// (compiler/sentence: its Transformer module's encoder, last_hidden_state
// only), or a directory of ONNX exports as optimum and transformers.js
// lay them out (tokenizer and config at the top, onnx/model.onnx beside
// its quantised and float16 variants). Either way the result is the same
// IR.
package frontend

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/compiler/sentence"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// Load reads the model at path: an .onnx file, a directory with
// config.json + model.safetensors, or a directory holding model.onnx or
// onnx/model.onnx (the float32 export of an optimum or transformers.js
// repository, which sqc quantises itself; point at onnx/model_quantized.onnx
// or another variant to read that one instead).
func Load(path string) (*compiler.Graph, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, compiler.BadInput(path, "", err)
	}
	if !st.IsDir() {
		if strings.HasSuffix(strings.ToLower(path), ".onnx") {
			return loadONNX(path)
		}
		return nil, compiler.BadInput(path, "", fmt.Errorf("%w: expected an .onnx file or a HuggingFace model directory", compiler.ErrMalformed))
	}
	if sentence.IsFolder(path) {
		m, err := sentence.Load(path)
		if err != nil {
			return nil, err
		}
		if m.Sparse != nil {
			return loadSparseEncoder(m)
		}
		return hf.LoadEncoder(m.TransformerDir)
	}
	if exists(filepath.Join(path, "config.json")) && hf.HasWeights(path) {
		return hf.Load(path)
	}
	for _, f := range onnxInDir {
		if exists(filepath.Join(path, f)) {
			return loadONNX(filepath.Join(path, f))
		}
	}
	if variants, _ := filepath.Glob(filepath.Join(path, "onnx", "*.onnx")); len(variants) > 0 {
		for i, v := range variants {
			variants[i] = filepath.Base(v)
		}
		return nil, compiler.BadInput(path, "", fmt.Errorf("%w: directory has no model.onnx or onnx/model.onnx (the float32 export); its onnx/ holds %s: give one of them",
			compiler.ErrMalformed, strings.Join(variants, ", ")))
	}
	return nil, compiler.BadInput(path, "", errors.New("directory has neither config.json + model.safetensors (or pytorch_model.bin, or shards of either) nor model.onnx or onnx/model.onnx"))
}

// loadSparseEncoder reads a sentence-transformers SparseEncoder folder's
// MLMTransformer: the whole masked language model, head included, whose
// logits SpladePooling pools.
func loadSparseEncoder(m *sentence.Model) (*compiler.Graph, error) {
	g, err := hf.Load(m.TransformerDir)
	if err != nil {
		return nil, err
	}
	if !compiler.IsMaskedLM(g) {
		return nil, compiler.BadInput(filepath.Join(m.Dir, sentence.ModulesFile), "module 0 (MLMTransformer)",
			fmt.Errorf("%w: its config.json names %s, not a masked language model (*ForMaskedLM) for SpladePooling", compiler.ErrUnknownModel, g.Meta["architecture"]))
	}
	return g, nil
}

// loadONNX reads an .onnx file and, where its side files' config.json
// names the classes (optimum writes it beside the export), their names.
func loadONNX(path string) (*compiler.Graph, error) {
	g, err := onnx.Load(path)
	if err != nil {
		return nil, err
	}
	// The config.json beside it is only a hint: a missing or unreadable
	// one names no classes.
	if data, err := os.ReadFile(filepath.Join(Dir(path), "config.json")); err == nil {
		configLabels(g, data)
		configArchitecture(g, data)
	}
	return g, nil
}

// configArchitecture sets g's Meta "architecture" and "vocab_size" (as
// the HuggingFace frontend sets them) from config.json data when it names
// one architecture: what says an export's "logits" are a masked language
// model's (compiler.IsMaskedLM), which sqc serves as a sparse encoder,
// rather than a token classifier's. Only a hint, as configLabels'.
func configArchitecture(g *compiler.Graph, data []byte) {
	var raw struct {
		Architectures []string `json:"architectures"`
		VocabSize     *int64   `json:"vocab_size"`
	}
	if json.Unmarshal(data, &raw) != nil || len(raw.Architectures) != 1 || g.Meta["architecture"] != "" {
		return
	}
	g.Meta["architecture"] = raw.Architectures[0]
	if raw.VocabSize != nil && g.Meta["vocab_size"] == "" {
		g.Meta["vocab_size"] = strconv.FormatInt(*raw.VocabSize, 10)
	}
}

// configLabels sets g's class names (Meta "id2label.N", as the
// HuggingFace frontend sets them) from the id2label of config.json data
// (hf.ID2Label), when g names none and its "logits" output has one
// column per label. The file is only a hint beside an ONNX export: a
// malformed or mismatched one names no classes.
func configLabels(g *compiler.Graph, data []byte) {
	labels, err := hf.ID2Label(data)
	if err != nil || len(labels) == 0 {
		return
	}
	for k := range g.Meta {
		if strings.HasPrefix(k, "id2label.") {
			return
		}
	}
	for _, o := range g.Outputs {
		if o.Name == "logits" && len(o.Shape) > 0 && o.Shape[len(o.Shape)-1].Known() && o.Shape[len(o.Shape)-1].Size == int64(len(labels)) {
			for i, l := range labels {
				g.Meta["id2label."+strconv.Itoa(i)] = l
			}
			return
		}
	}
}

// onnxInDir are the model files Load looks for in a directory, in order.
var onnxInDir = []string{"model.onnx", filepath.Join("onnx", "model.onnx")}

// Dir is the directory that holds the model's side files (vocab.txt,
// tokenizer.json, config.json): the model directory itself, or the
// directory of an .onnx file, or where that is an optimum or
// transformers.js onnx/ folder with no tokenizer of its own, the
// repository above it; for a sentence-transformers folder, its
// Transformer module's directory.
func Dir(path string) string {
	if sentence.IsFolder(path) {
		if m, err := sentence.Load(path); err == nil {
			return m.TransformerDir
		}
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return path
	}
	dir := filepath.Dir(path)
	if parent := filepath.Dir(dir); filepath.Base(dir) == "onnx" && !tokenizer.HasSource(dir) && tokenizer.HasSource(parent) {
		return parent
	}
	return dir
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

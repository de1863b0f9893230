package sentence_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/frontend"
	. "github.com/sqc-dev/sqc/compiler/sentence"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// sparseFolder lays out a SparseEncoder folder around the tiny model
// name, with its Transformer's and the folder's configs, and files added
// or replaced.
func sparseFolder(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	all := map[string]string{
		"1_SpladePooling/config.json": `{"pooling_strategy": "max", "activation_function": "relu", "word_embedding_dimension": 120}`,
		BertConfigFile:                `{"max_seq_length": 24, "do_lower_case": false}`,
		STConfigFile:                  `{"model_type": "SparseEncoder", "prompts": {"query": "", "document": ""}, "similarity_fn_name": "dot"}`,
	}
	for f, s := range files {
		all[f] = s
	}
	return testmodels.SparseEncoderFolder(t, name, all)
}

// TestLoadSparseFolder: a SparseEncoder folder reads as its
// SpladePooling's head (defaults where its config.json is silent), its
// masked language model loads whole (head included: logits over the
// vocabulary), and what sqc does not compute is refused naming the file
// and the setting.
func TestLoadSparseFolder(t *testing.T) {
	dir := sparseFolder(t, testmodels.TinyBertMLM, nil)
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Sparse == nil || *m.Sparse != (modelrt.SparseHead{Pooling: modelrt.SparseMax, Activation: modelrt.SparseReLU}) || m.TransformerDir != dir || m.MaxSeqLength != 24 || m.WordEmbeddingDim != 120 {
		t.Errorf("sparse %+v, transformer %q, max_seq_length %d, dim %d", m.Sparse, m.TransformerDir, m.MaxSeqLength, m.WordEmbeddingDim)
	}
	if err := m.Check(120); err != nil {
		t.Error(err)
	}
	if err := m.Check(64); !errors.Is(err, compiler.ErrShapeMismatch) || !strings.Contains(err.Error(), "vocabulary") {
		t.Errorf("Check(64): %v, want a vocabulary mismatch", err)
	}
	g, err := frontend.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !compiler.IsMaskedLM(g) || g.Outputs[0].Shape[2].Size != 120 {
		t.Errorf("outputs %v: want a masked language model's logits over 120 entries", g.Outputs)
	}

	m, err = Load(sparseFolder(t, testmodels.TinyBertMLM, map[string]string{"1_SpladePooling/config.json": `{"pooling_strategy": "sum", "activation_function": "log1p_relu"}`}))
	if err != nil || *m.Sparse != (modelrt.SparseHead{Pooling: modelrt.SparseSum, Activation: modelrt.SparseLog1pReLU}) || m.WordEmbeddingDim != 0 {
		t.Errorf("sum, log1p_relu: %+v, %v", m, err)
	}

	for _, tc := range []struct {
		name  string
		files map[string]string
		want  error
		says  []string
	}{
		{"strategy", map[string]string{"1_SpladePooling/config.json": `{"pooling_strategy": "mean"}`}, compiler.ErrUnknownModel, []string{"1_SpladePooling", "mean"}},
		{"activation", map[string]string{"1_SpladePooling/config.json": `{"activation_function": "gelu"}`}, compiler.ErrUnknownModel, []string{"1_SpladePooling", "gelu"}},
		{"dimension", map[string]string{"1_SpladePooling/config.json": `{"word_embedding_dimension": 0}`}, compiler.ErrMalformed, []string{"word_embedding_dimension"}},
		{"not json", map[string]string{"1_SpladePooling/config.json": `{`}, compiler.ErrMalformed, []string{"1_SpladePooling"}},
		{"third module", map[string]string{ModulesFile: strings.TrimSuffix(testmodels.SparseEncoderModules, "]") + `,{"idx":2,"name":"2","path":"2_CSRSparsity","type":"sentence_transformers.sparse_encoder.models.SparseAutoEncoder"}]`},
			compiler.ErrUnknownModel, []string{ModulesFile, "MLMTransformer, SpladePooling, SparseAutoEncoder"}},
		{"no pooling", map[string]string{ModulesFile: `[{"idx":0,"name":"0","path":"","type":"sentence_transformers.sparse_encoder.models.MLMTransformer"}]`}, compiler.ErrUnknownModel, []string{"SpladePooling"}},
	} {
		_, err := Load(sparseFolder(t, testmodels.TinyBertMLM, tc.files))
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %v does not say %q", tc.name, err, s)
			}
		}
	}

	// An MLMTransformer whose checkpoint is not a masked language model.
	_, err = frontend.Load(sparseFolder(t, testmodels.TinyBertBase, nil))
	if !errors.Is(err, compiler.ErrUnknownModel) || !strings.Contains(err.Error(), "BertModel") || !strings.Contains(err.Error(), ModulesFile) {
		t.Errorf("MLMTransformer over BertModel: %v", err)
	}
}

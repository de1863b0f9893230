package sentence_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/frontend"
	. "github.com/sqc-dev/sqc/compiler/sentence"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

func TestLoadTinyFolder(t *testing.T) {
	m, err := Load(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	if m.TransformerDir != tinyDir || !slices.Equal(m.Head.Pooling, []modelrt.PoolingMode{modelrt.PoolMean}) || !m.Head.Normalize {
		t.Errorf("transformer %q, pooling %v, normalize %v", m.TransformerDir, m.Head.Pooling, m.Head.Normalize)
	}
	if len(m.Head.Dense) != 1 || m.Head.Dense[0].In != 32 || m.Head.Dense[0].Out != 16 || m.Head.Dense[0].Activation != modelrt.ActTanh || len(m.Head.Dense[0].Bias) != 16 {
		t.Errorf("dense %+v", m.Head.Dense)
	}
	if m.MaxSeqLength != 24 || m.WordEmbeddingDim != 32 || m.DefaultPrompt != "" || m.Prompts["query"] != "query: " {
		t.Errorf("max_seq_length %d, dim %d, prompts %v default %q", m.MaxSeqLength, m.WordEmbeddingDim, m.Prompts, m.DefaultPrompt)
	}
	if err := m.Check(32); err != nil {
		t.Error(err)
	}
	if err := m.Check(64); !errors.Is(err, compiler.ErrShapeMismatch) {
		t.Errorf("Check(64): %v", err)
	}
	for name, want := range map[string]string{"": "", "none": "", "query": "query: "} {
		if p, err := m.Prompt(name); err != nil || p != want {
			t.Errorf("Prompt(%q) = %q, %v", name, p, err)
		}
	}
	if _, err := m.Prompt("doc"); !errors.Is(err, compiler.ErrInvalidRequest) || !strings.Contains(err.Error(), "passage, query") {
		t.Errorf("unknown prompt: %v", err)
	}
	g, err := frontend.Load(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Outputs) != 1 || g.Outputs[0].Name != "last_hidden_state" {
		t.Errorf("outputs %v, want last_hidden_state alone", g.Outputs)
	}
	if frontend.Dir(tinyDir) != tinyDir {
		t.Errorf("Dir %q", frontend.Dir(tinyDir))
	}
}

// variant copies tinyDir to a temporary folder and applies edit (file ->
// new contents; nil removes the file).
func variant(t *testing.T, edit map[string]*string) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.Walk(tinyDir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(tinyDir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range edit {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if s == nil {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(*s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func str(s string) *string { return &s }

const modulesPrefix = `[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}`

func TestLoadVariants(t *testing.T) {
	// Every pooling mode and their concatenation; modules out of index order.
	d := variant(t, map[string]*string{
		"1_Pooling/config.json": str(`{"word_embedding_dimension":32,"pooling_mode_lasttoken":true,"pooling_mode_cls_token":true,"pooling_mode_max_tokens":true,"pooling_mode_mean_sqrt_len_tokens":true,"pooling_mode_weightedmean_tokens":true,"pooling_mode_mean_tokens":false}`),
		ModulesFile:             str(`[{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"}]`),
		STConfigFile:            str(`{"prompts":{"query":"query: "},"default_prompt_name":"query"}`),
	})
	m, err := Load(d)
	if err != nil {
		t.Fatal(err)
	}
	want := []modelrt.PoolingMode{modelrt.PoolCLS, modelrt.PoolMax, modelrt.PoolMeanSqrtLen, modelrt.PoolWeightedMean, modelrt.PoolLastToken}
	if !slices.Equal(m.Head.Pooling, want) || len(m.Head.Dense) != 0 || m.Head.Normalize {
		t.Errorf("pooling %v, dense %d, normalize %v", m.Head.Pooling, len(m.Head.Dense), m.Head.Normalize)
	}
	if p, err := m.Prompt(""); p != "query: " || err != nil {
		t.Errorf("default prompt %q, %v", p, err)
	}
	if m.Head.Dim(32) != 5*32 {
		t.Errorf("dim %d", m.Head.Dim(32))
	}
	// A Dense without bias and with the identity; Transformer in a subfolder.
	d = variant(t, map[string]*string{
		"2_Dense/config.json": str(`{"in_features":32,"out_features":16,"bias":false,"activation_function":"torch.nn.modules.linear.Identity"}`),
		ModulesFile:           str(strings.Replace(modulesPrefix, `"path":""`, `"path":"0_Transformer"`, 1) + `,{"idx":2,"name":"2","path":"2_Dense","type":"sentence_transformers.models.Dense"}]`),
	})
	if m, err = Load(d); err != nil {
		t.Fatal(err)
	}
	if m.Head.Dense[0].Bias != nil || m.Head.Dense[0].Activation != modelrt.ActIdentity || m.TransformerDir != filepath.Join(d, "0_Transformer") {
		t.Errorf("dense %+v, transformer %q", m.Head.Dense[0], m.TransformerDir)
	}
}

func TestLoadBadFolders(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit map[string]*string
		want error
		says string
	}{
		{"not json", map[string]*string{ModulesFile: str(`{`)}, compiler.ErrMalformed, ModulesFile},
		{"no transformer", map[string]*string{ModulesFile: str(`[{"idx":0,"path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]`)}, compiler.ErrUnknownModel, "Transformer"},
		{"unknown module", map[string]*string{ModulesFile: str(modulesPrefix + `,{"idx":2,"path":"2_LayerNorm","type":"sentence_transformers.models.LayerNorm"}]`)}, compiler.ErrUnknownModel, "LayerNorm"},
		{"no pooling", map[string]*string{ModulesFile: str(`[{"idx":0,"path":"","type":"sentence_transformers.models.Transformer"},{"idx":1,"path":"3","type":"sentence_transformers.models.Normalize"}]`)}, compiler.ErrUnknownModel, "Normalize before Pooling"},
		{"escaping path", map[string]*string{ModulesFile: str(strings.Replace(modulesPrefix, `"1_Pooling"`, `"../x"`, 1) + "]")}, compiler.ErrMalformed, "outside"},
		{"dense after normalize", map[string]*string{ModulesFile: str(modulesPrefix + `,{"idx":2,"path":"n","type":"sentence_transformers.models.Normalize"},{"idx":3,"path":"2_Dense","type":"sentence_transformers.models.Dense"}]`)}, compiler.ErrUnknownModel, "last"},
		{"no mode", map[string]*string{"1_Pooling/config.json": str(`{"pooling_mode_mean_tokens":false}`)}, compiler.ErrMalformed, "no pooling mode"},
		{"unknown mode", map[string]*string{"1_Pooling/config.json": str(`{"pooling_mode_median_tokens":true}`)}, compiler.ErrUnknownModel, "pooling_mode_median_tokens"},
		{"pooling config absent", map[string]*string{"1_Pooling/config.json": nil}, compiler.ErrMalformed, "1_Pooling"},
		{"dense activation", map[string]*string{"2_Dense/config.json": str(`{"in_features":32,"out_features":16,"activation_function":"torch.nn.modules.activation.SiLU"}`)}, compiler.ErrUnknownModel, "SiLU"},
		{"dense shape", map[string]*string{"2_Dense/config.json": str(`{"in_features":32,"out_features":8}`)}, compiler.ErrShapeMismatch, "linear.weight"},
		{"dense bin not a checkpoint", map[string]*string{"2_Dense/model.safetensors": nil, "2_Dense/pytorch_model.bin": str("x")}, compiler.ErrMalformed, "pytorch_model.bin"},
		{"dense no weights", map[string]*string{"2_Dense/model.safetensors": nil}, compiler.ErrMissingTensor, "no model.safetensors, pytorch_model.bin"},
		{"pooling_mode string", map[string]*string{"1_Pooling/config.json": str(`{"pooling_mode":"median"}`)}, compiler.ErrUnknownModel, "median"},
		{"max_seq_length", map[string]*string{BertConfigFile: str(`{"max_seq_length":0}`)}, compiler.ErrMalformed, "max_seq_length"},
		{"do_lower_case", map[string]*string{BertConfigFile: str(`{"max_seq_length":24,"do_lower_case":true}`)}, compiler.ErrUnknownModel, "do_lower_case"},
		{"default prompt", map[string]*string{STConfigFile: str(`{"prompts":{},"default_prompt_name":"query"}`)}, compiler.ErrMalformed, "default_prompt_name"},
	} {
		_, err := Load(variant(t, tc.edit))
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %v naming %q", tc.name, err, tc.want, tc.says)
		}
	}
	m, err := Load(variant(t, map[string]*string{"1_Pooling/config.json": str(`{"pooling_mode":"lasttoken"}`)}))
	if err != nil || !slices.Equal(m.Head.Pooling, []modelrt.PoolingMode{modelrt.PoolLastToken}) {
		t.Errorf("pooling_mode string: %v, %v", m, err)
	}
	// include_prompt false works without a prompt, not with one.
	m, err = Load(variant(t, map[string]*string{"1_Pooling/config.json": str(`{"pooling_mode_mean_tokens":true,"include_prompt":false}`)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Prompt(""); err != nil {
		t.Error(err)
	}
	if _, err := m.Prompt("query"); !errors.Is(err, compiler.ErrUnknownModel) {
		t.Errorf("include_prompt false with a prompt: %v", err)
	}
}

func TestScoreActivation(t *testing.T) {
	for _, tc := range []struct {
		config string
		labels int
		want   modelrt.Activation
	}{
		{`{}`, 1, modelrt.ActSigmoid},
		{`{"problem_type":"regression"}`, 1, modelrt.ActSigmoid},
		{`{}`, 2, ""},
		{`{"problem_type":"single_label_classification"}`, 3, ""},
		{`{"problem_type":"multi_label_classification"}`, 3, modelrt.ActSigmoid},
		{`{"problem_type":"regression"}`, 2, modelrt.ActIdentity},
		{`{"sentence_transformers":{"activation_fn":"torch.nn.modules.linear.Identity"}}`, 1, modelrt.ActIdentity},
		{`{"sbert_ce_default_activation_function":"torch.nn.modules.activation.Sigmoid"}`, 2, modelrt.ActSigmoid},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(tc.config), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := ScoreActivation(dir, tc.labels)
		if err != nil || s.Activation != tc.want {
			t.Errorf("%s, %d labels: %q (%s), %v; want %q", tc.config, tc.labels, s.Activation, s.Why, err, tc.want)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"problem_type":"ranking"}`), 0o644)
	if _, err := ScoreActivation(dir, 1); !errors.Is(err, compiler.ErrUnknownModel) {
		t.Errorf("unknown problem_type: %v", err)
	}
}

// tinyDir is the checked-in folder (testdata_test.go generates it).
const tinyDir = "testdata/st-bert-tiny"

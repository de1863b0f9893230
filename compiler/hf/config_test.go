package hf

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestConfigDefaults checks that absent keys take the `transformers` class
// defaults (BertConfig, DistilBertConfig), i.e. the base-sized models.
func TestConfigDefaults(t *testing.T) {
	cases := []struct {
		json string
		want Config
	}{
		{`{"model_type": "bert"}`, Config{
			ModelType: ModelBERT, Architecture: ArchBertModel, VocabSize: 30522, HiddenSize: 768, NumLayers: 12,
			NumHeads: 12, IntermediateSize: 3072, MaxPositions: 512, TypeVocabSize: 2, HiddenAct: ActGELU, LayerNormEps: 1e-12,
			Labels: []string{"LABEL_0", "LABEL_1"}, Source: "x.json",
		}},
		{`{"model_type": "distilbert", "architectures": ["DistilBertForSequenceClassification"], "num_labels": 3}`, Config{
			ModelType: ModelDistilBERT, Architecture: ArchDistilBertForSequence, VocabSize: 30522, HiddenSize: 768, NumLayers: 6,
			NumHeads: 12, IntermediateSize: 3072, MaxPositions: 512, HiddenAct: ActGELU, LayerNormEps: 1e-12,
			Labels: []string{"LABEL_0", "LABEL_1", "LABEL_2"}, Source: "x.json",
		}},
	}
	for _, tc := range cases {
		got, err := ParseConfig([]byte(tc.json), "x.json")
		if err != nil {
			t.Fatal(err)
		}
		if !configEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.json, got, tc.want)
		}
	}
}

// TestConfigSharedModels reads the two test models' config.json files.
func TestConfigSharedModels(t *testing.T) {
	for model, want := range map[string]Config{
		"sst2-bert-mini": {
			ModelType: ModelBERT, Architecture: ArchBertForSequence, VocabSize: 30522, HiddenSize: 256, NumLayers: 4,
			NumHeads: 4, IntermediateSize: 1024, MaxPositions: 512, TypeVocabSize: 2, HiddenAct: ActGELU, LayerNormEps: 1e-12,
			Labels: []string{"negative", "positive"},
		},
		"sst2-distilbert-tiny": {
			ModelType: ModelDistilBERT, Architecture: ArchDistilBertForSequence, VocabSize: 30522, HiddenSize: 128, NumLayers: 2,
			NumHeads: 2, IntermediateSize: 512, MaxPositions: 512, HiddenAct: ActGELU, LayerNormEps: 1e-12,
			Labels: []string{"negative", "positive"},
		},
	} {
		got, err := LoadConfig(filepath.Join(testmodels.ModelDir(t, model), ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		got.Source = ""
		if !configEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", model, got, want)
		}
	}
}

func configEqual(a, b Config) bool {
	return reflect.DeepEqual(a, b)
}

// TestPresets checks the presets against the published parameter counts
// of the checkpoints they describe (as two-label classifiers).
func TestPresets(t *testing.T) {
	want := map[string]int64{
		"bert-base":       109_483_778, // bert-base-uncased + 2-label head
		"bert-large":      335_143_938,
		"bert-mini":       11_171_074, // sst2-bert-mini's count in models/README.md
		"distilbert-base": 66_955_010,
		"mpnet-base":      109_488_002, // all-mpnet-base-v2's 109,486,464 less its pooler, plus a 2-label head
		"modernbert-base": 149_606_402, // ModernBERT-base's 149,014,272 (PyTorch's count of ModernBertModel) plus the head and 2 labels
	}
	for _, name := range PresetNames() {
		c, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if n, ok := want[name]; ok && c.parameterCount() != n {
			t.Errorf("%s: %d parameters, want %d", name, c.parameterCount(), n)
		}
	}
	if _, err := Preset("gpt2"); err == nil {
		t.Error("Preset(gpt2) succeeded")
	}
}

// TestRandomWeightsDeterministic: same seed and name, same tensor, whatever
// the order of requests; another seed or name, another tensor.
func TestRandomWeightsDeterministic(t *testing.T) {
	c, err := Preset("bert-tiny")
	if err != nil {
		t.Fatal(err)
	}
	g1, err := Build(c, RandomWeights(42))
	if err != nil {
		t.Fatal(err)
	}
	g2, err := Build(c, RandomWeights(42))
	if err != nil {
		t.Fatal(err)
	}
	sameGraphs(t, "rebuild", g1, g2)
	checkTopological(t, g1)
	verifyGraph(t, g1)

	w := RandomWeights(42)
	a, _ := w.Weight("x.weight", []int64{4, 4})
	b, _ := RandomWeights(43).Weight("x.weight", []int64{4, 4})
	d, _ := w.Weight("y.weight", []int64{4, 4})
	if slices.Equal(a.F32, b.F32) || slices.Equal(a.F32, d.F32) {
		t.Error("different seeds or names gave the same weights")
	}
	ln, _ := w.Weight("embeddings.LayerNorm.weight", []int64{64})
	for _, v := range ln.F32 {
		if v < 0.8 || v > 1.2 {
			t.Fatalf("LayerNorm weight %v is not near 1", v)
		}
	}
}

// TestModernBERTConfig: ModernBertConfig's keys with their class
// defaults, transformers 4.48's global_attn_every_n_layers and thetas and
// transformers 5's layer_types and rope_parameters alike; what sqc does
// not compute is refused naming the key.
func TestModernBERTConfig(t *testing.T) {
	parse := func(extra string) (Config, error) {
		return ParseConfig([]byte(`{"model_type": "modernbert", "architectures": ["ModernBertModel"], "num_hidden_layers": 4`+extra+`}`), "config.json")
	}
	c, err := parse("")
	if err != nil {
		t.Fatal(err)
	}
	m := c.ModernBERT
	if c.HiddenSize != 768 || c.IntermediateSize != 1152 || c.HiddenAct != ActGELU || c.LayerNormEps != 1e-5 || m.Window != 128 ||
		m.GlobalTheta != 160000 || m.LocalTheta != 10000 || m.NormBias || m.AttentionBias || m.MLPBias || m.ClassifierPooling != "cls" ||
		!slices.Equal(m.Sliding, []bool{false, true, true, false}) {
		t.Errorf("defaults: %+v", c)
	}
	c, err = parse(`, "global_attn_every_n_layers": 2, "global_rope_theta": 8e4, "local_rope_theta": 5e3, "norm_bias": true, "hidden_activation": "gelu_pytorch_tanh", "norm_eps": 1e-6`)
	if err != nil {
		t.Fatal(err)
	}
	if m := c.ModernBERT; !slices.Equal(m.Sliding, []bool{false, true, false, true}) || m.GlobalTheta != 8e4 || m.LocalTheta != 5e3 || !m.NormBias ||
		c.HiddenAct != ActGELUTanh || c.LayerNormEps != 1e-6 {
		t.Errorf("transformers 4.48 keys: %+v", c)
	}
	c, err = parse(`, "layer_types": ["sliding_attention", "full_attention", "full_attention", "sliding_attention"],
		"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e5}, "sliding_attention": {"rope_type": "default", "rope_theta": 2e4}}`)
	if err != nil {
		t.Fatal(err)
	}
	if m := c.ModernBERT; !slices.Equal(m.Sliding, []bool{true, false, false, true}) || m.GlobalTheta != 1e5 || m.LocalTheta != 2e4 {
		t.Errorf("transformers 5 keys: %+v", c.ModernBERT)
	}
	for _, bad := range []struct{ extra, key string }{
		{`, "rope_scaling": {"rope_type": "yarn", "factor": 2}`, "rope_scaling"},
		{`, "rope_parameters": {"full_attention": {"rope_type": "linear"}}`, "rope_parameters.full_attention.rope_type"},
		{`, "layer_types": ["full_attention"]`, "layer_types"},
		{`, "layer_types": ["full_attention", "chunked", "full_attention", "full_attention"]`, "layer_types[1]"},
		{`, "hidden_size": 96, "num_attention_heads": 32`, "num_attention_heads"},
		{`, "classifier_pooling": "max"`, "classifier_pooling"},
		{`, "classifier_activation": "mish"`, "classifier_activation"},
		{`, "hidden_activation": "mish"`, "hidden_activation"},
		{`, "local_rope_theta": 0.5`, "local_rope_theta"},
	} {
		_, err := parse(bad.extra)
		if err == nil || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("%s: err = %v, want one naming %s", bad.extra, err, bad.key)
		}
	}
}

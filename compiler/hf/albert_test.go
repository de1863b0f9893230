package hf

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// TestAlbertGroup: pass i runs through group int(i / (n / groups)), in
// Python's true division (values printed by Python for uneven splits).
func TestAlbertGroup(t *testing.T) {
	for _, c := range []struct {
		n, groups int
		want      []int
	}{
		{12, 1, []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{3, 2, []int{0, 0, 1}},
		{12, 5, []int{0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 4}},
		{24, 7, []int{0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 6, 6, 6}},
	} {
		got := make([]int, c.n)
		for i := range got {
			got[i] = albertGroup(i, c.n, c.groups)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%d passes, %d groups: %v, want %v", c.n, c.groups, got, c.want)
		}
	}
}

// TestAlbertWeightNames: each pass's layer reads its group's parameters
// under AlbertLayer's names; the pooler's dense is "pooler"; everything
// else passes through.
func TestAlbertWeightNames(t *testing.T) {
	w := albertWeights{layers: 3, groups: 2, inner: 2} // layers 0-5: groups 0, 0, 0, 0, 1, 1
	for from, want := range map[string]string{
		"albert.encoder.layer.0.attention.self.query.weight": "albert.encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight",
		"albert.encoder.layer.3.attention.output.dense.bias": "albert.encoder.albert_layer_groups.0.albert_layers.1.attention.dense.bias",
		"encoder.layer.4.attention.output.LayerNorm.weight":  "encoder.albert_layer_groups.1.albert_layers.0.attention.LayerNorm.weight",
		"encoder.layer.5.intermediate.dense.weight":          "encoder.albert_layer_groups.1.albert_layers.1.ffn.weight",
		"encoder.layer.5.output.dense.weight":                "encoder.albert_layer_groups.1.albert_layers.1.ffn_output.weight",
		"encoder.layer.2.output.LayerNorm.bias":              "encoder.albert_layer_groups.0.albert_layers.0.full_layer_layer_norm.bias",
		"albert.pooler.dense.weight":                         "albert.pooler.weight",
		"albert.encoder.embedding_hidden_mapping_in.weight":  "albert.encoder.embedding_hidden_mapping_in.weight",
		"albert.embeddings.word_embeddings.weight":           "albert.embeddings.word_embeddings.weight",
		"classifier.bias": "classifier.bias",
	} {
		if got := w.albertName(from); got != want {
			t.Errorf("%s: %s, want %s", from, got, want)
		}
	}
}

// TestAlbertConfig: AlbertConfig's defaults where keys are absent, and
// layer groups refused where they cannot be (more groups than passes, no
// layers in a group, groups for another family), naming the key.
func TestAlbertConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"model_type": "albert", "architectures": ["AlbertForSequenceClassification"]}`), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HiddenSize != 4096 || cfg.NumHeads != 64 || cfg.IntermediateSize != 16384 || cfg.EmbeddingSize != 128 ||
		cfg.HiddenAct != ActGELUNew || cfg.VocabSize != 30000 || cfg.HiddenGroups != 1 || cfg.InnerGroupNum != 1 || !cfg.HasTokenTypeIDs() {
		t.Errorf("defaults: %+v", cfg)
	}
	for _, c := range []struct{ json, key string }{
		{`{"model_type": "albert", "num_hidden_layers": 2, "num_hidden_groups": 3}`, "num_hidden_groups"},
		{`{"model_type": "albert", "inner_group_num": 0}`, "inner_group_num"},
		{`{"model_type": "albert", "embedding_size": 0}`, "embedding_size"},
	} {
		_, err := ParseConfig([]byte(c.json), "config.json")
		var ie *compiler.InputError
		if !errors.As(err, &ie) || ie.Object != c.key || !errors.Is(err, compiler.ErrMalformed) {
			t.Errorf("%s: %v, want a malformed %s", c.json, err, c.key)
		}
	}
	bert, err := Preset("bert-tiny")
	if err != nil {
		t.Fatal(err)
	}
	bert.HiddenGroups = 2
	if err := bert.Validate(); err == nil || !strings.Contains(err.Error(), "num_hidden_groups") {
		t.Errorf("groups for bert: %v, want num_hidden_groups refused", err)
	}
}

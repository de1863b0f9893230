package hf

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestParameterCountMatchesPyTorch: the size bound Validate applies
// counts ELECTRA's narrower embedding tables and embeddings_project and
// MPNet's relative position bias (and no type table), ModernBERT's
// layers (no attention norm on layer 0, no biases) and DeBERTa v1's
// (in_proj with q_bias and v_bias, pos_proj without bias): the tiny
// models' counts are the ones PyTorch reports for them (make_models.py
// and make_deberta.py print sum(p.numel())).
func TestParameterCountMatchesPyTorch(t *testing.T) {
	for name, want := range map[string]int64{
		testmodels.TinyElectraCls: 79_362, testmodels.TinyElectraBase: 46_944,
		testmodels.TinyMPNetCls: 50_482, testmodels.TinyMPNetBase: 84_544,
		testmodels.TinyModernBertCls: 153_090, testmodels.TinyModernBertBase: 39_584,
		testmodels.TinyDeBERTaV1Base: 29_824, testmodels.TinyDeBERTaV1Cls: 25_251,
		testmodels.TinyAlbertCls: 41_858, testmodels.TinyAlbertBase: 85_792,
	} {
		cfg, err := LoadConfig(filepath.Join(testmodels.TinyDir(t, name), ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		got := cfg.parameterCount()
		h := int64(cfg.HiddenSize)
		if !cfg.IsClassifier() && cfg.ModelType != ModelModernBERT && !cfg.IsDeBERTa() { // ModernBERT's and DeBERTa's counts are the architecture's own
			// parameterCount adds a pooler-sized dense layer and a
			// head: the base models have no head, and ElectraModel no
			// pooler either.
			got -= int64(len(cfg.Labels)) * (h + 1)
			if cfg.ModelType == ModelELECTRA {
				got -= h*h + h
			}
		}
		if got != want {
			t.Errorf("%s: %d parameters, PyTorch counts %d", name, got, want)
		}
	}
}

// TestElectraRefusesEmbeddingSizeElsewhere: a Config made in code with an
// embedding size for a family that has no projection is refused, naming
// the key.
func TestElectraRefusesEmbeddingSizeElsewhere(t *testing.T) {
	c, err := Preset("bert-tiny")
	if err != nil {
		t.Fatal(err)
	}
	c.EmbeddingSize = 64
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "embedding_size") || !strings.Contains(err.Error(), `"bert"`) {
		t.Errorf("Validate: %v, want embedding_size refused for bert", err)
	}
}

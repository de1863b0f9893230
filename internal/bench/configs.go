package bench

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
)

// The benchmark shapes the peer harness knows (its model.py), by the names
// it uses. Each is a two-label sequence classifier with BERT's pooler (or
// DistilBERT's pre-classifier), like the harness's models, with vocabulary
// 30522 and 512 positions.
var benchShapes = map[string]struct {
	preset string // hf preset of the same shape, if there is one
	cfg    hf.Config
}{
	"bert-base":  {preset: "bert-base"},
	"bert-large": {preset: "bert-large"},
	"distilbert": {preset: "distilbert-base"},
	// sentence-transformers/all-MiniLM-L6-v2 (nreimers/MiniLM-L6-H384):
	// 6 layers x 384 hidden, 12 heads of 32, FFN 1536. hf has no preset.
	"minilm-l6": {cfg: hf.Config{
		ModelType: hf.ModelBERT, Architecture: hf.ArchBertForSequence,
		VocabSize: 30522, HiddenSize: 384, NumLayers: 6, NumHeads: 12, IntermediateSize: 1536,
		MaxPositions: 512, TypeVocabSize: 2, HiddenAct: hf.ActGELU, LayerNormEps: 1e-12,
		Labels: []string{"LABEL_0", "LABEL_1"},
	}},
}

// ConfigNames lists the names Config accepts: the peer harness's shapes
// and every hf preset, sorted.
func ConfigNames() []string {
	seen := map[string]bool{}
	for n := range benchShapes {
		seen[n] = true
	}
	for _, n := range hf.PresetNames() {
		seen[n] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Config returns the model shape called name: one of the peer harness's
// names (bert-base, bert-large, distilbert, minilm-l6) or any hf preset
// (bert-tiny, distilbert-base, ...). An unknown name is bad input naming
// the known ones.
func Config(name string) (hf.Config, error) {
	if s, ok := benchShapes[name]; ok {
		if s.preset != "" {
			return hf.Preset(s.preset)
		}
		c := s.cfg
		c.Labels = append([]string(nil), c.Labels...)
		return c, nil
	}
	c, err := hf.Preset(name)
	if err != nil {
		return hf.Config{}, compiler.BadInput("", "--config", fmt.Errorf("%w: no model shape %q; known: %s",
			compiler.ErrUnknownModel, name, strings.Join(ConfigNames(), ", ")))
	}
	return c, nil
}

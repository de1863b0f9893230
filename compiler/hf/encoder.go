package hf

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// LoadEncoder reads dir as Load does but builds the base model of its
// model_type (BertModel for a BertForSequenceClassification checkpoint)
// with the one output last_hidden_state: what sentence-transformers'
// Transformer module (AutoModel) computes. A classifier's head parameters
// are ignored, and pooler parameters are not needed (sentence-transformers
// models are often saved without them).
func LoadEncoder(dir string) (*compiler.Graph, error) {
	cfg, err := LoadConfig(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, err
	}
	cfg.Architecture, cfg.Labels = architecturesByType[cfg.ModelType][0], nil
	st, err := OpenWeights(dir)
	if err != nil {
		return nil, err
	}
	g, err := Build(cfg, optionalPooler{st})
	if err != nil {
		return nil, err
	}
	var outs []*compiler.Value
	for _, o := range g.Outputs {
		if o.Name == outLastHidden {
			outs = append(outs, o)
		}
	}
	g.Outputs = outs
	g.RemoveUnused()
	g.Meta["source"] = dir
	if name := filepath.Base(filepath.Clean(dir)); name != "." && name != string(filepath.Separator) {
		g.Name = name
	}
	return g, nil
}

// optionalPooler serves zeros for absent pooler parameters: LoadEncoder
// drops the pooler output, so they are never computed.
type optionalPooler struct{ WeightSource }

func (o optionalPooler) Weight(name string, shape []int64) (*compiler.Tensor, error) {
	t, err := o.WeightSource.Weight(name, shape)
	if err != nil && errors.Is(err, compiler.ErrMissingTensor) && strings.Contains(name, "pooler.") {
		return compiler.NewTensor(compiler.Float32, shape...), nil
	}
	return t, err
}

func (o optionalPooler) File() string { return SourceFile(o.WeightSource) }

package hf

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/blocks"
	"github.com/sqc-dev/sqc/compiler/interp"
)

// TestRobertaConfigDefaults checks the RobertaConfig / XLMRobertaConfig
// class defaults for absent keys.
func TestRobertaConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		json string
		want Config
	}{
		{`{"model_type": "roberta"}`, Config{
			ModelType: ModelRoBERTa, Architecture: ArchRobertaModel, VocabSize: 50265, HiddenSize: 768, NumLayers: 12,
			NumHeads: 12, IntermediateSize: 3072, MaxPositions: 512, TypeVocabSize: 2, PadTokenID: 1, HiddenAct: ActGELU,
			LayerNormEps: 1e-12, Labels: []string{"LABEL_0", "LABEL_1"}, Source: "x.json",
		}},
		{`{"model_type": "xlm-roberta", "architectures": ["XLMRobertaForSequenceClassification"], "num_labels": 1,
		   "vocab_size": 250002, "max_position_embeddings": 514, "type_vocab_size": 1, "layer_norm_eps": 1e-05, "pad_token_id": 1}`, Config{
			ModelType: ModelXLMRoBERTa, Architecture: ArchXLMRobertaForSequence, VocabSize: 250002, HiddenSize: 768, NumLayers: 12,
			NumHeads: 12, IntermediateSize: 3072, MaxPositions: 514, TypeVocabSize: 1, PadTokenID: 1, HiddenAct: ActGELU,
			LayerNormEps: 1e-5, Labels: []string{"LABEL_0"}, Source: "x.json",
		}},
		// CamembertConfig: RoBERTa's defaults but a 30522-token vocabulary.
		{`{"model_type": "camembert"}`, Config{
			ModelType: ModelCamemBERT, Architecture: ArchCamembertModel, VocabSize: 30522, HiddenSize: 768, NumLayers: 12,
			NumHeads: 12, IntermediateSize: 3072, MaxPositions: 512, TypeVocabSize: 2, PadTokenID: 1, HiddenAct: ActGELU,
			LayerNormEps: 1e-12, Labels: []string{"LABEL_0", "LABEL_1"}, Source: "x.json",
		}},
		// ElectraConfig: the small discriminator's shape.
		{`{"model_type": "electra", "architectures": ["ElectraForSequenceClassification"]}`, Config{
			ModelType: ModelELECTRA, Architecture: ArchElectraForSequence, VocabSize: 30522, HiddenSize: 256, NumLayers: 12,
			NumHeads: 4, IntermediateSize: 1024, MaxPositions: 512, TypeVocabSize: 2, EmbeddingSize: 128, HiddenAct: ActGELU,
			LayerNormEps: 1e-12, Labels: []string{"LABEL_0", "LABEL_1"}, Source: "x.json",
		}},
		// MPNetConfig: no token types, padding_idx 1 whatever pad_token_id
		// says, 32 relative buckets.
		{`{"model_type": "mpnet", "pad_token_id": 0}`, Config{
			ModelType: ModelMPNet, Architecture: ArchMPNetModel, VocabSize: 30527, HiddenSize: 768, NumLayers: 12,
			NumHeads: 12, IntermediateSize: 3072, MaxPositions: 512, PadTokenID: 1, RelativeBuckets: 32, HiddenAct: ActGELU,
			LayerNormEps: 1e-12, Labels: []string{"LABEL_0", "LABEL_1"}, Source: "x.json",
		}},
		// google/electra-base-discriminator.
		{`{"model_type": "electra", "architectures": ["ElectraForSequenceClassification"], "embedding_size": 768,
		   "hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072}`, Config{
			ModelType: ModelELECTRA, Architecture: ArchElectraForSequence, VocabSize: 30522, HiddenSize: 768, NumLayers: 12,
			NumHeads: 12, IntermediateSize: 3072, MaxPositions: 512, TypeVocabSize: 2, EmbeddingSize: 768, HiddenAct: ActGELU,
			LayerNormEps: 1e-12, Labels: []string{"LABEL_0", "LABEL_1"}, Source: "x.json",
		}},
	} {
		got, err := ParseConfig([]byte(tc.json), "x.json")
		if err != nil {
			t.Fatal(err)
		}
		if !configEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.json, got, tc.want)
		}
	}
}

// TestRobertaConfigErrors: a pad_token_id the position table or the
// vocabulary cannot hold is refused naming the key, and RoBERTa
// architectures are not accepted under another model_type.
func TestRobertaConfigErrors(t *testing.T) {
	for _, tc := range []struct{ json, key string }{
		{`{"model_type": "roberta", "pad_token_id": 600, "max_position_embeddings": 514}`, "pad_token_id"},
		{`{"model_type": "roberta", "pad_token_id": 1, "max_position_embeddings": 2}`, "pad_token_id"},
		{`{"model_type": "xlm-roberta", "pad_token_id": 5, "vocab_size": 5}`, "pad_token_id"},
		{`{"model_type": "roberta", "pad_token_id": -1}`, "pad_token_id"},
		{`{"model_type": "bert", "architectures": ["RobertaModel"]}`, "architectures"},
		{`{"model_type": "xlm-roberta", "architectures": ["RobertaForSequenceClassification"]}`, "architectures"},
	} {
		_, err := ParseConfig([]byte(tc.json), "x.json")
		if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), "x.json") {
			t.Errorf("%s: error %v, want one naming x.json and %s", tc.json, err, tc.key)
		}
	}
}

// TestRobertaPositionIDs runs the position-id subgraph on ids with padding
// at the end and a pad token in the middle: real tokens count from
// padding_idx + 1 skipping pad tokens, pad tokens get padding_idx, as
// create_position_ids_from_input_ids computes them.
func TestRobertaPositionIDs(t *testing.T) {
	const pad = 1
	ids := []int64{
		0, 5, 6, 2, pad, pad,
		0, 5, pad, 7, 8, 2,
	}
	want := []int64{
		2, 3, 4, 5, pad, pad,
		2, 3, pad, 4, 5, 6,
	}
	g := compiler.NewGraph("positions")
	g.Opset = opset
	g.Inputs = []*compiler.Value{{Name: inInputIDs, DType: compiler.Int64, Shape: compiler.StaticShape(2, 6)}}
	b := &builder{Builder: blocks.Builder{G: g}, cfg: Config{PadTokenID: pad}}
	out := b.Rename(b.robertaPositionIDs(inInputIDs, "position_ids"), "position_ids")
	g.Outputs = []*compiler.Value{{Name: out, DType: compiler.Int64, Shape: compiler.StaticShape(2, 6)}}
	it, err := interp.New(g)
	if err != nil {
		t.Fatal(err)
	}
	in := compiler.NewTensor(compiler.Int64, 2, 6)
	copy(in.I64, ids)
	res, err := it.Run(map[string]*compiler.Tensor{inInputIDs: in}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res[out].I64; !slices.Equal(got, want) {
		t.Errorf("position ids %v, want %v", got, want)
	}
}

// TestRobertaModelWithoutPooler: a RobertaModel checkpoint without pooler
// weights (saved from a masked-LM or classification model) builds with
// last_hidden_state only; with them, pooler_output is there too.
func TestRobertaModelWithoutPooler(t *testing.T) {
	cfg := Config{
		ModelType: ModelXLMRoBERTa, Architecture: ArchXLMRobertaModel, VocabSize: 20, HiddenSize: 8, NumLayers: 1,
		NumHeads: 2, IntermediateSize: 12, MaxPositions: 18, TypeVocabSize: 1, PadTokenID: 1, HiddenAct: ActGELU,
		LayerNormEps: 1e-5, Labels: []string{"LABEL_0", "LABEL_1"},
	}
	outputs := func(w WeightSource) []string {
		g, err := Build(cfg, w)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, v := range g.Outputs {
			names = append(names, v.Name)
		}
		return names
	}
	if got := outputs(RandomWeights(1)); !slices.Equal(got, []string{outLastHidden, outPooler}) {
		t.Errorf("with a pooler: outputs %v", got)
	}
	if got := outputs(withoutPooler{RandomWeights(1)}); !slices.Equal(got, []string{outLastHidden}) {
		t.Errorf("without a pooler: outputs %v", got)
	}
}

type withoutPooler struct{ WeightSource }

func (w withoutPooler) Weight(name string, shape []int64) (*compiler.Tensor, error) {
	if strings.HasPrefix(name, "pooler.") {
		return nil, compiler.BadInput("", name, fmt.Errorf("%w: no pooler in this checkpoint", compiler.ErrMissingTensor))
	}
	return w.WeightSource.Weight(name, shape)
}

// TestRobertaPresets: the published shapes validate and have the
// parameter counts of roberta-base (124.6M + the head) and
// xlm-roberta-base (278M + the head).
func TestRobertaPresets(t *testing.T) {
	for name, approx := range map[string]float64{"roberta-base": 125e6, "xlm-roberta-base": 278e6} {
		c, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if n := float64(c.parameterCount()); n < 0.99*approx || n > 1.01*approx {
			t.Errorf("%s: %.4g parameters, want about %.4g", name, n, approx)
		}
	}
}

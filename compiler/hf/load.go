package hf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/blocks"
)

// File names inside a model folder, as `transformers` saves them.
const (
	ConfigFile      = "config.json"
	SafetensorsFile = "model.safetensors"
)

// Graph input and output names, the ones torch.onnx.export is given for
// these models (and so the ones compiler/onnx reads back).
const (
	inInputIDs      = "input_ids"
	inAttentionMask = "attention_mask"
	inTokenTypeIDs  = "token_type_ids"
	outLogits       = "logits"
	outLastHidden   = "last_hidden_state"
	outPooler       = "pooler_output"
	outStartLogits  = "start_logits" // a question answering head's
	outEndLogits    = "end_logits"
)

// opset is the ONNX opset the built graph conforms to: 17 is the first
// with LayerNormalization.
const opset = 17

// Load reads dir/config.json and dir's checkpoint (OpenWeights:
// model.safetensors, pytorch_model.bin, or either's shards) and builds the
// graph. The graph's Meta records "source" (dir) besides what Build puts.
func Load(dir string) (*compiler.Graph, error) {
	cfgPath := filepath.Join(dir, ConfigFile)
	cfgData, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, compiler.BadInput(cfgPath, "", unwrapPath(err))
	}
	cfg, err := ParseConfig(cfgData, cfgPath)
	if err != nil {
		return nil, err
	}
	weights, err := OpenWeights(dir)
	if err != nil {
		return nil, err
	}
	return build(dir, cfg, weights)
}

// loadBytes is Load on file contents already read (the fuzz target's entry).
func loadBytes(dir string, cfgData, stData []byte) (*compiler.Graph, error) {
	cfg, err := ParseConfig(cfgData, filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, err
	}
	weights, err := ParseSafetensors(stData, filepath.Join(dir, SafetensorsFile))
	if err != nil {
		return nil, err
	}
	return build(dir, cfg, weights)
}

// build is Build naming the graph after its folder.
func build(dir string, cfg Config, weights WeightSource) (*compiler.Graph, error) {
	g, err := Build(cfg, weights)
	if err != nil {
		return nil, err
	}
	g.Meta["source"] = dir
	if name := filepath.Base(filepath.Clean(dir)); name != "." && name != string(filepath.Separator) {
		g.Name = name
	}
	return g, nil
}

// missingWeightsError says what else the folder holds, since the commonest
// cause is a checkpoint in another framework's format.
func missingWeightsError(dir string) error {
	for _, other := range []string{"tf_model.h5", "flax_model.msgpack", "model.ckpt.index"} {
		if _, err := os.Stat(filepath.Join(dir, other)); err == nil {
			return fmt.Errorf("%w: no %s, %s or their shards; the folder has %s, which sqc does not read (load the model in transformers and save_pretrained it)",
				compiler.ErrMissingTensor, SafetensorsFile, TorchFile, other)
		}
	}
	return fmt.Errorf("%w: no %s, %s or their shards in %s", compiler.ErrMissingTensor, SafetensorsFile, TorchFile, dir)
}

// Build makes the graph of the model cfg describes, with parameters from
// weights (a Safetensors file, RandomWeights, ...). Every parameter's shape
// is checked against cfg and its values for NaN/Inf.
func Build(cfg Config, weights WeightSource) (*compiler.Graph, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if weights == nil {
		return nil, errors.New("hf.Build: nil WeightSource")
	}
	g := compiler.NewGraph(cfg.Architecture)
	g.Opset = opset
	switch cfg.ModelType {
	case ModelDeBERTa:
		weights = debertaV1Weights{weights, cfg.NumHeads, cfg.HiddenSize}
	case ModelALBERT:
		weights = albertWeights{weights, cfg.NumLayers, cfg.HiddenGroups, cfg.InnerGroupNum}
	}
	b := &builder{Builder: blocks.Builder{G: g}, cfg: cfg, weights: weights, file: SourceFile(weights)}

	inputs := []string{inInputIDs, inAttentionMask}
	if cfg.HasTokenTypeIDs() {
		inputs = append(inputs, inTokenTypeIDs)
	}
	for _, name := range inputs {
		g.Inputs = append(g.Inputs, &compiler.Value{Name: name, DType: compiler.Int64, Shape: batchBy(seqDim)})
	}

	prefix := ""
	if cfg.hasLabels() || cfg.IsQuestionAnswering() || cfg.IsMaskedLM() {
		prefix = cfg.ParamPrefix()
	}
	tokenHead := cfg.perTokenHead()
	if tokenHead {
		// The base model is built (its pooler, which these checkpoints do
		// not hold, served as zeros) and the head appended to its
		// last_hidden_state; the pooler is then dropped unused.
		b.weights = optionalPooler{b.weights}
	}
	// BertModel and AlbertModel always have a pooler; RobertaModel, MPNetModel and
	// JinaBertModel only if the checkpoint holds one (see hasWeight;
	// JinaBertForMaskedLM's holds none); ElectraModel and
	// DistilBertModel none.
	pooled := cfg.ModelType == ModelBERT && !cfg.IsJina() || cfg.ModelType == ModelALBERT ||
		(cfg.IsRoBERTa() || cfg.ModelType == ModelMPNet || cfg.IsJina()) && hasWeight(weights, "pooler.dense.weight", int64(cfg.HiddenSize), int64(cfg.HiddenSize))
	pooled = pooled && !tokenHead // their classes build the encoder with add_pooling_layer=False

	h := compiler.Dim{Size: int64(cfg.HiddenSize)}
	switch {
	case cfg.IsClassifier():
		g.Outputs = []*compiler.Value{{Name: outLogits, DType: compiler.Float32, Shape: batchBy(compiler.Dim{Size: int64(len(cfg.Labels))})}}
	case pooled:
		g.Outputs = []*compiler.Value{
			{Name: outLastHidden, DType: compiler.Float32, Shape: batchBy(seqDim, h)},
			{Name: outPooler, DType: compiler.Float32, Shape: batchBy(h)},
		}
	default:
		g.Outputs = []*compiler.Value{{Name: outLastHidden, DType: compiler.Float32, Shape: batchBy(seqDim, h)}}
	}

	switch cfg.ModelType {
	case ModelBERT:
		if cfg.IsJina() {
			buildJinaBERT(b, prefix, pooled)
		} else {
			buildBERT(b, prefix)
		}
	case ModelDistilBERT:
		buildDistilBERT(b, prefix)
	case ModelRoBERTa, ModelXLMRoBERTa, ModelCamemBERT:
		buildRoBERTa(b, prefix, pooled)
	case ModelELECTRA:
		buildELECTRA(b, prefix)
	case ModelMPNet:
		buildMPNet(b, prefix, pooled)
	case ModelModernBERT:
		buildModernBERT(b, prefix)
	case ModelGTE:
		buildGTE(b, prefix)
	case ModelNomicBERT:
		buildNomicBERT(b, prefix)
	case ModelDeBERTaV2, ModelDeBERTa:
		buildDeBERTa(b, prefix)
	case ModelALBERT:
		buildALBERT(b, prefix)
	}
	if tokenHead {
		buildTokenHead(b)
		switch {
		case cfg.IsQuestionAnswering():
			g.Outputs = []*compiler.Value{
				{Name: outStartLogits, DType: compiler.Float32, Shape: batchBy(seqDim)},
				{Name: outEndLogits, DType: compiler.Float32, Shape: batchBy(seqDim)},
			}
		case cfg.IsMaskedLM():
			g.Outputs = []*compiler.Value{{Name: outLogits, DType: compiler.Float32, Shape: batchBy(seqDim, compiler.Dim{Size: int64(cfg.VocabSize)})}}
		default:
			g.Outputs = []*compiler.Value{{Name: outLogits, DType: compiler.Float32, Shape: batchBy(seqDim, compiler.Dim{Size: int64(len(cfg.Labels))})}}
		}
		g.RemoveUnused()
	}
	if b.err != nil {
		return nil, b.err
	}
	setMeta(g, cfg)
	return g, nil
}

var seqDim = compiler.Dim{Size: -1, Param: "sequence"}

// batchBy is the shape [batch, dims...].
func batchBy(dims ...compiler.Dim) compiler.Shape {
	return append(compiler.Shape{{Size: -1, Param: "batch"}}, dims...)
}

func setMeta(g *compiler.Graph, cfg Config) {
	m := g.Meta
	m["frontend"] = "hf"
	m["model_type"] = cfg.ModelType
	m["architecture"] = cfg.Architecture
	m["num_hidden_layers"] = strconv.Itoa(cfg.NumLayers)
	m["hidden_size"] = strconv.Itoa(cfg.HiddenSize)
	m["num_attention_heads"] = strconv.Itoa(cfg.NumHeads)
	m["intermediate_size"] = strconv.Itoa(cfg.IntermediateSize)
	m["hidden_act"] = cfg.HiddenAct
	m["max_position_embeddings"] = strconv.Itoa(cfg.MaxPositions)
	m["vocab_size"] = strconv.Itoa(cfg.VocabSize)
	if cfg.OffsetsPositions() {
		m["pad_token_id"] = strconv.Itoa(cfg.PadTokenID)
	}
	if cfg.IsJina() {
		m["position_embedding_type"] = "alibi"
		m["feed_forward_type"] = cfg.FeedForwardType
	}
	if cfg.hasLabels() {
		m["num_labels"] = strconv.Itoa(len(cfg.Labels))
		for i, l := range cfg.Labels {
			m["id2label."+strconv.Itoa(i)] = l
		}
	}
	if cfg.Source != "" {
		m["config"] = cfg.Source
	}
}

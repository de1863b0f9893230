package hf

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// presets are the published shapes of common checkpoints (their
// config.json values), as sequence classifiers with two labels, so that
// benchmarks can build real-sized graphs with RandomWeights.
var presets = map[string]Config{
	// google/bert_uncased_L-2_H-128_A-2
	"bert-tiny": bertPreset(2, 128, 2),
	// google/bert_uncased_L-4_H-256_A-4 (the shape of sst2-bert-mini)
	"bert-mini": bertPreset(4, 256, 4),
	// google/bert_uncased_L-4_H-512_A-8
	"bert-small": bertPreset(4, 512, 8),
	// google/bert_uncased_L-8_H-512_A-8
	"bert-medium": bertPreset(8, 512, 8),
	// bert-base-uncased
	"bert-base": bertPreset(12, 768, 12),
	// bert-large-uncased
	"bert-large": bertPreset(24, 1024, 16),
	// distilbert-base-uncased
	"distilbert-base": {
		ModelType: ModelDistilBERT, Architecture: ArchDistilBertForSequence,
		VocabSize: 30522, HiddenSize: 768, NumLayers: 6, NumHeads: 12, IntermediateSize: 3072,
		MaxPositions: 512, HiddenAct: ActGELU, LayerNormEps: distilBertLayerNormEps,
	},
	// roberta-base
	"roberta-base": robertaPreset(ModelRoBERTa, ArchRobertaForSequence, 50265),
	// xlm-roberta-base
	"xlm-roberta-base": robertaPreset(ModelXLMRoBERTa, ArchXLMRobertaForSequence, 250002),
	// sentence-transformers/all-mpnet-base-v2 (microsoft/mpnet-base's shape)
	"mpnet-base": {
		ModelType: ModelMPNet, Architecture: ArchMPNetForSequence,
		VocabSize: 30527, HiddenSize: 768, NumLayers: 12, NumHeads: 12, IntermediateSize: 3072,
		MaxPositions: 514, PadTokenID: mpnetPaddingIdx, RelativeBuckets: 32, HiddenAct: ActGELU, LayerNormEps: 1e-5,
	},
	// answerdotai/ModernBERT-base
	"modernbert-base": modernBertPreset(22, 768, 12, 1152),
	// answerdotai/ModernBERT-large
	"modernbert-large": modernBertPreset(28, 1024, 16, 2624),
	// jinaai/jina-embeddings-v2-base-en (jina-reranker-v1-base-en's
	// encoder too): ALiBi, GEGLU, 8192 positions.
	"jina-v2-base": {
		ModelType: ModelBERT, Architecture: ArchJinaBertForSequence,
		VocabSize: 30528, HiddenSize: 768, NumLayers: 12, NumHeads: 12, IntermediateSize: 3072,
		MaxPositions: 8192, TypeVocabSize: 2, HiddenAct: ActGELU, LayerNormEps: 1e-12, FeedForwardType: "geglu",
	},
	// Alibaba-NLP/gte-base-en-v1.5: rotary (theta 500000, NTK factor 2), a
	// GEGLU, no token types; NewModel only (an embedder, no classifier).
	"gte-base": {
		ModelType: ModelGTE, Architecture: ArchGTEModel,
		VocabSize: gteVocab, HiddenSize: 768, NumLayers: 12, NumHeads: 12, IntermediateSize: 3072,
		MaxPositions: 8192, HiddenAct: ActGELU, LayerNormEps: 1e-12, GTE: GTEConfig{RopeTheta: 500000, NTKFactor: 2},
	},
	// nomic-ai/nomic-embed-text-v1.5 (v1's shape too): rotary (base 1000),
	// SwiGLU, no biases but the norms', two token types; NomicBertModel
	// only (an embedder).
	"nomic-v1.5": {
		ModelType: ModelNomicBERT, Architecture: ArchNomicBertModel,
		VocabSize: 30528, HiddenSize: 768, NumLayers: 12, NumHeads: 12, IntermediateSize: 3072,
		MaxPositions: 8192, TypeVocabSize: 2, HiddenAct: ActSILU, LayerNormEps: 1e-12,
		Nomic: NomicConfig{ActivationFunction: nomicSwiGLU, RotaryBase: 1000},
	},
	// albert-base-v2 (textattack's and the other ALBERT classifiers):
	// 128-wide embeddings projected to 768, twelve passes through one
	// shared layer.
	"albert-base": {
		ModelType: ModelALBERT, Architecture: ArchAlbertForSequence,
		VocabSize: 30000, EmbeddingSize: 128, HiddenSize: 768, NumLayers: 12, NumHeads: 12, IntermediateSize: 3072,
		MaxPositions: 512, TypeVocabSize: 2, HiddenAct: ActGELUNew, LayerNormEps: 1e-12, HiddenGroups: 1, InnerGroupNum: 1,
	},
	// microsoft/deberta-v3-base and the classifiers and rerankers tuned
	// from it (mxbai-rerank-base-v1, the NLI cross-encoders): 128k
	// SentencePiece vocabulary, no token types or absolute positions,
	// c2p and p2c over 256 log buckets (span 256, 512 positions), shared
	// key and query projections, normed relative embeddings.
	"deberta-v3-base": {
		ModelType: ModelDeBERTaV2, Architecture: ArchDebertaV2ForSequence,
		VocabSize: 128100, HiddenSize: 768, NumLayers: 12, NumHeads: 12, IntermediateSize: 3072,
		MaxPositions: 512, HiddenAct: ActGELU, LayerNormEps: 1e-7,
		DeBERTa: DeBERTaConfig{RelativeAttention: true, PosAttTypes: []string{debertaP2C, debertaC2P}, PositionBuckets: 256,
			MaxRelativePositions: 512, NormRelEmbeddings: true, ShareAttKey: true, PoolerAct: ActGELU},
	},
	// microsoft/deberta-base (v1) and the MNLI classifiers and NLI
	// cross-encoders tuned from it: GPT-2's 50k BPE vocabulary, no token
	// types or absolute positions, c2p and p2c over distances clamped at
	// 512 (a 1024-row table), in_proj with q_bias and v_bias.
	"deberta-base": {
		ModelType: ModelDeBERTa, Architecture: ArchDebertaForSequence,
		VocabSize: 50265, HiddenSize: 768, NumLayers: 12, NumHeads: 12, IntermediateSize: 3072,
		MaxPositions: 512, HiddenAct: ActGELU, LayerNormEps: 1e-7,
		DeBERTa: DeBERTaConfig{RelativeAttention: true, PosAttTypes: []string{debertaC2P, debertaP2C}, PositionBuckets: -1,
			MaxRelativePositions: 512, PoolerAct: ActGELU},
	},
}

// modernBertPreset is ModernBertConfig's defaults at a size: every third
// layer global (theta 160000), the others within a window of 128 (theta
// 10000), no biases, GELU.
func modernBertPreset(layers, hidden, heads, inter int) Config {
	sliding := make([]bool, layers)
	for i := range sliding {
		sliding[i] = i%modernBertEveryN != 0
	}
	return Config{
		ModelType: ModelModernBERT, Architecture: ArchModernBertForSequence,
		VocabSize: 50368, HiddenSize: hidden, NumLayers: layers, NumHeads: heads, IntermediateSize: inter,
		MaxPositions: 8192, PadTokenID: modernBertPadTokenID, HiddenAct: ActGELU, LayerNormEps: 1e-5,
		ModernBERT: ModernBERTConfig{ClassifierActivation: ActGELU, ClassifierPooling: "cls", Sliding: sliding, Window: modernBertWindow,
			GlobalTheta: modernBertGlobalTheta, LocalTheta: modernBertLocalTheta},
	}
}

// robertaPreset is the 12 x 768 shape roberta-base and xlm-roberta-base
// share: 514 positions (512 tokens after padding_idx 1), one token type,
// LayerNorm epsilon 1e-5.
func robertaPreset(modelType, arch string, vocab int) Config {
	return Config{
		ModelType: modelType, Architecture: arch,
		VocabSize: vocab, HiddenSize: 768, NumLayers: 12, NumHeads: 12, IntermediateSize: 3072,
		MaxPositions: 514, TypeVocabSize: 1, PadTokenID: robertaPadTokenID, HiddenAct: ActGELU, LayerNormEps: 1e-5,
	}
}

func bertPreset(layers, hidden, heads int) Config {
	return Config{
		ModelType: ModelBERT, Architecture: ArchBertForSequence,
		VocabSize: 30522, HiddenSize: hidden, NumLayers: layers, NumHeads: heads, IntermediateSize: 4 * hidden,
		MaxPositions: 512, TypeVocabSize: 2, HiddenAct: ActGELU, LayerNormEps: 1e-12,
	}
}

// PresetNames lists the names Preset knows, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns the Config of a well-known model shape ("bert-base",
// "distilbert-base", ...; see PresetNames) as a two-label sequence
// classifier. Set Architecture to the base model to drop the head.
func Preset(name string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		return Config{}, compiler.BadInput("", name, fmt.Errorf("%w: no preset %q; known: %s",
			compiler.ErrUnknownModel, name, strings.Join(PresetNames(), ", ")))
	}
	c.Labels = []string{"LABEL_0", "LABEL_1"}
	c.ModernBERT.Sliding = slices.Clone(c.ModernBERT.Sliding) // the caller's own
	c.DeBERTa.PosAttTypes = slices.Clone(c.DeBERTa.PosAttTypes)
	return c, nil
}

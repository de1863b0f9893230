package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// Model types and architectures the frontend builds.
const (
	ModelBERT       = "bert"
	ModelDistilBERT = "distilbert"
	ModelRoBERTa    = "roberta"
	ModelXLMRoBERTa = "xlm-roberta"
	ModelCamemBERT  = "camembert"
	ModelELECTRA    = "electra"
	ModelMPNet      = "mpnet"
	ModelModernBERT = "modernbert"
	ModelGTE        = "new"        // Alibaba-NLP/new-impl's NewModel (GTE v1.5, gte-multilingual)
	ModelNomicBERT  = "nomic_bert" // nomic-ai/nomic-bert-2048's NomicBertModel (nomic-embed-text-v1, v1.5)
	ModelDeBERTaV2  = "deberta-v2" // DeBERTa-v2 and v3
	ModelDeBERTa    = "deberta"    // DeBERTa (v1)
	ModelALBERT     = "albert"

	ArchBertModel             = "BertModel"
	ArchBertForSequence       = "BertForSequenceClassification"
	ArchDistilBertModel       = "DistilBertModel"
	ArchDistilBertForSequence = "DistilBertForSequenceClassification"
	ArchRobertaModel          = "RobertaModel"
	ArchRobertaForSequence    = "RobertaForSequenceClassification"
	ArchXLMRobertaModel       = "XLMRobertaModel"
	ArchXLMRobertaForSequence = "XLMRobertaForSequenceClassification"
	ArchCamembertModel        = "CamembertModel"
	ArchCamembertForSequence  = "CamembertForSequenceClassification"
	ArchElectraModel          = "ElectraModel"
	ArchElectraForSequence    = "ElectraForSequenceClassification"
	ArchMPNetModel            = "MPNetModel"
	ArchMPNetForSequence      = "MPNetForSequenceClassification"
	ArchModernBertModel       = "ModernBertModel"
	ArchModernBertForSequence = "ModernBertForSequenceClassification"
	ArchGTEModel              = "NewModel"
	ArchGTEForSequence        = "NewForSequenceClassification"
	ArchNomicBertModel        = "NomicBertModel"
	ArchNomicBertForSequence  = "NomicBertForSequenceClassification"
	ArchDebertaV2Model        = "DebertaV2Model"
	ArchDebertaV2ForSequence  = "DebertaV2ForSequenceClassification"
	ArchDebertaModel          = "DebertaModel"
	ArchDebertaForSequence    = "DebertaForSequenceClassification"
	ArchAlbertModel           = "AlbertModel"
	ArchAlbertForSequence     = "AlbertForSequenceClassification"

	// Token classifiers (NER, POS tagging, PII detection): the base model
	// without a pooler, then a Linear on every token's hidden state
	// (ModernBERT's after its prediction head), output "logits" [batch,
	// sequence, labels].
	ArchBertForToken       = "BertForTokenClassification"
	ArchDistilBertForToken = "DistilBertForTokenClassification"
	ArchRobertaForToken    = "RobertaForTokenClassification"
	ArchXLMRobertaForToken = "XLMRobertaForTokenClassification"
	ArchCamembertForToken  = "CamembertForTokenClassification"
	ArchElectraForToken    = "ElectraForTokenClassification"
	ArchMPNetForToken      = "MPNetForTokenClassification"
	ArchModernBertForToken = "ModernBertForTokenClassification"
	ArchDebertaV2ForToken  = "DebertaV2ForTokenClassification"
	ArchDebertaForToken    = "DebertaForTokenClassification"
	ArchAlbertForToken     = "AlbertForTokenClassification"

	// Extractive question answering (SQuAD readers): the base model
	// without a pooler, then qa_outputs, an nn.Linear(hidden, 2) on every
	// token whose two columns are the outputs "start_logits" and
	// "end_logits" ([batch, sequence] each).
	ArchBertForQA       = "BertForQuestionAnswering"
	ArchDistilBertForQA = "DistilBertForQuestionAnswering"
	ArchRobertaForQA    = "RobertaForQuestionAnswering"
	ArchXLMRobertaForQA = "XLMRobertaForQuestionAnswering"
	ArchCamembertForQA  = "CamembertForQuestionAnswering"
	ArchElectraForQA    = "ElectraForQuestionAnswering"
	ArchMPNetForQA      = "MPNetForQuestionAnswering"
	ArchDebertaV2ForQA  = "DebertaV2ForQuestionAnswering"
	ArchDebertaForQA    = "DebertaForQuestionAnswering"
	ArchAlbertForQA     = "AlbertForQuestionAnswering"
	// ModernBertForQuestionAnswering runs its prediction head (dense,
	// classifier_activation, norm) first, and calls its Linear
	// "classifier".
	ArchModernBertForQA = "ModernBertForQuestionAnswering"

	// Masked language models (the pretraining head: dense, activation,
	// LayerNorm, then a decoder to the vocabulary tied to the word
	// embeddings), output "logits" [batch, sequence, vocabulary]: served
	// and generated as sparse encoders (SPLADE), their logits pooled over
	// the tokens.
	ArchBertForMaskedLM       = "BertForMaskedLM"
	ArchDistilBertForMaskedLM = "DistilBertForMaskedLM"
	ArchRobertaForMaskedLM    = "RobertaForMaskedLM"
	ArchXLMRobertaForMaskedLM = "XLMRobertaForMaskedLM"
	ArchCamembertForMaskedLM  = "CamembertForMaskedLM"
	ArchMPNetForMaskedLM      = "MPNetForMaskedLM"
	ArchModernBertForMaskedLM = "ModernBertForMaskedLM"

	// JinaBERT (model_type "bert", position_embedding_type "alibi"):
	// jina-embeddings-v2 publishes its config as JinaBertForMaskedLM,
	// read as the base model (the encoder; the MLM head is not built).
	ArchJinaBertModel       = "JinaBertModel"
	ArchJinaBertForMaskedLM = "JinaBertForMaskedLM"
	ArchJinaBertForSequence = "JinaBertForSequenceClassification"
)

// architecturesByType lists, per model_type, the architectures Build knows;
// the first is the base model, used when config.json names none.
var architecturesByType = map[string][]string{
	ModelBERT:       {ArchBertModel, ArchBertForSequence, ArchBertForToken, ArchBertForQA, ArchBertForMaskedLM, ArchJinaBertModel, ArchJinaBertForMaskedLM, ArchJinaBertForSequence},
	ModelDistilBERT: {ArchDistilBertModel, ArchDistilBertForSequence, ArchDistilBertForToken, ArchDistilBertForQA, ArchDistilBertForMaskedLM},
	ModelRoBERTa:    {ArchRobertaModel, ArchRobertaForSequence, ArchRobertaForToken, ArchRobertaForQA, ArchRobertaForMaskedLM},
	ModelXLMRoBERTa: {ArchXLMRobertaModel, ArchXLMRobertaForSequence, ArchXLMRobertaForToken, ArchXLMRobertaForQA, ArchXLMRobertaForMaskedLM},
	ModelCamemBERT:  {ArchCamembertModel, ArchCamembertForSequence, ArchCamembertForToken, ArchCamembertForQA, ArchCamembertForMaskedLM},
	ModelELECTRA:    {ArchElectraModel, ArchElectraForSequence, ArchElectraForToken, ArchElectraForQA},
	ModelMPNet:      {ArchMPNetModel, ArchMPNetForSequence, ArchMPNetForToken, ArchMPNetForQA, ArchMPNetForMaskedLM},
	ModelModernBERT: {ArchModernBertModel, ArchModernBertForSequence, ArchModernBertForToken, ArchModernBertForQA, ArchModernBertForMaskedLM},
	ModelGTE:        {ArchGTEModel, ArchGTEForSequence},
	ModelNomicBERT:  {ArchNomicBertModel, ArchNomicBertForSequence},
	ModelDeBERTaV2:  {ArchDebertaV2Model, ArchDebertaV2ForSequence, ArchDebertaV2ForToken, ArchDebertaV2ForQA},
	ModelDeBERTa:    {ArchDebertaModel, ArchDebertaForSequence, ArchDebertaForToken, ArchDebertaForQA},
	ModelALBERT:     {ArchAlbertModel, ArchAlbertForSequence, ArchAlbertForToken, ArchAlbertForQA},
}

// questionAnswerers are the extractive question answering architectures
// (outputs "start_logits" and "end_logits", [batch, sequence]).
var questionAnswerers = []string{ArchBertForQA, ArchDistilBertForQA, ArchRobertaForQA, ArchXLMRobertaForQA, ArchCamembertForQA,
	ArchElectraForQA, ArchMPNetForQA, ArchDebertaV2ForQA, ArchDebertaForQA, ArchAlbertForQA, ArchModernBertForQA}

// maskedLMs are the masked language models (output "logits" of [batch,
// sequence, vocabulary]).
var maskedLMs = []string{ArchBertForMaskedLM, ArchDistilBertForMaskedLM, ArchRobertaForMaskedLM, ArchXLMRobertaForMaskedLM,
	ArchCamembertForMaskedLM, ArchMPNetForMaskedLM, ArchModernBertForMaskedLM}

// tokenClassifiers are the architectures that end in a per-token
// classification head (output "logits" of [batch, sequence, labels]).
var tokenClassifiers = []string{ArchBertForToken, ArchDistilBertForToken, ArchRobertaForToken, ArchXLMRobertaForToken,
	ArchCamembertForToken, ArchElectraForToken, ArchMPNetForToken, ArchModernBertForToken, ArchDebertaV2ForToken,
	ArchDebertaForToken, ArchAlbertForToken}

// sequenceClassifiers are the architectures that end in a classification
// head (output "logits").
var sequenceClassifiers = []string{ArchBertForSequence, ArchDistilBertForSequence, ArchRobertaForSequence,
	ArchXLMRobertaForSequence, ArchCamembertForSequence, ArchElectraForSequence, ArchMPNetForSequence, ArchModernBertForSequence,
	ArchJinaBertForSequence, ArchGTEForSequence, ArchNomicBertForSequence, ArchDebertaV2ForSequence, ArchDebertaForSequence,
	ArchAlbertForSequence}

// mpnetPaddingIdx is the padding_idx MPNetEmbeddings hard-codes for its
// word and position tables and position ids.
const mpnetPaddingIdx = 1

// robertaPadTokenID is RobertaConfig's, XLMRobertaConfig's and
// CamembertConfig's default pad_token_id, which is also the position embeddings' padding_idx.
const robertaPadTokenID = 1

// Activations the FFN supports, by their `transformers` ACT2FN names.
const (
	ActGELU     = "gelu"              // erf form: 0.5·x·(1+erf(x/√2))
	ActGELUNew  = "gelu_new"          // tanh form
	ActGELUTanh = "gelu_pytorch_tanh" // same tanh form, fused in PyTorch
	ActRELU     = "relu"
	ActSILU     = "silu"  // x·sigmoid(x)
	ActSwish    = "swish" // ACT2FN's other name for SiLU
)

// distilBertLayerNormEps is the epsilon DistilBERT hard-codes in every
// nn.LayerNorm; its config has no key for it.
const distilBertLayerNormEps = 1e-12

// Bounds that keep a hostile config.json from asking for absurd
// allocations. Real models stay far below: bert-large has 1024 hidden,
// 24 layers, 16 heads, 4096 intermediate; multilingual vocabularies reach
// ~250k tokens.
const (
	maxDim        = 1 << 20
	maxLayers     = 1 << 10
	maxLabels     = 1 << 16
	maxParameters = 1 << 34 // 16 Gi float32 values = 64 GiB
)

// Config is a parsed, validated config.json in one vocabulary for both
// model types (BERT's hidden_size and DistilBERT's dim both land in
// HiddenSize, and so on). Fields are exported so callers such as
// `sqc bench --config bert-base` can make one in code; Preset gives the
// usual ones.
type Config struct {
	ModelType    string // ModelBERT (JinaBERT too), ModelDistilBERT, ModelRoBERTa, ModelXLMRoBERTa, ModelCamemBERT, ModelELECTRA, ModelMPNet, ModelModernBERT, ModelGTE, ModelNomicBERT, ModelDeBERTaV2, ModelDeBERTa or ModelALBERT
	Architecture string // e.g. ArchBertForSequence

	VocabSize        int
	HiddenSize       int // bert hidden_size, distilbert dim
	NumLayers        int // num_hidden_layers, n_layers
	NumHeads         int // num_attention_heads, n_heads
	IntermediateSize int // intermediate_size, hidden_dim
	MaxPositions     int // max_position_embeddings
	TypeVocabSize    int // bert and roberta: token type (segment) embeddings rows
	// EmbeddingSize is ELECTRA's embedding_size, the width of its
	// embedding tables and their LayerNorm, projected to HiddenSize
	// (embeddings_project) where it differs, ALBERT's (projected by
	// embedding_hidden_mapping_in, always), or DeBERTa's (its tables
	// projected by embed_proj before the LayerNorm); 0 (every other
	// family): the hidden size. EmbeddingWidth gives the width either way.
	EmbeddingSize int
	// HiddenGroups and InnerGroupNum are ALBERT's num_hidden_groups and
	// inner_group_num: NumLayers passes, pass i through the layers of
	// group i·HiddenGroups/NumLayers (rounded down), InnerGroupNum layers
	// each, whose weights every pass through the group shares (0 for
	// other families).
	HiddenGroups, InnerGroupNum int
	// PadTokenID is pad_token_id, used by the RoBERTa family only (and
	// MPNet, whose embeddings fix it at 1 whatever config.json says): it
	// is the padding_idx their position ids are offset by (real tokens
	// take positions padding_idx+1, padding_idx+2, ...; tokens equal to
	// it take padding_idx itself).
	PadTokenID int
	// RelativeBuckets is MPNet's relative_attention_num_buckets: the rows
	// of its relative position bias table (0 for other families).
	RelativeBuckets int
	// FeedForwardType is JinaBERT's feed_forward_type: "geglu" or
	// "reglu", its gated feed-forward's activation (GELU or ReLU of the
	// first half, times the second); "" for other families.
	FeedForwardType string
	// JinaQKPostNorm selects the code of jinaai/jina-bert-v2-qk-post-norm
	// (jina-embeddings-v2-base-code), which config.json's auto_map names:
	// LayerNorms on Q and K, a second norm of the residual sum after the
	// attention's own, the feed-forward's activation on the second half
	// of its projection, its residual and norm outside it.
	JinaQKPostNorm bool

	HiddenAct    string
	LayerNormEps float64

	// ModernBERT's (ModernBertConfig; zero for every other family):
	// ModernBERT is the ModernBERT-specific part of the config.
	ModernBERT ModernBERTConfig
	// GTE is NewConfig's own part (model_type "new"; zero for every other
	// family).
	GTE GTEConfig
	// Nomic is NomicBertConfig's own part (model_type "nomic_bert"; zero
	// for every other family).
	Nomic NomicConfig
	// DeBERTa is DebertaV2Config's own part (model_type "deberta-v2";
	// zero for every other family).
	DeBERTa DeBERTaConfig

	// Labels are id2label in index order; their count is the classifier's
	// output width. Used only by *ForSequenceClassification and
	// *ForTokenClassification.
	Labels []string

	// Source is the config.json path for error messages; empty when the
	// config was made in code.
	Source string
}

// ModernBERTConfig holds the ModernBertConfig keys no other family has.
// HiddenAct is hidden_activation and LayerNormEps norm_eps.
type ModernBERTConfig struct {
	// NormBias, AttentionBias, MLPBias and ClassifierBias: whether the
	// LayerNorms, Wqkv and Wo, Wi and Wo, and the head's dense have biases
	// (norm_bias, attention_bias, mlp_bias, classifier_bias).
	NormBias, AttentionBias, MLPBias, ClassifierBias bool
	// DecoderBias is decoder_bias: whether ModernBertForMaskedLM's decoder
	// has a bias.
	DecoderBias bool
	// ClassifierActivation is classifier_activation, the head's (an ACT2FN
	// name); ClassifierPooling is classifier_pooling: "cls" or "mean".
	ClassifierActivation, ClassifierPooling string
	// Sliding says per layer whether it attends within the window
	// (layer_types' "sliding_attention", or every layer whose index
	// global_attn_every_n_layers does not divide).
	Sliding []bool
	// Window is local_attention: a sliding layer's query attends to keys
	// at most Window/2 positions away.
	Window int
	// GlobalTheta and LocalTheta are the rotary bases of the full and the
	// sliding layers (rope_parameters' rope_theta, or global_rope_theta
	// and local_rope_theta).
	GlobalTheta, LocalTheta float64
}

// EmbeddingWidth is the width of the embedding tables: EmbeddingSize, or
// HiddenSize where that is 0.
func (c *Config) EmbeddingWidth() int {
	if c.EmbeddingSize > 0 {
		return c.EmbeddingSize
	}
	return c.HiddenSize
}

// OffsetsPositions reports whether position ids count non-padding tokens
// from PadTokenID + 1 (create_position_ids_from_input_ids): the RoBERTa
// family and MPNet.
func (c *Config) OffsetsPositions() bool { return c.IsRoBERTa() || c.ModelType == ModelMPNet }

// hasTypeTable reports whether the model has token type embeddings
// (type_vocab_size): every family with BERT's keys but MPNet.
func (c *Config) hasTypeTable() bool {
	return c.hasBertKeys() && c.ModelType != ModelMPNet && c.ModelType != ModelModernBERT && (!c.optionalTypes() || c.TypeVocabSize > 0)
}

// HasTokenTypeIDs reports whether the model takes a token_type_ids input
// (BERT, ELECTRA and ALBERT; the RoBERTa family and DistilBERT do not).
func (c *Config) HasTokenTypeIDs() bool {
	return c.ModelType == ModelBERT || c.ModelType == ModelELECTRA || c.ModelType == ModelALBERT || c.optionalTypes() && c.TypeVocabSize > 0
}

// optionalTypes reports whether the model has a token type table only
// where type_vocab_size is positive: GTE, NomicBERT and DeBERTa (v3 has
// none).
func (c *Config) optionalTypes() bool { return c.rotaryTypes() || c.IsDeBERTa() }

// IsDeBERTa reports whether the model is DeBERTa, v1 (model_type
// "deberta") or v2/v3 ("deberta-v2"): the same graph (see buildDeBERTa).
func (c *Config) IsDeBERTa() bool {
	return c.ModelType == ModelDeBERTaV2 || c.ModelType == ModelDeBERTa
}

// rotaryTypes reports whether the model is GTE or NomicBERT: rotary
// positions, and a token type table only where type_vocab_size is
// positive.
func (c *Config) rotaryTypes() bool { return c.ModelType == ModelGTE || c.ModelType == ModelNomicBERT }

// HeadSize is the per-head width of attention.
func (c *Config) HeadSize() int { return c.HiddenSize / c.NumHeads }

// IsClassifier reports whether the architecture ends in a sequence
// classification head (output "logits").
func (c *Config) IsClassifier() bool {
	return slices.Contains(sequenceClassifiers, c.Architecture)
}

// IsTokenClassifier reports whether the architecture ends in a token
// classification head (output "logits", one row of labels per token).
func (c *Config) IsTokenClassifier() bool {
	return slices.Contains(tokenClassifiers, c.Architecture)
}

// IsQuestionAnswering reports whether the architecture ends in an
// extractive question answering head (outputs "start_logits" and
// "end_logits").
func (c *Config) IsQuestionAnswering() bool {
	return slices.Contains(questionAnswerers, c.Architecture)
}

// IsMaskedLM reports whether the architecture ends in a masked language
// model's head (output "logits", one row of vocabulary logits per token).
func (c *Config) IsMaskedLM() bool { return slices.Contains(maskedLMs, c.Architecture) }

// maskedLMActivation is the activation of a masked language model's head
// (buildMaskedLMHead): BERT's and DistilBERT's is the layers' (hidden_act,
// activation), ModernBERT's classifier_activation, RoBERTa's and MPNet's
// LMHead always the erf GELU.
func (c *Config) maskedLMActivation() string {
	switch c.ModelType {
	case ModelBERT, ModelDistilBERT:
		return c.HiddenAct
	case ModelModernBERT:
		return c.ModernBERT.ClassifierActivation
	}
	return ActGELU
}

// TokenHeadActivation is the activation of the dense layer a per-token
// head runs before its output Linear (a masked language model's,
// ModernBERT's prediction head of its token classifier and QA model), or
// "" for a head without one.
func (c *Config) TokenHeadActivation() string {
	switch {
	case c.IsMaskedLM():
		return c.maskedLMActivation()
	case c.ModelType == ModelModernBERT && c.perTokenHead():
		return c.ModernBERT.ClassifierActivation
	}
	return ""
}

// perTokenHead reports whether the architecture's head runs on every
// token of the base model's last_hidden_state (buildTokenHead).
func (c *Config) perTokenHead() bool {
	return c.IsTokenClassifier() || c.IsQuestionAnswering() || c.IsMaskedLM()
}

// hasLabels reports whether the architecture's output is one logit per
// label (of the sequence or of each token): id2label sizes it.
func (c *Config) hasLabels() bool { return c.IsClassifier() || c.IsTokenClassifier() }

// IsJina reports whether the model is a JinaBERT (Jina AI's
// jina-embeddings-v2 and jina-reranker-v1 encoders): BERT without position
// embeddings, ALiBi attention biases and a gated feed-forward.
func (c *Config) IsJina() bool {
	switch c.Architecture {
	case ArchJinaBertModel, ArchJinaBertForMaskedLM, ArchJinaBertForSequence:
		return true
	}
	return false
}

// FFNActivation is the ACT2FN name of the feed-forward's activation:
// hidden_act, or for JinaBERT the one its feed_forward_type names.
func (c *Config) FFNActivation() string {
	if c.IsJina() {
		return jinaActivations[c.FeedForwardType]
	}
	return c.HiddenAct
}

// IsRoBERTa reports whether the model is of the RoBERTa family (roberta,
// xlm-roberta, camembert): BERT's encoder with padding-offset position
// ids, one token type and no token_type_ids input.
func (c *Config) IsRoBERTa() bool {
	return c.ModelType == ModelRoBERTa || c.ModelType == ModelXLMRoBERTa || c.ModelType == ModelCamemBERT
}

// hasBertKeys reports whether config.json uses BertConfig's key names
// (hidden_size, ...), as every family but DistilBERT does.
func (c *Config) hasBertKeys() bool { return c.ModelType != ModelDistilBERT }

// ParamPrefix is the attribute under which task models keep the encoder
// ("bert.", "distilbert.", "electra.", "roberta." for RoBERTa, XLM-R and
// CamemBERT).
func (c *Config) ParamPrefix() string {
	if c.IsRoBERTa() {
		return "roberta."
	}
	if c.ModelType == ModelModernBERT {
		return "model." // ModernBertPreTrainedModel.base_model_prefix
	}
	if c.ModelType == ModelGTE {
		return "new." // NewPreTrainedModel.base_model_prefix
	}
	if c.ModelType == ModelNomicBERT {
		return "bert." // NomicBertForSequenceClassification.bert
	}
	if c.IsDeBERTa() {
		return "deberta." // Deberta(V2)PreTrainedModel.base_model_prefix
	}
	return c.ModelType + "."
}

// rawConfig holds the config.json keys of both families; pointers tell
// absent keys (which take the `transformers` class default) from zeros.
type rawConfig struct {
	ModelType     *string           `json:"model_type"`
	Architectures []string          `json:"architectures"`
	VocabSize     *int              `json:"vocab_size"`
	MaxPositions  *int              `json:"max_position_embeddings"`
	ID2Label      map[string]string `json:"id2label"`
	NumLabels     *int              `json:"num_labels"`

	// BertConfig keys (RobertaConfig and XLMRobertaConfig share them).
	HiddenSize       *int           `json:"hidden_size"`
	NumHiddenLayers  *int           `json:"num_hidden_layers"`
	NumAttnHeads     *int           `json:"num_attention_heads"`
	IntermediateSize *int           `json:"intermediate_size"`
	HiddenAct        *string        `json:"hidden_act"`
	TypeVocabSize    *int           `json:"type_vocab_size"`
	LayerNormEps     *float64       `json:"layer_norm_eps"`
	PadTokenID       *int           `json:"pad_token_id"`
	PositionEmbType  *string        `json:"position_embedding_type"`
	IsDecoder        bool           `json:"is_decoder"`
	EmbeddingSize    *int           `json:"embedding_size"`                 // ElectraConfig, AlbertConfig
	NumHiddenGroups  *int           `json:"num_hidden_groups"`              // AlbertConfig
	InnerGroupNum    *int           `json:"inner_group_num"`                // AlbertConfig
	RelativeBuckets  *int           `json:"relative_attention_num_buckets"` // MPNetConfig
	FeedForwardType  *string        `json:"feed_forward_type"`              // JinaBertConfig
	AutoMap          map[string]any `json:"auto_map"`                       // trust_remote_code classes

	// ModernBertConfig keys.
	HiddenActivation     *string                    `json:"hidden_activation"`
	NormEps              *float64                   `json:"norm_eps"`
	NormBias             *bool                      `json:"norm_bias"`
	AttentionBias        *bool                      `json:"attention_bias"`
	MLPBias              *bool                      `json:"mlp_bias"`
	ClassifierBias       *bool                      `json:"classifier_bias"`
	DecoderBias          *bool                      `json:"decoder_bias"`
	ClassifierActivation *string                    `json:"classifier_activation"`
	ClassifierPooling    *string                    `json:"classifier_pooling"`
	GlobalAttnEveryN     *int                       `json:"global_attn_every_n_layers"`
	LocalAttention       *int                       `json:"local_attention"`
	GlobalRopeTheta      *float64                   `json:"global_rope_theta"`
	LocalRopeTheta       *float64                   `json:"local_rope_theta"`
	LayerTypes           []string                   `json:"layer_types"`
	RopeParameters       map[string]*ropeParameters `json:"rope_parameters"`
	RopeScaling          map[string]any             `json:"rope_scaling"`
	// NewConfig (GTE) keys; it shares rope_scaling.
	RopeTheta          *float64 `json:"rope_theta"`
	LayerNormType      *string  `json:"layer_norm_type"`
	LognAttentionScale bool     `json:"logn_attention_scale"`
	LognAttentionClip1 bool     `json:"logn_attention_clip1"`
	PackQKV            *bool    `json:"pack_qkv"`
	// NomicBertConfig (GPT2Config) keys.
	nomicRaw
	// DebertaV2Config keys.
	debertaRaw

	// DistilBertConfig keys.
	Dim        *int    `json:"dim"`
	NLayers    *int    `json:"n_layers"`
	NHeads     *int    `json:"n_heads"`
	HiddenDim  *int    `json:"hidden_dim"`
	Activation *string `json:"activation"`
}

// ropeParameters is one entry of transformers 5's rope_parameters.
type ropeParameters struct {
	RopeType  *string  `json:"rope_type"`
	RopeTheta *float64 `json:"rope_theta"`
}

// LoadConfig reads and validates a config.json.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, compiler.BadInput(path, "", unwrapPath(err))
	}
	return ParseConfig(data, path)
}

// ParseConfig parses config.json bytes; path names the file in errors.
func ParseConfig(data []byte, path string) (Config, error) {
	var raw rawConfig
	if err := json.Unmarshal(data, &raw); err != nil {
		return Config{}, configJSONError(path, data, err)
	}
	if raw.ModelType == nil {
		return Config{}, compiler.BadInput(path, "model_type",
			fmt.Errorf("%w: key is absent; supported: %s", compiler.ErrUnknownModel, supportedTypes()))
	}
	cfg := Config{ModelType: *raw.ModelType, Source: path}
	archs, ok := architecturesByType[cfg.ModelType]
	if !ok {
		return Config{}, compiler.BadInput(path, "model_type",
			fmt.Errorf("%w %q; supported: %s", compiler.ErrUnknownModel, cfg.ModelType, supportedTypes()))
	}
	switch len(raw.Architectures) {
	case 0:
		cfg.Architecture = archs[0]
	case 1:
		cfg.Architecture = raw.Architectures[0]
	default:
		return Config{}, compiler.BadInput(path, "architectures",
			fmt.Errorf("%w: %d architectures %q; want exactly one of %s",
				compiler.ErrUnknownModel, len(raw.Architectures), raw.Architectures, strings.Join(archs, ", ")))
	}

	cfg.VocabSize = intOr(raw.VocabSize, 30522)
	cfg.MaxPositions = intOr(raw.MaxPositions, 512)
	switch cfg.ModelType {
	case ModelBERT, ModelRoBERTa, ModelXLMRoBERTa, ModelCamemBERT, ModelELECTRA, ModelMPNet, ModelALBERT:
		cfg.HiddenSize = intOr(raw.HiddenSize, 768)
		cfg.NumLayers = intOr(raw.NumHiddenLayers, 12)
		cfg.NumHeads = intOr(raw.NumAttnHeads, 12)
		cfg.IntermediateSize = intOr(raw.IntermediateSize, 3072)
		if cfg.ModelType == ModelELECTRA {
			// ElectraConfig's class defaults (the small discriminator's
			// shape); published checkpoints set them all.
			cfg.HiddenSize = intOr(raw.HiddenSize, 256)
			cfg.NumHeads = intOr(raw.NumAttnHeads, 4)
			cfg.IntermediateSize = intOr(raw.IntermediateSize, 1024)
			cfg.EmbeddingSize = intOr(raw.EmbeddingSize, 128)
		}
		cfg.HiddenAct = strOr(raw.HiddenAct, ActGELU)
		if cfg.ModelType == ModelALBERT {
			// AlbertConfig's class defaults (albert-xxlarge's shape);
			// published checkpoints set them all.
			cfg.HiddenSize = intOr(raw.HiddenSize, 4096)
			cfg.NumHeads = intOr(raw.NumAttnHeads, 64)
			cfg.IntermediateSize = intOr(raw.IntermediateSize, 16384)
			cfg.EmbeddingSize = intOr(raw.EmbeddingSize, 128)
			cfg.HiddenAct = strOr(raw.HiddenAct, ActGELUNew)
			cfg.HiddenGroups = intOr(raw.NumHiddenGroups, 1)
			cfg.InnerGroupNum = intOr(raw.InnerGroupNum, 1)
			if raw.VocabSize == nil {
				cfg.VocabSize = 30000
			}
		}
		cfg.TypeVocabSize = intOr(raw.TypeVocabSize, 2)
		cfg.LayerNormEps = 1e-12
		if raw.LayerNormEps != nil {
			cfg.LayerNormEps = *raw.LayerNormEps
		}
		if cfg.ModelType == ModelMPNet {
			// MPNetConfig: no token types; MPNetEmbeddings pads at 1
			// whatever pad_token_id is; published checkpoints set the
			// rest.
			cfg.TypeVocabSize = 0
			cfg.PadTokenID = mpnetPaddingIdx
			cfg.RelativeBuckets = intOr(raw.RelativeBuckets, 32)
			if raw.VocabSize == nil {
				cfg.VocabSize = 30527
			}
		}
		if err := parsePositions(&cfg, raw, path); err != nil {
			return Config{}, err
		}
		if raw.IsDecoder {
			return Config{}, compiler.BadInput(path, "is_decoder",
				fmt.Errorf("%w: decoder %s is not supported, only encoders", compiler.ErrUnknownModel, cfg.ModelType))
		}
		if cfg.IsRoBERTa() {
			// RobertaConfig / XLMRobertaConfig / CamembertConfig class
			// defaults (CamembertConfig's vocab_size is 30522); published
			// checkpoints set type_vocab_size 1, max_position_embeddings
			// 514 and layer_norm_eps 1e-5 explicitly.
			cfg.PadTokenID = intOr(raw.PadTokenID, robertaPadTokenID)
			if raw.VocabSize == nil && cfg.ModelType == ModelRoBERTa {
				cfg.VocabSize = 50265
			}
		}
	case ModelModernBERT:
		if err := parseModernBERT(&cfg, raw, path); err != nil {
			return Config{}, err
		}
	case ModelGTE:
		if err := parseGTE(&cfg, raw, path); err != nil {
			return Config{}, err
		}
	case ModelNomicBERT:
		if err := parseNomic(&cfg, raw, path); err != nil {
			return Config{}, err
		}
	case ModelDeBERTaV2, ModelDeBERTa:
		if err := parseDeBERTa(&cfg, raw, path); err != nil {
			return Config{}, err
		}
	case ModelDistilBERT:
		cfg.HiddenSize = intOr(raw.Dim, 768)
		cfg.NumLayers = intOr(raw.NLayers, 6)
		cfg.NumHeads = intOr(raw.NHeads, 12)
		cfg.IntermediateSize = intOr(raw.HiddenDim, 3072)
		cfg.HiddenAct = strOr(raw.Activation, ActGELU)
		cfg.LayerNormEps = distilBertLayerNormEps
	}

	labels, err := parseLabels(raw)
	if err != nil {
		return Config{}, compiler.BadInput(path, "id2label", err)
	}
	cfg.Labels = labels
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// parsePositions checks position_embedding_type: "absolute" for every
// family but JinaBERT, whose architectures take "alibi" only (and then its
// feed_forward_type, JinaBertConfig's default "original" being BERT's
// feed-forward, which JinaBERT's checkpoints do not use and sqc refuses).
func parsePositions(cfg *Config, raw rawConfig, path string) error {
	pe := strOr(raw.PositionEmbType, "absolute")
	if cfg.IsJina() {
		if pe != "alibi" {
			return compiler.BadInput(path, "position_embedding_type",
				fmt.Errorf("%w: %q for %s; sqc builds JinaBERT with \"alibi\" only", compiler.ErrUnknownModel, pe, cfg.Architecture))
		}
		cfg.FeedForwardType = strOr(raw.FeedForwardType, "original")
		for _, v := range raw.AutoMap {
			if s, ok := v.(string); ok && strings.HasPrefix(s, jinaQKPostNormRepo+"--") {
				cfg.JinaQKPostNorm = true
			}
		}
		return nil
	}
	if pe != "absolute" {
		hint := ""
		if pe == "alibi" {
			hint = fmt.Sprintf(" for %s (ALiBi is supported for JinaBERT's architectures: %s, %s, %s)",
				cfg.Architecture, ArchJinaBertModel, ArchJinaBertForMaskedLM, ArchJinaBertForSequence)
		}
		return compiler.BadInput(path, "position_embedding_type",
			fmt.Errorf("%w: %q%s; only \"absolute\" is supported", compiler.ErrUnknownModel, pe, hint))
	}
	return nil
}

// configJSONError turns a decoding error into one naming the offending key
// or the line of the syntax error.
func configJSONError(path string, data []byte, err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return compiler.BadInput(path, typeErr.Field,
			fmt.Errorf("%w: JSON %s where %s is expected", compiler.ErrMalformed, typeErr.Value, typeErr.Type))
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		line := 1 + strings.Count(string(data[:min(int(syntaxErr.Offset), len(data))]), "\n")
		return compiler.BadInput(path, "", fmt.Errorf("%w: invalid JSON at line %d (byte %d): %v",
			compiler.ErrMalformed, line, syntaxErr.Offset, err))
	}
	return compiler.BadInput(path, "", fmt.Errorf("%w: %v", compiler.ErrMalformed, err))
}

// ID2Label reads the class names of config.json data's id2label in index
// order, as LoadConfig does: nil without one, an error where its keys are
// not the indices 0 to n-1, each once. It reads nothing else, so it serves
// a config.json beside an ONNX export, whatever its model type.
func ID2Label(data []byte) ([]string, error) {
	var raw struct {
		ID2Label map[string]string `json:"id2label"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: %w", compiler.ErrMalformed, err)
	}
	if len(raw.ID2Label) == 0 {
		return nil, nil
	}
	return parseLabels(rawConfig{ID2Label: raw.ID2Label})
}

// parseLabels orders id2label by index; without it, num_labels (default 2,
// as in PretrainedConfig) gives LABEL_0, LABEL_1, ...
func parseLabels(raw rawConfig) ([]string, error) {
	if len(raw.ID2Label) == 0 {
		n := intOr(raw.NumLabels, 2)
		if n < 1 || n > maxLabels {
			return nil, fmt.Errorf("%w: num_labels %d out of range [1, %d]", compiler.ErrMalformed, n, maxLabels)
		}
		labels := make([]string, n)
		for i := range labels {
			labels[i] = "LABEL_" + strconv.Itoa(i)
		}
		return labels, nil
	}
	if len(raw.ID2Label) > maxLabels {
		return nil, fmt.Errorf("%w: %d labels, more than %d", compiler.ErrMalformed, len(raw.ID2Label), maxLabels)
	}
	labels := make([]string, len(raw.ID2Label))
	seen := make([]bool, len(labels))
	for key, name := range raw.ID2Label {
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(labels) || seen[i] {
			return nil, fmt.Errorf("%w: key %q is not one of the indices 0..%d, each once",
				compiler.ErrMalformed, key, len(labels)-1)
		}
		labels[i], seen[i] = name, true
	}
	return labels, nil
}

// Validate checks that the sizes are usable and consistent, so Build never
// meets an impossible shape.
func (c *Config) Validate() error {
	fail := func(object string, format string, args ...any) error {
		return compiler.BadInput(c.Source, object, fmt.Errorf("%w: "+format, append([]any{compiler.ErrMalformed}, args...)...))
	}
	archs, ok := architecturesByType[c.ModelType]
	if !ok {
		return compiler.BadInput(c.Source, "model_type",
			fmt.Errorf("%w %q; supported: %s", compiler.ErrUnknownModel, c.ModelType, supportedTypes()))
	}
	if !slices.Contains(archs, c.Architecture) {
		return compiler.BadInput(c.Source, "architectures",
			fmt.Errorf("%w: architecture %q for model_type %q; supported: %s",
				compiler.ErrUnknownModel, c.Architecture, c.ModelType, strings.Join(archs, ", ")))
	}
	type bounded struct {
		name     string
		value    int
		min, max int
	}
	sizes := []bounded{
		{"vocab_size", c.VocabSize, 1, 1 << 24},
		{c.key("hidden_size"), c.HiddenSize, 1, maxDim},
		{c.key("num_hidden_layers"), c.NumLayers, 1, maxLayers},
		{c.key("num_attention_heads"), c.NumHeads, 1, maxDim},
		{c.key("intermediate_size"), c.IntermediateSize, 1, maxDim},
		{c.key("max_position_embeddings"), c.MaxPositions, 1, maxDim},
	}
	if c.hasTypeTable() {
		sizes = append(sizes, bounded{"type_vocab_size", c.TypeVocabSize, 1, maxDim})
	}
	if c.ModelType == ModelMPNet {
		// relative_position_bucket halves the count twice (max_exact),
		// and divides by it.
		sizes = append(sizes, bounded{"relative_attention_num_buckets", c.RelativeBuckets, 4, maxDim})
	}
	if c.ModelType == ModelELECTRA || c.ModelType == ModelALBERT || c.IsDeBERTa() && c.EmbeddingSize != 0 {
		sizes = append(sizes, bounded{"embedding_size", c.EmbeddingSize, 1, maxDim})
	} else if c.EmbeddingSize != 0 {
		return fail("embedding_size", "%d given for model_type %q, which has no embeddings projection", c.EmbeddingSize, c.ModelType)
	}
	if c.ModelType == ModelALBERT {
		// Every group is some pass's (transformers builds them all), and
		// the passes times the layers per group stay a sane depth.
		sizes = append(sizes, bounded{"num_hidden_groups", c.HiddenGroups, 1, c.NumLayers},
			bounded{"inner_group_num", c.InnerGroupNum, 1, maxLayers / max(c.NumLayers, 1)})
	} else if c.HiddenGroups != 0 || c.InnerGroupNum != 0 {
		return fail("num_hidden_groups", "layer groups given for model_type %q, which shares no layers", c.ModelType)
	}
	if c.OffsetsPositions() {
		// Position ids run from padding_idx (for pad tokens) up to
		// padding_idx + sequence length, so at least padding_idx + 2
		// rows are needed for one real token.
		sizes = append(sizes, bounded{"pad_token_id", c.PadTokenID, 0, min(c.VocabSize-1, c.MaxPositions-2)})
	}
	for _, s := range sizes {
		if s.value < s.min || s.value > s.max {
			return fail(s.name, "%d is out of range [%d, %d]", s.value, s.min, s.max)
		}
	}
	if c.HiddenSize%c.NumHeads != 0 {
		return fail(c.key("num_attention_heads"), "hidden size %d is not a multiple of %d heads", c.HiddenSize, c.NumHeads)
	}
	if err := c.checkActivation(c.key("hidden_act"), c.HiddenAct); err != nil {
		return err
	}
	if c.ModelType == ModelModernBERT {
		if err := c.validateModernBERT(fail); err != nil {
			return err
		}
	}
	if c.ModelType == ModelGTE {
		if err := c.validateGTE(fail); err != nil {
			return err
		}
	}
	if c.ModelType == ModelNomicBERT {
		if err := c.validateNomic(fail); err != nil {
			return err
		}
	}
	if c.IsDeBERTa() {
		if err := c.validateDeBERTa(fail); err != nil {
			return err
		}
	}
	if c.IsJina() {
		if _, ok := jinaActivations[c.FeedForwardType]; !ok {
			return compiler.BadInput(c.Source, "feed_forward_type", fmt.Errorf("%w: %q; supported for JinaBERT: geglu, reglu",
				compiler.ErrUnknownModel, c.FeedForwardType))
		}
	}
	if !(c.LayerNormEps > 0) || math.IsInf(c.LayerNormEps, 0) {
		return fail(c.key("layer_norm_eps"), "%v is not a positive finite number", c.LayerNormEps)
	}
	if c.hasLabels() && (len(c.Labels) < 1 || len(c.Labels) > maxLabels) {
		return fail("id2label", "%d labels; a classifier needs 1 to %d", len(c.Labels), maxLabels)
	}
	if c.IsQuestionAnswering() && len(c.Labels) != 2 {
		// qa_outputs is Linear(hidden, num_labels) split into the start and
		// end columns: transformers' QA heads need exactly two.
		return fail("num_labels", "%d for %s: a question answering head has 2 outputs (start and end)", len(c.Labels), c.Architecture)
	}
	if n := c.parameterCount(); n > maxParameters {
		return fail("", "%d parameters is more than the %d sqc accepts", n, int64(maxParameters))
	}
	return nil
}

// activations are the ACT2FN names the builders compute (activationNamed).
var activations = []string{ActGELU, ActGELUNew, ActGELUTanh, ActRELU, ActSILU, ActSwish}

// checkActivation refuses an activation name the builders do not compute,
// naming the config.json key that holds it.
func (c *Config) checkActivation(key, name string) error {
	if slices.Contains(activations, name) {
		return nil
	}
	return compiler.BadInput(c.Source, key, fmt.Errorf("%w: activation %q; supported: %s",
		compiler.ErrUnknownModel, name, strings.Join(activations, ", ")))
}

// distilBertKeys maps BertConfig key names to DistilBertConfig's.
var distilBertKeys = map[string]string{
	"hidden_size":         "dim",
	"num_hidden_layers":   "n_layers",
	"num_attention_heads": "n_heads",
	"intermediate_size":   "hidden_dim",
	"hidden_act":          "activation",
}

// modernBertKeys maps BertConfig key names to ModernBertConfig's.
var modernBertKeys = map[string]string{"hidden_act": "hidden_activation", "layer_norm_eps": "norm_eps"}

// nomicKeys maps BertConfig key names to NomicBertConfig's (GPT2Config's).
var nomicKeys = map[string]string{
	"hidden_size": "n_embd", "num_hidden_layers": "n_layer", "num_attention_heads": "n_head", "intermediate_size": "n_inner",
	"hidden_act": "activation_function", "layer_norm_eps": "layer_norm_epsilon", "max_position_embeddings": "n_positions",
}

// key is the config.json key that holds the field BERT calls bertKey, so
// errors name what the user sees in the file.
func (c *Config) key(bertKey string) string {
	if k, ok := distilBertKeys[bertKey]; ok && !c.hasBertKeys() {
		return k
	}
	if k, ok := modernBertKeys[bertKey]; ok && c.ModelType == ModelModernBERT {
		return k
	}
	if k, ok := nomicKeys[bertKey]; ok && c.ModelType == ModelNomicBERT {
		return k
	}
	return bertKey
}

// parameterCount is the number of float32 weights the architecture has; the
// sizes are bounded by Validate first, so it cannot overflow int64. A
// masked language model's head adds its dense layer, its norm and the
// decoder's bias (the decoder's weight is the word embeddings').
func (c *Config) parameterCount() int64 {
	n := c.modelParameters()
	if c.IsMaskedLM() {
		h := int64(c.HiddenSize)
		n += h*h + h + 2*h + int64(c.VocabSize)
	}
	return n
}

// modelParameters is parameterCount without a masked language model's
// head.
func (c *Config) modelParameters() int64 {
	h, i, e := int64(c.HiddenSize), int64(c.IntermediateSize), int64(c.EmbeddingWidth())
	if c.ModelType == ModelModernBERT {
		return c.modernBertParameters()
	}
	if c.ModelType == ModelGTE {
		return c.gteParameters()
	}
	if c.ModelType == ModelNomicBERT {
		return c.nomicParameters()
	}
	if c.IsDeBERTa() {
		return c.debertaParameters()
	}
	if c.IsJina() {
		// Word and type tables and their norm; per layer Q, K, V and the
		// output dense with biases, two norms, gated_layers without bias
		// (2i x h) and wo with one; the pooler or classifier.
		norms := int64(4 * h) // the attention's and the feed-forward's
		if c.JinaQKPostNorm {
			norms += 6 * h // Q's, K's, and the second after the attention
		}
		n := (int64(c.VocabSize)+int64(c.TypeVocabSize)+2)*h + int64(c.NumLayers)*(4*(h*h+h)+norms+3*h*i+h)
		return n + h*h + h + int64(len(c.Labels))*(h+1)
	}
	n := (int64(c.VocabSize) + int64(c.MaxPositions) + int64(c.TypeVocabSize) + 2) * e
	if e != h || c.ModelType == ModelALBERT {
		n += e*h + h // ELECTRA's embeddings_project, ALBERT's embedding_hidden_mapping_in
	}
	layer := 4*(h*h+h) + 2*h*i + i + h + 4*h
	if c.ModelType == ModelALBERT {
		n += int64(c.HiddenGroups*c.InnerGroupNum) * layer // the shared layers, stored once
	} else {
		n += int64(c.NumLayers) * layer
	}
	n += int64(c.RelativeBuckets) * int64(c.NumHeads) // MPNet's relative position bias
	// Pooler or classification-head dense layer, and the output layer.
	return n + h*h + h + int64(len(c.Labels))*(h+1)
}

// refuseKey is the error refusing a config.json setting sqc does not
// compute, naming the file and the key.
func refuseKey(path, key, format string, args ...any) error {
	return compiler.BadInput(path, key, fmt.Errorf("%w: "+format, append([]any{compiler.ErrUnknownModel}, args...)...))
}

func supportedTypes() string {
	types := make([]string, 0, len(architecturesByType))
	for t, archs := range architecturesByType {
		types = append(types, fmt.Sprintf("%s (%s)", t, strings.Join(archs, ", ")))
	}
	sort.Strings(types)
	return strings.Join(types, "; ")
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func strOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

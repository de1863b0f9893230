package testmodels

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// Tiny random-weight models of every supported family, made by
// gen/make_models.py with PyTorch and committed under testdata/tiny: each
// folder has config.json, model.safetensors, model.onnx (torch.onnx.export)
// and reference.json (a padded batch and PyTorch's FP32 outputs for it).
const (
	TinyBertCls       = "bert-cls-gelu"       // BertForSequenceClassification, gelu, opset 14
	TinyBertBase      = "bert-base-gelutanh"  // BertModel, gelu_pytorch_tanh, opset 17
	TinyDistilBertCls = "distilbert-cls-relu" // DistilBertForSequenceClassification, relu, 3 labels
	TinyRobertaCls    = "roberta-cls-gelunew" // RobertaForSequenceClassification, gelu_new
	TinyRobertaBase   = "roberta-base-gelu"   // RobertaModel (with pooler), gelu, opset 14
	TinyXLMRCls       = "xlmr-cls-relu"       // XLMRobertaForSequenceClassification, relu, 3 labels
	TinyXLMRBase      = "xlmr-base-gelu"      // XLMRobertaModel (with pooler), gelu
	// ElectraForSequenceClassification, gelu_new (the head's GELU is erf),
	// 32-wide embeddings projected to 64, opset 17.
	TinyElectraCls = "electra-cls-gelunew"
	// ElectraModel, gelu, embeddings as wide as the encoder (no
	// projection), opset 14.
	TinyElectraBase = "electra-base-gelu"
	// CamembertForSequenceClassification (RoBERTa's code), gelu.
	TinyCamembertCls = "camembert-cls-gelu"
	// MPNetModel (with pooler, as sentence-transformers keeps it), gelu,
	// opset 14: a relative position bias on every layer's scores.
	TinyMPNetBase = "mpnet-base-gelu"
	// MPNetForSequenceClassification, gelu_new.
	TinyMPNetCls = "mpnet-cls-gelunew"
	// AlbertForSequenceClassification, gelu_new, 16-wide embeddings
	// projected to 64, three passes through one shared layer (as
	// albert-base-v2), opset 17.
	TinyAlbertCls = "albert-cls-gelunew"
	// AlbertModel (with pooler), gelu, three passes through two groups of
	// two layers (groups 0, 0, 1), opset 14.
	TinyAlbertBase = "albert-base-groups"
)

// Tiny ModernBERT models (gen/make_modernbert.py): pre-norm layers
// without biases, rotary position embeddings, sliding-window attention on
// layers 1 and 2 of 4 (window 8), a GLU feed-forward.
const (
	// ModernBertForSequenceClassification, gelu, mean pooling, opset 17.
	TinyModernBertCls = "modernbert-cls-gelu"
	// ModernBertModel (last_hidden_state), gelu_pytorch_tanh, opset 14
	// (LayerNorms written out).
	TinyModernBertBase = "modernbert-base-gelutanh"
)

// Tiny JinaBERT models (gen/make_jinabert.py): BERT without position
// embeddings, an ALiBi bias on every layer's scores (after the mask), a
// gated feed-forward; 3 layers, max_position_embeddings 64.
const (
	// JinaBertModel (with pooler), geglu, 4 heads (power-of-two slopes),
	// opset 14.
	TinyJinaBertBase = "jinabert-base-geglu"
	// JinaBertForSequenceClassification, reglu, 6 heads (interleaved
	// slopes), 3 labels, opset 17.
	TinyJinaBertCls = "jinabert-cls-reglu"
	// JinaBertModel of jina-bert-v2-qk-post-norm's code (the variant of
	// jina-embeddings-v2-base-code): LayerNorm on Q and K, a second norm
	// after the attention's, the GLU's GELU on its second half; geglu,
	// opset 14.
	TinyJinaBertCode = "jinabert-code-geglu"
)

// TinyJinaBertModels lists the tiny JinaBERT models.
var TinyJinaBertModels = []string{TinyJinaBertBase, TinyJinaBertCls, TinyJinaBertCode}

// Tiny GTE models (gen/make_gte.py): Alibaba-NLP's NewModel (model_type
// "new"), post-norm layers with rotary position embeddings and a gated
// feed-forward.
const (
	// gte-base-en-v1.5's form: no token types, NTK rotary scaling
	// (factor 2, theta 500000), gelu, 3 layers, opset 14.
	TinyGTEBase = "gte-base-gelu"
	// gte-multilingual-base's form: one token type, gelu_pytorch_tanh,
	// no scaling, 2 layers, opset 17.
	TinyGTETypes = "gte-types-gelutanh"
	// gte-multilingual-reranker-base's form: NewForSequenceClassification
	// with one logit, the encoder under "new." with its pooler, NTK factor
	// 4, one token type, 2 layers, opset 14.
	TinyGTECls = "gte-cls-gelu"
)

// TinyGTEModels lists the tiny GTE models.
var TinyGTEModels = []string{TinyGTEBase, TinyGTETypes, TinyGTECls}

// Tiny NomicBERT models (gen/make_nomic.py): nomic-ai/nomic-bert-2048's
// NomicBertModel (model_type "nomic_bert"), post-norm blocks with rotary
// position embeddings and, in two of them, a gated feed-forward.
const (
	// nomic-embed-text-v1.5's form: SwiGLU (fc11 · silu(fc12)), no biases,
	// two token types, rotary base 1000, vocab_size padded to 64's
	// multiple; 3 layers, opset 14.
	TinyNomicBase = "nomic-base-swiglu"
	// NomicBertForSequenceClassification: the erf GEGLU with n_inner 200
	// (rounded to 256), every bias, 3 labels, 2 layers, opset 17.
	TinyNomicCls = "nomic-cls-geglu"
	// The ungated fc1, GELU, fc2 (activation_function gelu_new, which the
	// hub code computes as the erf GELU), no token types, 2 layers,
	// opset 14.
	TinyNomicGelu = "nomic-base-gelunew"
)

// TinyNomicModels lists the tiny NomicBERT models.
var TinyNomicModels = []string{TinyNomicBase, TinyNomicCls, TinyNomicGelu}

// Tiny DeBERTa models (gen/make_deberta.py), kept out of
// TinyModels: transformers masks DeBERTa's padded queries as well as its
// keys, so its padded rows differ from what sqc computes for them (no
// real token reads them); tests compare real tokens (compiler.ZeroMaskedTokens).
const (
	// deberta-v3's form: log-bucketed relative positions (8 buckets),
	// shared c2p and p2c projections, normed relative embeddings, no
	// absolute positions or token types; 2 layers, opset 14.
	TinyDeBERTaBase = "deberta-v3-base"
	// DebertaV2ForSequenceClassification with every other setting: no
	// buckets (span 6, longer distances clamped), pos_key_proj and
	// pos_query_proj, absolute positions, two token types, embed_proj
	// from 24-wide tables, gelu_new, 3 labels; 2 layers, opset 17.
	TinyDeBERTaCls = "deberta-cls-v2"
	// c2p alone, through its own pos_key_proj, 16 buckets, 2 heads; a
	// one-label classifier (a reranker's head); opset 12, DeBERTa-v2's
	// default in transformers' and optimum's ONNX export configs.
	TinyDeBERTaC2P = "deberta-rerank-c2p"
	// relative_attention false: BERT's attention with absolute
	// positions, relu; opset 14.
	TinyDeBERTaAbs = "deberta-abs"
	// DeBERTa v1 (model_type "deberta"), deberta-base's form: in_proj
	// with q_bias and v_bias, c2p and p2c (pos_proj, pos_q_proj) over a
	// span beyond any test sequence; opset 14.
	TinyDeBERTaV1Base = "deberta-v1-base"
	// A v1 classifier: p2c alone, distances clamped at 6, absolute
	// positions from the position_ids buffer, two token types, 3 labels;
	// opset 12.
	TinyDeBERTaV1Cls = "deberta-v1-cls"
)

// TinyDeBERTaModels lists the tiny DeBERTa models, v2/v3 and v1.
var TinyDeBERTaModels = []string{TinyDeBERTaBase, TinyDeBERTaCls, TinyDeBERTaC2P, TinyDeBERTaAbs, TinyDeBERTaV1Base, TinyDeBERTaV1Cls}

// TinySTBertMean is a sentence-transformers model as optimum exports it
// for feature extraction (gen/make_st_export.py): a tiny BERT, mean
// pooling by the attention mask (the count clamped, Clip) and Normalize
// (ReduceL2) in the graph, outputs token_embeddings and
// sentence_embedding. ONNX only.
const TinySTBertMean = "st-bert-mean"

// Tiny token classifiers (gen/make_tokencls.py): the encoder without its
// pooler and a Linear on every token ("logits", [batch, sequence, 9]:
// CoNLL-2003's IOB tags).
const (
	// BertForTokenClassification, gelu, token types, opset 14.
	TinyBertTok = "bert-tok-gelu"
	// XLMRobertaForTokenClassification, gelu_new, opset 17.
	TinyXLMRTok = "xlmr-tok-gelunew"
	// DistilBertForTokenClassification, gelu, opset 17.
	TinyDistilBertTok = "distilbert-tok-gelu"
	// ModernBertForTokenClassification: the prediction head (dense with
	// a bias, GELU, norm) before the classifier; opset 14.
	TinyModernBertTok = "modernbert-tok-gelu"
)

// TinyTokenModels lists the tiny token classifiers.
var TinyTokenModels = []string{TinyBertTok, TinyXLMRTok, TinyDistilBertTok, TinyModernBertTok}

// Tiny extractive question answering models (gen/make_tokencls.py): the
// encoder without its pooler and qa_outputs on every token, outputs
// "start_logits" and "end_logits" ([batch, sequence]).
const (
	// BertForQuestionAnswering, gelu, token types, opset 14.
	TinyBertQA = "bert-qa-gelu"
	// DistilBertForQuestionAnswering, gelu, opset 17.
	TinyDistilBertQA = "distilbert-qa-gelu"
	// ModernBertForQuestionAnswering: the prediction head, then
	// `classifier`; gelu_pytorch_tanh, opset 17.
	TinyModernBertQA = "modernbert-qa-gelutanh"
)

// TinyQAModels lists the tiny question answering models.
var TinyQAModels = []string{TinyBertQA, TinyDistilBertQA, TinyModernBertQA}

// Tiny masked language models (gen/make_mlm.py), the form sparse
// encoders (SPLADE) are published in: the encoder without its pooler and
// the pretraining head on every token ("logits", [batch, sequence,
// vocabulary]), the decoder's weight tied to the word embeddings and
// absent from the checkpoint as save_pretrained leaves it.
const (
	// BertForMaskedLM, gelu_new (the head's too), token types, opset 14.
	TinyBertMLM = "bert-mlm-gelunew"
	// XLMRobertaForMaskedLM, relu layers and the head's erf GELU,
	// opset 17.
	TinyXLMRMLM = "xlmr-mlm-relu"
	// DistilBertForMaskedLM, gelu, opset 17.
	TinyDistilBertMLM = "distilbert-mlm-gelu"
	// ModernBertForMaskedLM: the prediction head (dense with a bias,
	// GELU, norm), the decoder with its bias; opset 14.
	TinyModernBertMLM = "modernbert-mlm-gelu"
)

// TinyMaskedLMModels lists the tiny masked language models.
var TinyMaskedLMModels = []string{TinyBertMLM, TinyXLMRMLM, TinyDistilBertMLM, TinyModernBertMLM}

// TinyModernBertModels lists the tiny ModernBERT models.
var TinyModernBertModels = []string{TinyModernBertCls, TinyModernBertBase, TinyModernBertTok, TinyModernBertQA, TinyModernBertMLM}

// TinyModels lists the committed tiny models.
var TinyModels = []string{TinyBertCls, TinyBertBase, TinyDistilBertCls, TinyRobertaCls, TinyRobertaBase, TinyXLMRCls, TinyXLMRBase,
	TinyElectraCls, TinyElectraBase, TinyCamembertCls, TinyMPNetBase, TinyMPNetCls, TinyModernBertCls, TinyModernBertBase,
	TinyJinaBertBase, TinyJinaBertCls, TinyJinaBertCode, TinyGTEBase, TinyGTETypes, TinyGTECls, TinyNomicBase, TinyNomicCls, TinyNomicGelu,
	TinyAlbertCls, TinyAlbertBase, TinyBertTok, TinyXLMRTok, TinyDistilBertTok, TinyModernBertTok,
	TinyBertQA, TinyDistilBertQA, TinyModernBertQA, TinyBertMLM, TinyXLMRMLM, TinyDistilBertMLM, TinyModernBertMLM}

// PublishedModelsEnv names the directory holding the published-shape
// random models (roberta-base-random, xlm-roberta-base-random) that
// `gen/make_models.py --published --out DIR` writes; they are too large to
// commit.
const PublishedModelsEnv = "SQC_PUBLISHED_MODELS"

// PublishedModels are the published-shape models make_models.py builds.
var PublishedModels = []string{"roberta-base-random", "xlm-roberta-base-random"}

// TinyDir returns the folder of a committed tiny model.
func TinyDir(t testing.TB, name string) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "internal", "testmodels", "testdata", "tiny", name)
	if _, err := os.Stat(filepath.Join(dir, "reference.json")); err != nil {
		t.Fatalf("tiny model %s: %v (regenerate with internal/testmodels/gen/make_models.py)", name, err)
	}
	return dir
}

// PublishedDir returns the folder of a published-shape model, skipping the
// test with a message when $SQC_PUBLISHED_MODELS is unset or lacks it.
func PublishedDir(t testing.TB, name string) string {
	t.Helper()
	return dirUnder(t, PublishedModelsEnv, name, "make the models with internal/testmodels/gen/make_models.py --published --out DIR")
}

// dirUnder returns the folder name under $env holding a reference.json,
// skipping the test with a message (saying how to make the models) when
// env is unset or the folder is not there.
func dirUnder(t testing.TB, env, name, how string) string {
	t.Helper()
	root := os.Getenv(env)
	if root == "" {
		t.Skipf("skipping: $%s is unset (%s)", env, how)
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(filepath.Join(dir, "reference.json")); err != nil {
		t.Skipf("skipping: no %s under $%s=%s", name, env, root)
	}
	return dir
}

// ModelReference is a reference.json: one padded batch (all rows the same
// length, padding already applied with the model's pad id and mask 0) and
// the outputs PyTorch computed for it, by graph output name.
type ModelReference struct {
	Inputs  map[string]*compiler.Tensor
	Outputs map[string]*compiler.Tensor
}

type rawReference struct {
	Inputs  map[string][][]int64 `json:"inputs"`
	Outputs map[string]struct {
		Shape []int64   `json:"shape"`
		Data  []float64 `json:"data"`
	} `json:"outputs"`
}

// LoadModelReference reads dir/reference.json.
func LoadModelReference(dir string) (*ModelReference, error) {
	path := filepath.Join(dir, "reference.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r rawReference
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ref := &ModelReference{Inputs: map[string]*compiler.Tensor{}, Outputs: map[string]*compiler.Tensor{}}
	for name, rows := range r.Inputs {
		if len(rows) == 0 || len(rows[0]) == 0 {
			return nil, fmt.Errorf("%s: input %s is empty", path, name)
		}
		t := compiler.NewTensor(compiler.Int64, int64(len(rows)), int64(len(rows[0])))
		for i, row := range rows {
			if len(row) != len(rows[0]) {
				return nil, fmt.Errorf("%s: input %s row %d has %d ids, row 0 %d", path, name, i, len(row), len(rows[0]))
			}
			copy(t.I64[i*len(row):], row)
		}
		ref.Inputs[name] = t
	}
	for name, o := range r.Outputs {
		t := compiler.NewTensor(compiler.Float32, o.Shape...)
		if len(t.F32) != len(o.Data) {
			return nil, fmt.Errorf("%s: output %s has %d values for shape %v", path, name, len(o.Data), o.Shape)
		}
		for i, v := range o.Data {
			t.F32[i] = float32(v)
		}
		ref.Outputs[name] = t
	}
	return ref, nil
}

// OutputNames lists the reference's outputs, sorted.
func (r *ModelReference) OutputNames() []string {
	names := make([]string, 0, len(r.Outputs))
	for n := range r.Outputs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TensorMaxAbsDiff is the largest |a - b| over two float32 tensors of the
// same shape (+Inf when the shapes differ or a value is NaN).
func TensorMaxAbsDiff(a, b *compiler.Tensor) float64 {
	if a == nil || b == nil || !slices.Equal(a.Shape, b.Shape) || len(a.F32) != len(b.F32) {
		return math.Inf(1)
	}
	var m float64
	for i := range a.F32 {
		d := math.Abs(float64(a.F32[i]) - float64(b.F32[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		m = max(m, d)
	}
	return m
}

// Cosine is the cosine similarity of two float32 tensors' values, as
// vectors (0 when either is zero or they differ in length).
func Cosine(a, b *compiler.Tensor) float64 {
	if a == nil || b == nil || len(a.F32) != len(b.F32) {
		return 0
	}
	var dot, na, nb float64
	for i := range a.F32 {
		x, y := float64(a.F32[i]), float64(b.F32[i])
		dot, na, nb = dot+x*y, na+x*x, nb+y*y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

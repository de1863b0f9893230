package serve

import (
	"context"
	"fmt"

	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// Kind is what a model computes, which decides the endpoints that answer.
type Kind string

const (
	// Embedder: one vector per text (/embed, /v1/embeddings).
	Embedder Kind = "embedding"
	// Classifier: one logit per label (/predict).
	Classifier Kind = "classifier"
	// CrossEncoder: one relevance logit per (query, text) pair (/rerank,
	// and /predict); TEI calls it a reranker.
	CrossEncoder Kind = "reranker"
	// TokenClassifier: one logit per label for every token of a text
	// (/classify_tokens): a NER model such as BertForTokenClassification.
	TokenClassifier Kind = "token-classifier"
	// QuestionAnswerer: a start and an end logit for every token of a
	// (question, context) window (/answer): an extractive question
	// answering model such as BertForQuestionAnswering.
	QuestionAnswerer Kind = "question-answering"
	// SparseEmbedder: one vocabulary-wide vector per text, mostly zeros
	// (/embed_sparse): a SPLADE model, a *ForMaskedLM whose per-token
	// vocabulary logits the model's Run pools (modelrt.SparseHead), as
	// TEI serves a model with --pooling splade.
	SparseEmbedder Kind = "sparse-embedding"
)

// Info describes a Model to the server.
type Info struct {
	// ID names the model in /info and in OpenAI responses.
	ID   string
	Kind Kind
	// MaxSequence is the longest sequence Run accepts, in tokens.
	MaxSequence int
	// MaxBatch is the number of sequences one forward pass computes at
	// once (Run splits larger batches); the batcher never builds a pass
	// larger than the model computes efficiently.
	MaxBatch int
	// Labels name a classifier's or a token classifier's outputs by index
	// (a cross-encoder's one output may be unnamed); a token classifier
	// has len(Labels) logits per token. A question answerer needs none:
	// its two logits per token are the start's and the end's.
	Labels []string
	// TypeVocab is the number of token types the model embeds; with 0 or
	// 1 (DistilBERT) the token types of pairs are not passed to Run.
	TypeVocab int
	// Pooling names how an embedder pools token states ("mean" if empty;
	// a sparse embedder's is "splade" if empty, the name TEI's clients
	// know SPLADE models by in /info).
	Pooling string
	// Normalized: an embedder's vectors are already unit length (its own
	// head ends in a Normalize module), so the server returns them as
	// they are instead of normalising them again.
	Normalized bool
	// Prompts are the texts an embedder's prompt_name may put before each
	// text input, by name (sentence-transformers prompts); DefaultPrompt
	// names the one used when a request names none ("": none).
	Prompts       map[string]string
	DefaultPrompt string
	// Scoring is the model's own activation of each logit into a score
	// (sentence-transformers' activation_fn, problem_type); "" is TEI's
	// default: softmax over labels, sigmoid of a single logit. A token
	// classifier's scores are always a softmax, as transformers'
	// pipeline computes them.
	Scoring modelrt.Activation
	// Kernel says which kernel family runs (the model's Describe).
	Kernel string
	// Packed: Run computes only the real tokens of a batch (padding-free
	// batches: a generated package's Packed, an engine whose schedule has
	// no PackingReason), so padding costs nothing in the padding metric.
	Packed bool
}

// Model is what the server runs. The in-process INT8 engine and generated
// packages satisfy it through thin adapters (see Func).
type Model interface {
	Info() Info
	// Tokenizer encodes texts for Run; it is used with its own MaxLength
	// raised, to tell inputs that need truncating from those that fit.
	Tokenizer() *tokenizer.Tokenizer
	// Run computes one output row per sequence of b, in order: an
	// embedder's vector, a classifier's logits, a cross-encoder's logit,
	// a sparse embedder's pooled vector of one entry per vocabulary entry
	// (the server sparsifies it; it does not pool), a token classifier's
	// logits for every position of the sequence
	// (len(b.InputIDs[i]) rows of len(Labels) values, row-major; no rows
	// for the padding a chunk adds), a question answerer's 2·n values for
	// a sequence of n = len(b.InputIDs[i]) tokens: its n start logits,
	// then its n end logits (a window of the question-answering pipeline:
	// the question, then part of the context). A sequence's row must not
	// depend on the other sequences of b.
	// Run is called from one goroutine at a time.
	Run(ctx context.Context, b modelrt.Batch) ([][]float32, error)
}

// Func adapts a tokenizer and a run function to Model: the adapter a
// generated package needs, e.g.
//
//	m, _ := mymodel.New()
//	serve.Func{
//		Meta: serve.Info{ID: "mymodel", Kind: serve.Classifier, MaxSequence: mymodel.MaxSequence,
//			MaxBatch: mymodel.MaxBatch, Labels: mymodel.Labels(), Kernel: m.Describe()},
//		Tok: m.Tokenizer(),
//		RunFunc: func(ctx context.Context, b modelrt.Batch) ([][]float32, error) {
//			out, err := m.Run(ctx, b)
//			return out.Logits, err
//		},
//	}
type Func struct {
	Meta    Info
	Tok     *tokenizer.Tokenizer
	RunFunc func(ctx context.Context, b modelrt.Batch) ([][]float32, error)
}

func (f Func) Info() Info                      { return f.Meta }
func (f Func) Tokenizer() *tokenizer.Tokenizer { return f.Tok }
func (f Func) Run(ctx context.Context, b modelrt.Batch) ([][]float32, error) {
	return f.RunFunc(ctx, b)
}

// checkInfo rejects a model the server cannot serve.
func checkInfo(m Model) (Info, error) {
	info := m.Info()
	switch {
	case info.Kind != Embedder && info.Kind != SparseEmbedder && info.Kind != Classifier && info.Kind != CrossEncoder && info.Kind != TokenClassifier && info.Kind != QuestionAnswerer:
		return info, fmt.Errorf("serve: model kind %q: want %q, %q, %q, %q, %q or %q", info.Kind, Embedder, SparseEmbedder, Classifier, CrossEncoder, TokenClassifier, QuestionAnswerer)
	case info.MaxSequence < 3:
		return info, fmt.Errorf("serve: model MaxSequence %d: want at least 3 (room for [CLS] x [SEP])", info.MaxSequence)
	case info.MaxBatch < 1:
		return info, fmt.Errorf("serve: model MaxBatch %d: want at least 1", info.MaxBatch)
	case m.Tokenizer() == nil:
		return info, fmt.Errorf("serve: model %q has no tokenizer", info.ID)
	case info.Kind == Classifier && len(info.Labels) == 0:
		return info, fmt.Errorf("serve: classifier %q has no labels", info.ID)
	case info.Kind == TokenClassifier && len(info.Labels) == 0:
		return info, fmt.Errorf("serve: token classifier %q has no labels: they give its logits per token", info.ID)
	case info.DefaultPrompt != "" && !hasKey(info.Prompts, info.DefaultPrompt):
		return info, fmt.Errorf("serve: model %q: default prompt %q is not one of its prompts", info.ID, info.DefaultPrompt)
	}
	return info, nil
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

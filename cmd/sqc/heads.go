package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/codegen"
	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/compiler/sentence"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// Output names of the graphs the heads read.
const (
	outLastHidden = "last_hidden_state"
	outLogits     = "logits"
)

// modelHead is what turns a model's raw outputs into what `sqc run`
// prints and `sqc eval` scores: the embedding head of a
// sentence-transformers folder, the pooling of a sparse encoder, or the
// scoring of a classifier whose logits are scored elementwise
// (cross-encoders, multi-label). A zero modelHead prints raw outputs.
type modelHead struct {
	st      *sentence.Model     // nil unless a sentence-transformers folder
	sparse  *modelrt.SparseHead // a masked language model's (a sparse encoder): SPLADE's, or its SparseEncoder folder's; else nil
	prompt  string              // put before every text (st only)
	scoring sentence.Scoring    // classifier scoring; zero Activation: softmax classes
	width   int                 // the encoder's hidden size (st) or number of logits
}

// loadModelHead reads the head of model, whose graph is g; promptName
// picks a sentence-transformers prompt ("" the default, "none" none).
func loadModelHead(model, promptName string, g *compiler.Graph) (*modelHead, error) {
	h := &modelHead{}
	if !sentence.IsFolder(model) {
		if promptName != "" {
			return nil, usageError{"--prompt-name is for sentence-transformers folders (with config_sentence_transformers.json prompts)"}
		}
		w, ok := outputWidth(g, outLogits)
		switch {
		case ok && compiler.IsMaskedLM(g):
			h.sparse, h.width = &modelrt.SparseHead{}, w // served as text-embeddings-inference serves it with --pooling splade
		case ok:
			s, err := sentence.ScoreActivation(frontend.Dir(model), w)
			if err != nil {
				return nil, err
			}
			h.scoring, h.width = s, w
		}
		return h, nil
	}
	st, err := sentence.Load(model)
	if err != nil {
		return nil, err
	}
	out := outLastHidden
	if st.Sparse != nil {
		out, h.sparse = outLogits, st.Sparse
	}
	w, ok := outputWidth(g, out)
	if !ok {
		return nil, compiler.BadInput(model, "", fmt.Errorf("%w: the encoder has no %s output of known width", compiler.ErrUnknownModel, out))
	}
	if err := st.Check(w); err != nil {
		return nil, err
	}
	if h.prompt, err = st.Prompt(promptName); err != nil {
		return nil, err
	}
	h.st, h.width = st, w
	return h, nil
}

// outputWidth is the last dimension of g's output name, if known.
func outputWidth(g *compiler.Graph, name string) (int, bool) {
	for _, o := range g.Outputs {
		if o.Name == name && len(o.Shape) > 0 && o.Shape[len(o.Shape)-1].Known() {
			return int(o.Shape[len(o.Shape)-1].Size), true
		}
	}
	return 0, false
}

// active reports whether the head changes what is printed.
func (h *modelHead) active() bool {
	return h.st != nil || h.sparse != nil || h.scoring.Activation != ""
}

// tokenizer applies sentence_bert_config.json's max_seq_length.
func (h *modelHead) tokenizer(tok *tokenizer.Tokenizer) (*tokenizer.Tokenizer, error) {
	if tok == nil || h.st == nil || h.st.MaxSeqLength == 0 {
		return tok, nil
	}
	return tok.WithMaxLength(h.st.MaxSeqLength)
}

// withPrompt puts the prompt before every text input.
func (h *modelHead) withPrompt(exs []dataio.Example) []dataio.Example {
	if h.prompt == "" {
		return exs
	}
	out := make([]dataio.Example, len(exs))
	for i, ex := range exs {
		if !ex.HasIDs {
			ex.Text = h.prompt + ex.Text
		}
		out[i] = ex
	}
	return out
}

// pairExamples tokenizes sentence pairs ([CLS] a [SEP] b [SEP]) into
// pre-tokenized examples.
func pairExamples(tok *tokenizer.Tokenizer, pairs []dataio.Pair) []dataio.Example {
	exs := make([]dataio.Example, len(pairs))
	for i, p := range pairs {
		e := tok.EncodePair(p.A, p.B)
		exs[i] = dataio.Example{IDs: e.InputIDs, Mask: e.AttentionMask, TypeIDs: e.TokenTypeIDs, Line: p.Line, HasIDs: true, Label: -1}
	}
	return exs
}

// embedding is the sentence embedding of one result (a sparse encoder's:
// its vocabulary-wide vector, mostly zeros).
func (h *modelHead) embedding(r infer.Result, e infer.Encoded) []float32 {
	if h.sparse != nil {
		return h.sparse.Pool(r[outLogits].F32, h.width, e.Mask)
	}
	return h.st.Head.Embed(r[outLastHidden].F32, h.width, e.Mask)
}

// embeds reports whether the model's outputs are embeddings (dense or
// sparse), compared by cosine and never given sentence pairs.
func (h *modelHead) embeds() bool { return h.st != nil || h.sparse != nil }

// embeddings are the sentence embeddings of results.
func (h *modelHead) embeddings(res []infer.Result, enc []infer.Encoded) [][]float32 {
	out := make([][]float32, len(res))
	for i := range res {
		out[i] = h.embedding(res[i], enc[i])
	}
	return out
}

// scores are the classifier's scores of one result: the activation of
// each logit.
func (h *modelHead) scores(r infer.Result) []float32 {
	return modelrt.Scores(r[outLogits].F32, h.scoring.Activation)
}

// print writes one JSON object per input: {"embedding":[...]} for a
// sentence-transformers model, {"sparse_embedding":[{"index":i,"value":v},
// ...]} for a sparse encoder (its non-zero entries, as /embed_sparse
// answers), {"logits":[x],"score":s} for a single-logit
// scorer, {"logits":[...],"scores":[...]} for a multi-label one.
func (h *modelHead) print(w io.Writer, res []infer.Result, enc []infer.Encoded) error {
	out := json.NewEncoder(w)
	for i, r := range res {
		var obj any
		switch {
		case h.sparse != nil:
			obj = struct {
				Sparse []modelrt.SparseValue `json:"sparse_embedding"`
			}{modelrt.Sparsify(h.embedding(r, enc[i]))}
		case h.st != nil:
			obj = struct {
				Embedding []float32 `json:"embedding"`
			}{h.embedding(r, enc[i])}
		case h.width == 1:
			obj = struct {
				Logits []float32 `json:"logits"`
				Score  float32   `json:"score"`
			}{r[outLogits].F32, h.scores(r)[0]}
		default:
			obj = struct {
				Logits []float32 `json:"logits"`
				Scores []float32 `json:"scores"`
			}{r[outLogits].F32, h.scores(r)}
		}
		if err := out.Encode(obj); err != nil {
			return err
		}
	}
	return nil
}

// promptFlag picks a sentence-transformers prompt.
func promptFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "prompt-name", Usage: "sentence-transformers prompt put before every text (config_sentence_transformers.json; default: its default_prompt_name; `none`: no prompt)"}
}

// readPairInputs reads --texts when it is a sentence-pair .tsv, else
// returns nil.
func readPairInputs(texts string) ([]dataio.Pair, error) {
	if texts == "" || !dataio.IsPairFile(texts) {
		return nil, nil
	}
	return dataio.ReadPairs(texts)
}

// acceptsPairs: sentence pairs are the input of a classifier (a
// cross-encoder); an embedding model embeds texts one at a time.
func (h *modelHead) acceptsPairs(path string) error {
	if h.embeds() {
		return compiler.BadInput(path, "", fmt.Errorf("%w: a file of sentence pairs, but the model is a sentence-embedding model (give one text per line; `sqc eval` scores pairs by embedding cosine)", compiler.ErrInvalidRequest))
	}
	return nil
}

// maxTokens is the sentence-transformers max_seq_length that caps a
// generated package's truncation (0: none).
func (h *modelHead) maxTokens() int {
	if h.st != nil && h.st.MaxSeqLength > 0 {
		return h.st.MaxSeqLength
	}
	return 0
}

// codegen is the head as the generated package applies it.
func (h *modelHead) codegen() codegen.Head {
	out := codegen.Head{Scoring: h.scoring.Activation}
	switch {
	case h.sparse != nil: // compiler.IsMaskedLM's, or a SparseEncoder folder's
		out.Sparse = h.sparse
	case h.st != nil:
		out.Embedding, out.Prompts, out.DefaultPrompt = &h.st.Head, h.st.Prompts, h.st.DefaultPrompt
	}
	return out
}

// maxSeq is a generated package's longest sequence: --max-seq when given,
// else a sentence-transformers model's max_seq_length, else the default.
// A --max-seq below max_seq_length truncates the package's texts earlier
// than `sqc run` does, which stderr is told.
func (h *modelHead) maxSeq(flag int, set bool, stderr io.Writer) int {
	if h.st == nil || h.st.MaxSeqLength == 0 {
		return flag
	}
	if !set {
		return h.st.MaxSeqLength
	}
	if flag < h.st.MaxSeqLength {
		fmt.Fprintf(stderr, "sqc: --max-seq %d is below the model's max_seq_length %d: the package truncates texts at %d tokens, sqc run at %d\n", flag, h.st.MaxSeqLength, flag, h.st.MaxSeqLength)
	}
	return flag
}

// readCalibrationPairs is readCalibration that also takes a sentence-pair
// .tsv (a cross-encoder calibrates on pairs), tokenized with tok.
func readCalibrationPairs(path string, n int, tok *tokenizer.Tokenizer) ([]dataio.Example, error) {
	if tok == nil || !dataio.IsPairFile(path) {
		return readCalibration(path, n)
	}
	pairs, err := dataio.ReadPairs(path)
	if err != nil {
		return nil, fmt.Errorf("calibration data: %w", err)
	}
	return pairExamples(tok, pairs[:min(n, len(pairs))]), nil
}

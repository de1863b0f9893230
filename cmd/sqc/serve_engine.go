package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/serve"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// engineModel is the in-process INT8 engine as a serve.Model: Run chunks a
// batch by length (modelrt.ChunkOrder, as generated packages do), runs
// each chunk through the Program, and returns a classifier's logits, a
// question answerer's start then end logits, a sparse encoder's
// vocabulary-wide vector (its masked LM logits pooled by SPLADE's head),
// or an encoder's sentence embeddings: its sentence-transformers head's,
// as `sqc run` computes them, else hidden states mean-pooled over each
// sequence's tokens.
type engineModel struct {
	prog  *exec.Program
	q     *compiler.Graph // the INT8 graph: its inputs are what Run feeds
	tok   *tokenizer.Tokenizer
	info  serve.Info
	out   string                 // the output Run returns (a question answerer's start_logits)
	end   string                 // a question answerer's end_logits, Run's after out; else ""
	embed *modelrt.EmbeddingHead // a sentence-transformers folder's head, or nil
	order []int                  // ChunkOrder's, reused
	// sparse pools a sparse encoder's (a masked LM's) logits of every
	// token into its vector; nil for any other model.
	sparse *modelrt.SparseHead
	// sparseChunkBytes caps the logits of one engine call of a sparse
	// encoder (sparseChunkBytes, below; a field so tests can lower it).
	sparseChunkBytes int
}

// sparseChunkBytes bounds the [sequences, longest, vocabulary] float32
// logits one engine call of a sparse encoder computes: they fill the
// activation arena and are copied out, twice their size at the peak, so
// 16 texts of 512 tokens of a 30522-entry vocabulary would take 2 GiB.
// 128 MiB is ~1,100 tokens of bert-base-uncased's vocabulary (two
// 512-token texts, eight of 128): GEMMs of M >= 1,000 rows run at full
// speed, and the arena stays at that size.
const sparseChunkBytes = 128 << 20

// newEngineModel compiles the INT8 graph q (built from the canonical
// graph g, which keeps the labels and tables) and probes it once to learn
// what it outputs: [batch, labels] logits, [batch, seq, labels] logits of
// a token classifier, [batch, seq] start_logits and end_logits of a
// question answerer, [batch, seq, vocab] logits of a masked language
// model (served as a SPLADE sparse encoder), or [batch, seq, hidden]
// states.
// head is the model's own (loadModelHead's): its pooling, prompts and
// scoring are the server's, so answers equal `sqc run`'s.
func newEngineModel(g, q *compiler.Graph, tok *tokenizer.Tokenizer, head *modelHead, threads, maxBatch int) (*engineModel, error) {
	prog, err := exec.Compile(q, exec.Options{Threads: threads})
	if err != nil {
		return nil, err
	}
	lim := modelLimits(g)
	maxSeq := tok.MaxLength()
	if p := int(lim.positions.rows); p > 0 {
		maxSeq = min(maxSeq, p)
	}
	m := &engineModel{prog: prog, q: q, tok: tok, out: q.Outputs[0].Name, info: serve.Info{
		ID: g.Name, MaxSequence: maxSeq, MaxBatch: maxBatch, Labels: labels(g),
		TypeVocab: int(lim.tables["token_type_ids"].rows), Kernel: prog.Engine().Describe(),
		Packed: prog.PackingReason() == "",
	}}
	probe := tok.Encode("")
	outs, err := prog.Run(feedsOf(q, []infer.Encoded{{IDs: probe.InputIDs, Mask: probe.AttentionMask, TypeIDs: probe.TokenTypeIDs}}))
	if err != nil {
		prog.Close()
		return nil, fmt.Errorf("probing the INT8 engine: %w", err)
	}
	// A question answerer's outputs are start_logits and end_logits,
	// each [batch, seq].
	isLogits := func(name string) bool {
		t := outs[name]
		return t != nil && len(t.Shape) == 2 && t.Shape[1] == int64(probe.Len())
	}
	switch shape := outs[m.out].Shape; {
	case isQuestionAnswering(q) && isLogits("start_logits") && isLogits("end_logits"):
		m.info.Kind, m.info.Labels = serve.QuestionAnswerer, nil
		m.out, m.end = "start_logits", "end_logits"
	case compiler.IsMaskedLM(q) && len(shape) == 3:
		// Before the generic 3-D cases: a masked LM's logits are per
		// token, as a token classifier's and hidden states are, but its
		// vector is SPLADE's pooling of them over the vocabulary, as TEI
		// serves it with --pooling splade. The INT8 graph keeps the
		// canonical graph's Meta, architecture included. The head is
		// SPLADE's (max, relu: the zero value), TEI's only one, unless a
		// SparseEncoder folder's SpladePooling says otherwise (below).
		m.info.Kind, m.info.Labels, m.info.Pooling = serve.SparseEmbedder, nil, "splade"
		m.sparse, m.sparseChunkBytes = &modelrt.SparseHead{}, sparseChunkBytes
	case len(shape) == 2 && shape[1] == 1:
		m.info.Kind = serve.CrossEncoder
	case len(shape) == 2 && int(shape[1]) == len(m.info.Labels):
		m.info.Kind = serve.Classifier
	case len(shape) == 3 && int(shape[2]) == len(m.info.Labels):
		m.info.Kind = serve.TokenClassifier // one row of logits per token
	case len(shape) == 3:
		m.info.Kind, m.info.Labels = serve.Embedder, nil
	default:
		prog.Close()
		return nil, compiler.BadInput(g.Name, m.out, fmt.Errorf("output of shape %v with %d labels in config.json: neither a classifier's logits nor an encoder's hidden states", shape, len(m.info.Labels)))
	}
	m.info.Scoring = head.scoring.Activation
	if st := head.st; st != nil {
		switch {
		case st.Sparse != nil && m.info.Kind == serve.SparseEmbedder:
			// A SparseEncoder folder: its SpladePooling's strategy and
			// activation (the loader read a masked language model).
			m.sparse = st.Sparse
		case st.Sparse != nil || m.info.Kind != serve.Embedder:
			prog.Close()
			return nil, compiler.BadInput(st.Dir, m.out, fmt.Errorf("a sentence-transformers folder whose encoder outputs %v, not what its modules pool", outs[m.out].Shape))
		default:
			m.embed = &st.Head
			m.info.Normalized = st.Head.Normalize
			var modes []string
			for _, p := range st.Head.Pooling {
				modes = append(modes, string(p))
			}
			m.info.Pooling = strings.Join(modes, "+")
		}
		// A prompt is usable when pooling includes its tokens (as
		// sentence.Model.Prompt decides for sqc run).
		m.info.Prompts = map[string]string{}
		for name, text := range st.Prompts {
			if st.IncludePrompt || text == "" {
				m.info.Prompts[name] = text
			}
		}
		if _, ok := m.info.Prompts[st.DefaultPrompt]; ok {
			m.info.DefaultPrompt = st.DefaultPrompt
		}
	}
	return m, nil
}

// chunkEnd is where the engine call of m.order[lo:] ends: MaxBatch
// sequences on, or fewer for a sparse encoder whose logits would pass
// sparseChunkBytes (at least one sequence).
func (m *engineModel) chunkEnd(b *modelrt.Batch, lo int) int {
	hi := min(len(m.order), lo+m.info.MaxBatch)
	if m.sparse == nil {
		return hi
	}
	vocab := int(m.q.Outputs[0].Shape[2].Size)
	for hi > lo+1 && (hi-lo)*modelrt.LongestOf(b, m.order[lo:hi])*vocab*4 > m.sparseChunkBytes {
		hi--
	}
	return hi
}

// feedsOf is infer.MakeBatch for inputs the server built (they cannot be
// bad: the batcher checked their lengths), as one chunk.
func feedsOf(q *compiler.Graph, encs []infer.Encoded) map[string]*compiler.Tensor {
	idx := make([]int, len(encs))
	for i := range idx {
		idx[i] = i
	}
	feeds, _, err := infer.MakeBatch(q, encs, idx)
	if err != nil {
		panic(err) // the batcher's sequences have matching masks and types
	}
	return feeds
}

func (m *engineModel) Info() serve.Info                { return m.info }
func (m *engineModel) Tokenizer() *tokenizer.Tokenizer { return m.tok }
func (m *engineModel) Close()                          { m.prog.Close() }

func (m *engineModel) Run(ctx context.Context, b modelrt.Batch) ([][]float32, error) {
	n := b.Len()
	out := make([][]float32, n)
	m.order = modelrt.ChunkOrder(m.order, &b, m.info.MaxBatch)
	for lo, hi := 0, 0; lo < n; lo = hi {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi = m.chunkEnd(&b, lo)
		idx := m.order[lo:hi]
		encs := make([]infer.Encoded, len(idx))
		for r, i := range idx {
			e := infer.Encoded{IDs: b.InputIDs[i], Mask: b.AttentionMask[i]}
			if b.TokenTypeIDs != nil {
				e.TypeIDs = b.TokenTypeIDs[i]
			} else {
				e.TypeIDs = make([]int64, len(e.IDs))
			}
			encs[r] = e
		}
		outs, err := m.prog.Run(feedsOf(m.q, encs))
		if err != nil {
			return nil, err
		}
		t := outs[m.out]
		seq := modelrt.LongestOf(&b, idx)
		for r, i := range idx {
			if m.sparse != nil {
				// Pooled where the logits lie: a sequence's rows of the
				// vocabulary are ~120 KiB each, which SliceRow would copy.
				tokens, v := len(b.InputIDs[i]), int(t.Shape[2])
				out[i] = m.sparse.Pool(t.F32[r*seq*v:(r*seq+tokens)*v], v, b.AttentionMask[i])
				continue
			}
			row := infer.SliceRow(t, r, seq, len(b.InputIDs[i]))
			if m.end != "" {
				// SliceRow cuts rows of [batch, seq, ...], not of [batch,
				// seq]: a question answerer's rows are cut here.
				n := len(b.InputIDs[i])
				out[i] = append(row.F32[:n:n], infer.SliceRow(outs[m.end], r, seq, n).F32[:n]...)
				continue
			}
			switch {
			case m.embed != nil:
				out[i] = m.embed.Embed(row.F32, int(row.Shape[1]), b.AttentionMask[i])
			case m.info.Kind == serve.Embedder:
				out[i] = modelrt.MeanPool(row.F32, int(row.Shape[1]), b.AttentionMask[i])
			default:
				out[i] = row.F32
			}
		}
	}
	return out, nil
}

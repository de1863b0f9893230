package serve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"sync"
	"testing"

	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// fakeModel is a Model whose outputs are simple functions of each
// sequence's own ids (so batching cannot change them), for API tests that
// must not depend on a real model's numbers or on the CPU.
type fakeModel struct {
	info Info
	tok  *tokenizer.Tokenizer

	mu      sync.Mutex
	batches []int     // sequences per Run call
	tokens  []int     // tokens per Run call
	ids     [][]int64 // every sequence run, in order
	fail    error     // Run's error, when set
	nan     bool      // Run returns NaN
	block   chan struct{}
}

func newFake(t testing.TB, kind Kind) *fakeModel {
	t.Helper()
	f, err := os.Open("testdata/vocab.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromVocab(f, tokenizer.Options{Lowercase: true, MaxLength: 16})
	if err != nil {
		t.Fatal(err)
	}
	info := Info{ID: "fake-" + string(kind), Kind: kind, MaxSequence: 16, MaxBatch: 4, Kernel: "fake (no kernels)"}
	switch kind {
	case Classifier:
		info.Labels = []string{"negative", "positive"}
	case CrossEncoder:
		info.Labels = []string{"LABEL_0"}
		info.TypeVocab = 2
	case TokenClassifier:
		info.Labels = nerLabels
	case QuestionAnswerer:
		info.TypeVocab = 2
	}
	return &fakeModel{info: info, tok: tok}
}

func (m *fakeModel) Info() Info                      { return m.info }
func (m *fakeModel) Tokenizer() *tokenizer.Tokenizer { return m.tok }

func (m *fakeModel) Run(ctx context.Context, b modelrt.Batch) ([][]float32, error) {
	m.mu.Lock()
	m.batches = append(m.batches, b.Len())
	n := 0
	for _, ids := range b.InputIDs {
		n += len(ids)
	}
	m.tokens = append(m.tokens, n)
	m.ids = append(m.ids, b.InputIDs...)
	fail, nan, block := m.fail, m.nan, m.block
	m.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail != nil {
		return nil, fail
	}
	if err := modelrt.Validate(&b, modelrt.Limits{MaxSequence: m.info.MaxSequence, Vocab: m.tok.VocabSize(), TypeVocab: m.info.TypeVocab}); err != nil {
		return nil, err
	}
	out := make([][]float32, b.Len())
	for i, ids := range b.InputIDs {
		var sum, types int64
		for j, id := range ids {
			sum += id * int64(j+1)
			if b.TokenTypeIDs != nil {
				types += b.TokenTypeIDs[i][j]
			}
		}
		n := float32(len(ids))
		switch m.info.Kind {
		case Embedder:
			out[i] = []float32{n, float32(sum%97) / 8, float32(ids[min(1, len(ids)-1)]), 0.5}
		case Classifier:
			out[i] = []float32{n / 4, float32(sum%7) - 3}
		case CrossEncoder:
			out[i] = []float32{float32(sum%13)/2 - 3 + float32(types)/8}
		case TokenClassifier:
			out[i] = nerLogits(ids)
		case QuestionAnswerer:
			out[i] = qaLogits(ids)
		case SparseEmbedder:
			out[i] = sparseVector(ids, m.tok.VocabSize())
		}
		if nan {
			out[i][0] = float32(math.NaN())
		}
	}
	return out, nil
}

// nerLabels are the fake token classifier's labels.
var nerLabels = []string{"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}

// nerLogits are the fake token classifier's logits for a sequence: at
// position j, label id%5 of the token there gets logit nerTop(j) and the
// others 0, so a token's tag follows from its id alone.
func nerLogits(ids []int64) []float32 {
	n := len(nerLabels)
	out := make([]float32, len(ids)*n)
	for j, id := range ids {
		out[j*n+int(id)%n] = nerTop(j)
	}
	return out
}

// nerTop is the top logit at position j: it varies, so entities' mean
// scores differ from their tokens'.
func nerTop(j int) float32 { return 1 + float32(j%3) }

// qaStart and qaEnd are the fake question answerer's start and end logits
// by token id, 0 for the ids not listed: [CLS] 1, "what" 9 (a question's
// word: never an answer), "love" 4 and "deep" 3 as starts, "learning" 4
// and "love" 2.5 as ends.
var (
	qaStart = map[int64]float32{2: 1, 16: 9, 27: 4, 17: 3}
	qaEnd   = map[int64]float32{2: 1, 16: 9, 18: 4, 27: 2.5}
)

// qaLogits are the fake question answerer's logits for a sequence: the
// start logit of each token, then the end logit of each.
func qaLogits(ids []int64) []float32 {
	out := make([]float32, 2*len(ids))
	for j, id := range ids {
		out[j], out[len(ids)+j] = qaStart[id], qaEnd[id]
	}
	return out
}

// sparseWeight is the fake sparse embedder's weight of the token at
// position j: 0, 1/3, 2/3, 0, ... so that some tokens of every text (its
// [CLS]) weigh nothing, and the thirds print with float32's digits.
func sparseWeight(j int) float32 { return float32(j%3) / 3 }

// sparseVector is the fake sparse embedder's vector for a sequence: one
// entry per vocabulary entry, the largest weight of its tokens at each
// token's id (SPLADE's max pooling), 0 for the ids not in the sequence.
func sparseVector(ids []int64, vocab int) []float32 {
	out := make([]float32, vocab)
	for j, id := range ids {
		out[id] = max(out[id], sparseWeight(j))
	}
	return out
}

// lastRun is the last sequence Run computed.
func (m *fakeModel) lastRun() []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ids[len(m.ids)-1]
}

func (m *fakeModel) batchSizes() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.batches...)
}

var errFake = errors.New("fake model failure")

// quietLogger discards logs.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestServer(t testing.TB, m Model, cfg Config) *Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	if cfg.TokenizationWorkers == 0 {
		cfg.TokenizationWorkers = 2
	}
	s, err := New(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/sqc-dev/sqc/compiler"
)

// Graph input names of BERT-family encoders (both frontends use them).
const (
	InputIDs      = "input_ids"
	AttentionMask = "attention_mask"
	TokenTypeIDs  = "token_type_ids"
)

// clsID is BERT's [CLS] token id in the uncased vocabularies; the first
// token of every random sequence is [CLS], as in real inputs.
const clsID = 101

// firstRandomID skips the reserved and unused ids at the start of BERT's
// vocabulary, as the peer harness's model.py does.
const firstRandomID = 1000

// Inputs makes one batch of inputs for m: random token ids (seeded,
// [CLS] first), a full attention mask and zero token types, as the peer
// harness does. Every graph input must be one of the three; all are int64
// [batch, seq].
func (m *Model) Inputs(batch, seq int, seed uint64) (map[string]*compiler.Tensor, error) {
	if batch < 1 || seq < 1 {
		return nil, fmt.Errorf("%w: batch %d x sequence %d: both must be at least 1", compiler.ErrInvalidRequest, batch, seq)
	}
	return m.inputs(batch, seq, nil, seed)
}

// InputsWithLengths makes a batch of len(lengths) sequences padded to seq
// tokens, as a tokenizer pads a batch of real sentences: sequence b has
// lengths[b] random ids ([CLS] first) under a mask of ones, then [PAD]
// (id 0) under zeros. Such a batch runs padding-free (exec's packed
// form), so it costs what its real tokens cost.
func (m *Model) InputsWithLengths(lengths []int, seq int, seed uint64) (map[string]*compiler.Tensor, error) {
	if len(lengths) == 0 || seq < 1 {
		return nil, fmt.Errorf("%w: %d lengths, sequence %d: want at least one length and a sequence of at least 1", compiler.ErrInvalidRequest, len(lengths), seq)
	}
	for b, l := range lengths {
		if l < 1 || l > seq {
			return nil, fmt.Errorf("%w: length %d of sequence %d is outside 1..%d", compiler.ErrInvalidRequest, l, b, seq)
		}
	}
	return m.inputs(len(lengths), seq, lengths, seed)
}

// inputs makes the batch; lengths (nil: every sequence is seq long) are
// validated by the caller.
func (m *Model) inputs(batch, seq int, lengths []int, seed uint64) (map[string]*compiler.Tensor, error) {
	if m.Graph == nil {
		return nil, fmt.Errorf("%w: model %s: its graph was released after compiling", compiler.ErrInvalidRequest, m.Name)
	}
	length := func(b int) int {
		if lengths == nil {
			return seq
		}
		return lengths[b]
	}
	rng := rand.New(rand.NewPCG(seed, 0x1d5))
	lo := firstRandomID
	if lo >= m.Vocab {
		lo = 0
	}
	in := map[string]*compiler.Tensor{}
	for _, v := range m.Graph.Inputs {
		t := compiler.NewTensor(compiler.Int64, int64(batch), int64(seq))
		switch v.Name {
		case InputIDs:
			for i := range t.I64 {
				t.I64[i] = int64(lo + rng.IntN(m.Vocab-lo))
			}
			for b := 0; b < batch; b++ {
				if m.Vocab > clsID {
					t.I64[b*seq] = clsID
				}
				clear(t.I64[b*seq+length(b) : (b+1)*seq]) // [PAD]
			}
		case AttentionMask:
			for b := 0; b < batch; b++ {
				for i := range length(b) {
					t.I64[b*seq+i] = 1
				}
			}
		case TokenTypeIDs:
		default:
			return nil, compiler.BadInput(m.Graph.Meta["source"], v.Name,
				fmt.Errorf("%w: graph input %q is not one of %s, %s, %s", compiler.ErrInvalidRequest, v.Name, InputIDs, AttentionMask, TokenTypeIDs))
		}
		in[v.Name] = t
	}
	return in, nil
}

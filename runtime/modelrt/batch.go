package modelrt

// Batch is one request to a generated model's Run: sequences of token ids,
// each with its own length. Run pads each chunk of at most MaxBatch
// sequences to its longest one; padding never changes a sequence's
// outputs (padded keys get an additive attention mask of -MaxFloat32,
// whose softmax weight is exactly 0).
type Batch struct {
	// InputIDs holds one slice of token ids per sequence, special tokens
	// ([CLS], [SEP]) included.
	InputIDs [][]int64
	// AttentionMask is nil (attend to every token) or one slice per
	// sequence, as long as its ids: 1 for a token, 0 for padding.
	AttentionMask [][]int64
	// TokenTypeIDs is nil (all 0) or one slice per sequence, as long as
	// its ids. Models without token-type embeddings reject non-zero ids.
	TokenTypeIDs [][]int64
}

// Len is the number of sequences.
func (b *Batch) Len() int { return len(b.InputIDs) }

// Limits are what a compiled model accepts.
type Limits struct {
	MaxSequence int // longest sequence, in tokens
	Vocab       int // token ids must be in [0, Vocab)
	TypeVocab   int // token type ids must be in [0, TypeVocab); 0 or 1: only 0
}

// Validate checks a request against the model's limits and returns an
// *InputError naming the first offending sequence, or nil.
func Validate(b *Batch, lim Limits) error {
	n := len(b.InputIDs)
	if n == 0 {
		return inputError(-1, ErrEmptyBatch, "no sequences")
	}
	if b.AttentionMask != nil && len(b.AttentionMask) != n {
		return inputError(-1, ErrBatchShape, "%d masks for %d sequences", len(b.AttentionMask), n)
	}
	if b.TokenTypeIDs != nil && len(b.TokenTypeIDs) != n {
		return inputError(-1, ErrBatchShape, "%d token type slices for %d sequences", len(b.TokenTypeIDs), n)
	}
	types := max(lim.TypeVocab, 1)
	for i, ids := range b.InputIDs {
		switch {
		case len(ids) == 0:
			return inputError(i, ErrEmptySequence, "0 token ids")
		case len(ids) > lim.MaxSequence:
			return inputError(i, ErrSequenceTooLong, "%d tokens, the model was compiled for at most %d", len(ids), lim.MaxSequence)
		}
		for j, id := range ids {
			if id < 0 || id >= int64(lim.Vocab) {
				return inputError(i, ErrTokenOutOfRange, "id %d at position %d, vocabulary size %d", id, j, lim.Vocab)
			}
		}
		if b.AttentionMask != nil && len(b.AttentionMask[i]) != len(ids) {
			return inputError(i, ErrMaskLength, "%d mask entries for %d token ids", len(b.AttentionMask[i]), len(ids))
		}
		if b.TokenTypeIDs != nil {
			tt := b.TokenTypeIDs[i]
			if len(tt) != len(ids) {
				return inputError(i, ErrTokenTypeLength, "%d token type ids for %d token ids", len(tt), len(ids))
			}
			for j, t := range tt {
				if t < 0 || t >= int64(types) {
					return inputError(i, ErrTokenTypeInRange, "type id %d at position %d, %d types", t, j, types)
				}
			}
		}
	}
	return nil
}

// Longest returns the length of the longest of b's sequences lo..hi-1.
func Longest(b *Batch, lo, hi int) int {
	seq := 0
	for _, ids := range b.InputIDs[lo:hi] {
		seq = max(seq, len(ids))
	}
	return seq
}

// FillInputs writes sequences lo..hi-1 of b, right-padded to seq tokens,
// into ids, mask and (when non-nil) types, each [hi-lo, seq] row-major:
// padding positions get id padID, mask 0 and type 0. A nil mask in b means
// all ones; nil types mean all zeros.
func FillInputs(ids, mask, types []int64, b *Batch, lo, hi, seq int, padID int64) {
	for r := range hi - lo {
		i := lo + r
		src := b.InputIDs[i]
		rowIDs, rowMask := ids[r*seq:(r+1)*seq], mask[r*seq:(r+1)*seq]
		copy(rowIDs, src)
		for j := len(src); j < seq; j++ {
			rowIDs[j] = padID
		}
		if b.AttentionMask != nil {
			copy(rowMask, b.AttentionMask[i])
		} else {
			for j := range src {
				rowMask[j] = 1
			}
		}
		clear(rowMask[len(src):])
		if types != nil {
			row := types[r*seq : (r+1)*seq]
			if b.TokenTypeIDs != nil {
				copy(row, b.TokenTypeIDs[i])
			} else {
				clear(row[:len(src)])
			}
			clear(row[len(src):])
		}
	}
}

package modelrt

import "slices"

// Batch is one request to a generated model's Run: sequences of token ids,
// each with its own length. Run pads each chunk of at most MaxBatch
// sequences to its longest one (with more than MaxBatch sequences, chunks
// group similar lengths: ChunkOrder); padding never changes a sequence's
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
		fillRow(ids[r*seq:(r+1)*seq], mask[r*seq:(r+1)*seq], types, r, seq, b, lo+r, padID)
	}
}

// fillRow writes sequence i of b, right-padded, into row r (seq wide) of
// the inputs: rowIDs and rowMask, and types when non-nil.
func fillRow(rowIDs, rowMask, types []int64, r, seq int, b *Batch, i int, padID int64) {
	src := b.InputIDs[i]
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

// ChunkOrder returns the order in which Run computes b's sequences, in
// order (reused when its capacity suffices, so a caller that keeps it
// allocates nothing in steady state): 0..n-1 when all n sequences fit in
// one chunk of chunkSize, or when chunkSize is 1 (nothing is padded);
// otherwise the indices stably sorted by sequence length, shortest first.
// Chunks of consecutive entries then hold sequences of similar lengths,
// so padding each to its longest computes fewer tokens (PaddedTokens);
// the longest sequences share the last, possibly partial, chunk.
func ChunkOrder(order []int, b *Batch, chunkSize int) []int {
	n := len(b.InputIDs)
	if cap(order) < n {
		order = make([]int, n)
	}
	order = order[:n]
	for i := range order {
		order[i] = i
	}
	if n <= chunkSize || chunkSize <= 1 {
		return order
	}
	slices.SortStableFunc(order, func(x, y int) int { return len(b.InputIDs[x]) - len(b.InputIDs[y]) })
	return order
}

// LongestOf returns the length of the longest of b's sequences idx.
func LongestOf(b *Batch, idx []int) int {
	seq := 0
	for _, i := range idx {
		seq = max(seq, len(b.InputIDs[i]))
	}
	return seq
}

// FillInputsOf is FillInputs for the sequences idx of b (a chunk of
// ChunkOrder): row r of ids, mask and types is sequence idx[r].
func FillInputsOf(ids, mask, types []int64, b *Batch, idx []int, seq int, padID int64) {
	for r, i := range idx {
		fillRow(ids[r*seq:(r+1)*seq], mask[r*seq:(r+1)*seq], types, r, seq, b, i, padID)
	}
}

// PaddedTokens is the number of token positions computed when b's
// sequences run in chunks of chunkSize consecutive entries of order, each
// padded to its longest: what ChunkOrder reduces.
func PaddedTokens(b *Batch, order []int, chunkSize int) int {
	total := 0
	for lo := 0; lo < len(order); lo += chunkSize {
		idx := order[lo:min(len(order), lo+chunkSize)]
		total += len(idx) * LongestOf(b, idx)
	}
	return total
}

package nn

import (
	"fmt"
	"math"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// Gather copies slices of src, viewed as [outer, dim, inner], into dst
// ([outer, len(indices), inner]): dst[o, j, :] = src[o, indices[j], :], a
// negative index counting from the end (ONNX Gather on one axis). An
// embedding lookup is outer = 1, inner = hidden. It returns an error naming
// the first index outside [-dim, dim).
func Gather(dst, src []float32, outer, dim, inner int, indices []int64) error {
	for j, ix := range indices {
		if ix < 0 {
			ix += int64(dim)
		}
		if ix < 0 || ix >= int64(dim) {
			return fmt.Errorf("index %d (position %d) out of range [%d, %d)", indices[j], j, -dim, dim)
		}
		for o := range outer {
			copy(dst[(o*len(indices)+j)*inner:][:inner], src[(o*dim+int(ix))*inner:][:inner])
		}
	}
	return nil
}

// Embeddings are the tables of a BERT-style embedding layer: Words
// [vocab, hidden], Positions [maxPositions, hidden], optional TokenTypes
// [types, hidden], and the LayerNorm that follows.
type Embeddings struct {
	Hidden     int
	Words      []float32
	Positions  []float32 // nil: no position term (ModernBERT's positions are rotary, in the attention)
	TokenTypes []float32 // nil: no token-type embedding (DistilBERT)
	Norm       LayerNormParams
	// PadPositions selects RoBERTa's and XLM-R's position ids
	// (transformers' create_position_ids_from_input_ids): a token whose id
	// is not PaddingIdx takes PaddingIdx + the number of such tokens of its
	// sequence up to and including it, one whose id is PaddingIdx takes
	// PaddingIdx. Unset: positions 0, 1, 2, ... (BERT, DistilBERT).
	PadPositions bool
	PaddingIdx   int64
	// PositionsFirst adds the position row before the token-type row,
	// (word + position) + tokenType, as older transformers releases and
	// ONNX Runtime's EmbedLayerNormalization sum BERT's embeddings; unset:
	// (word + tokenType) + position. The orders round differently.
	PositionsFirst bool
}

// Embed computes LayerNorm((word + tokenType) + position) for batch
// sequences of seq tokens into dst ([batch*seq, hidden]): EmbedSum, then
// LayerNorm with e.Norm.
func Embed(p *pool.Pool, dst []float32, e *Embeddings, ids, typeIDs []int64, batch, seq int) error {
	if err := EmbedSumParallel(p, dst, e, ids, typeIDs, batch, seq); err != nil {
		return err
	}
	LayerNorm(p, dst, e.Hidden, dst, e.Hidden, batch*seq, &e.Norm)
	return nil
}

// EmbedSum computes (word + tokenType) + position for batch sequences of
// seq tokens into dst ([batch*seq, hidden]), with the position ids of
// e.PadPositions and the sums in that order (e.PositionsFirst: (word +
// position) + tokenType), as BERT's, DistilBERT's and
// RoBERTa's graphs add them: the same bits as their Gathers and Adds
// (sqc.Embeddings). typeIDs may be nil: then every token takes row 0 of
// TokenTypes (RoBERTa's all-zero buffered type ids), or no type term
// without TokenTypes. Ids follow Gather's rules (negative ones count from
// the end of the table); it returns an error for an id outside its table
// or a position outside Positions. e.Norm is not used. It is
// EmbedSumParallel on the caller's goroutine: one row sum (embedRow) for
// every form.
func EmbedSum(dst []float32, e *Embeddings, ids, typeIDs []int64, batch, seq int) error {
	return EmbedSumParallel(nil, dst, e, ids, typeIDs, batch, seq)
}

// positionIDs gives the position ids of consecutive tokens of one
// sequence (Embeddings.PadPositions).
type positionIDs struct {
	e      *Embeddings
	before int64 // the sequence's non-padding ids before the next token
}

// positionsAfter starts the position ids of a sequence at the token after
// prefix, its tokens before it.
func (e *Embeddings) positionsAfter(prefix []int64) positionIDs {
	p := positionIDs{e: e}
	if e.PadPositions {
		p.before = e.nonPadding(prefix)
	}
	return p
}

// next returns the position id of token t of the sequence, whose id is
// id: t itself, or (PadPositions) the padding-offset count; the tokens
// must come in order.
func (p *positionIDs) next(id int64, t int) int {
	e := p.e
	if !e.PadPositions {
		return t
	}
	if id == e.PaddingIdx {
		return int(e.PaddingIdx)
	}
	p.before++
	return int(e.PaddingIdx + p.before)
}

// nonPadding counts the ids that are not e.PaddingIdx: the CumSum of
// RoBERTa's position-id chain at the end of ids.
func (e *Embeddings) nonPadding(ids []int64) int64 {
	n := int64(0)
	for _, id := range ids {
		if id != e.PaddingIdx {
			n++
		}
	}
	return n
}

// MaxSequence is the longest sequence whose positions the table holds:
// its rows, less PaddingIdx + 1 with PadPositions (real tokens take
// positions PaddingIdx+1 .. PaddingIdx+seq).
func (e *Embeddings) MaxSequence() int {
	if e.Positions == nil {
		return math.MaxInt // no position term (ModernBERT's positions are rotary)
	}
	rows := len(e.Positions) / e.Hidden
	if e.PadPositions {
		return max(rows-int(e.PaddingIdx)-1, 0)
	}
	return rows
}

// checkPositions returns an error when a sequence of the given token ids
// takes a position outside the table: with PadPositions, its last
// position is PaddingIdx + its non-padding ids (PaddingIdx itself when all
// are padding); without, it is len(ids)-1.
func (e *Embeddings) checkPositions(ids []int64) error {
	if e.Positions == nil {
		return nil // no position term: any length
	}
	maxPos := int64(len(e.Positions) / e.Hidden)
	if !e.PadPositions {
		if int64(len(ids)) > maxPos {
			return fmt.Errorf("sequence of %d tokens exceeds the %d positions", len(ids), maxPos)
		}
		return nil
	}
	if e.PaddingIdx < 0 {
		return fmt.Errorf("padding_idx %d is not a position", e.PaddingIdx)
	}
	if len(ids) == 0 {
		return nil
	}
	if last := e.PaddingIdx + e.nonPadding(ids); last >= maxPos {
		return fmt.Errorf("sequence of %d tokens takes position %d (padding_idx %d + its %d non-padding tokens), past the %d positions",
			len(ids), last, e.PaddingIdx, last-e.PaddingIdx, maxPos)
	}
	return nil
}

// AttentionMask turns a [batch, seq] 0/1 mask (1 = attend) into the
// additive mask of Attention: dst[i] = 0 where mask[i] != 0, else fill
// (sqc.AttentionMask; fill is usually -math.MaxFloat32).
func AttentionMask(dst []float32, mask []int64, fill float32) {
	dst = dst[:len(mask)]
	for i, m := range mask {
		if m != 0 {
			dst[i] = 0
		} else {
			dst[i] = fill
		}
	}
}

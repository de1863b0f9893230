package nn

import (
	"fmt"

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
	Positions  []float32
	TokenTypes []float32 // nil: no token-type embedding (DistilBERT)
	Norm       LayerNormParams
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
// seq tokens into dst ([batch*seq, hidden]), with position ids 0..seq-1 and
// the sums in that order, as BERT's and DistilBERT's graphs add them: the
// same bits as their Gathers and Adds (sqc.Embeddings). typeIDs may be nil
// (then TokenTypes is not used). Ids follow Gather's rules (negative ones
// count from the end of the table); it returns an error for an id outside
// its table or a sequence longer than Positions. e.Norm is not used.
func EmbedSum(dst []float32, e *Embeddings, ids, typeIDs []int64, batch, seq int) error {
	h := e.Hidden
	if maxPos := len(e.Positions) / h; seq > maxPos {
		return fmt.Errorf("sequence of %d tokens exceeds the %d positions", seq, maxPos)
	}
	if err := Gather(dst, e.Words, 1, len(e.Words)/h, h, ids[:batch*seq]); err != nil {
		return fmt.Errorf("token id: %w", err)
	}
	for t := range batch * seq {
		row := dst[t*h : (t+1)*h]
		if typeIDs != nil {
			types := len(e.TokenTypes) / h
			id := typeIDs[t]
			if id < 0 {
				id += int64(types) // as Gather counts negative indices
			}
			if id < 0 || id >= int64(types) {
				return fmt.Errorf("token type id %d (position %d) out of range [%d, %d)", typeIDs[t], t, -types, types)
			}
			Add(row, row, e.TokenTypes[int(id)*h:][:h])
		}
		Add(row, row, e.Positions[(t%seq)*h:][:h])
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

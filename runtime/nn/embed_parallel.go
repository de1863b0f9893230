package nn

import (
	"fmt"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// EmbedSumParallel is EmbedSum with the tokens spread over p's workers
// (nil: the caller's goroutine), with the same bits. It checks every id
// before writing anything and returns EmbedSum's error for the first bad
// one (dst is then unspecified, as with EmbedSum).
func EmbedSumParallel(p *pool.Pool, dst []float32, e *Embeddings, ids, typeIDs []int64, batch, seq int) error {
	h := e.Hidden
	if maxPos := len(e.Positions) / h; seq > maxPos {
		return fmt.Errorf("sequence of %d tokens exceeds the %d positions", seq, maxPos)
	}
	tokens := batch * seq
	ids = ids[:tokens]
	words := len(e.Words) / h
	for j, ix := range ids {
		if ix < -int64(words) || ix >= int64(words) {
			return fmt.Errorf("token id: index %d (position %d) out of range [%d, %d)", ix, j, -words, words)
		}
	}
	if typeIDs != nil {
		types := len(e.TokenTypes) / h
		for t, id := range typeIDs[:tokens] {
			if id < -int64(types) || id >= int64(types) {
				return fmt.Errorf("token type id %d (position %d) out of range [%d, %d)", id, t, -types, types)
			}
		}
	}
	forRows(embedCalls, p, tokens, 3*h, embedArgs{dst: dst, e: e, ids: ids, typeIDs: typeIDs, seq: seq}, embedRange)
	return nil
}

// embedArgs are EmbedSumParallel's arguments, checked.
type embedArgs struct {
	dst          []float32
	e            *Embeddings
	ids, typeIDs []int64
	seq          int
}

var embedCalls = newRowsRecycler[embedArgs]()

// embedRange writes tokens [t0, t1): (word + type) + position, as EmbedSum
// (a Gather, then two Adds) does.
func embedRange(a *embedArgs, t0, t1 int) {
	e, h := a.e, a.e.Hidden
	words, types := len(e.Words)/h, len(e.TokenTypes)/h
	for t := t0; t < t1; t++ {
		row := a.dst[t*h : (t+1)*h]
		id := a.ids[t]
		if id < 0 {
			id += int64(words)
		}
		copy(row, e.Words[int(id)*h:][:h])
		if a.typeIDs != nil {
			tid := a.typeIDs[t]
			if tid < 0 {
				tid += int64(types)
			}
			Add(row, row, e.TokenTypes[int(tid)*h:][:h])
		}
		Add(row, row, e.Positions[(t%a.seq)*h:][:h])
	}
}

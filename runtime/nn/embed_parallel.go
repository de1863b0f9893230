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
	for b := range batch {
		if err := e.checkPositions(ids[b*seq : (b+1)*seq]); err != nil {
			return err
		}
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
	h := a.e.Hidden
	pos := a.e.positionsAfter(a.ids[t0-t0%a.seq : t0])
	for t := t0; t < t1; t++ {
		if t%a.seq == 0 {
			pos = a.e.positionsAfter(nil)
		}
		a.e.embedRow(a.dst[t*h:(t+1)*h], a.ids, a.typeIDs, t, pos.next(a.ids[t], t%a.seq))
	}
}

// embedRow writes one token's embedding, (word + type) + position
// ((word + position) + type with e.PositionsFirst), into row: the token is ids[src] (typeIDs[src]; nil: type 0, or no type term
// without TokenTypes) at position pos. Negative ids count from the end of
// their table, as Gather's indices do.
func (e *Embeddings) embedRow(row []float32, ids, typeIDs []int64, src, pos int) {
	h := e.Hidden
	id := ids[src]
	if id < 0 {
		id += int64(len(e.Words) / h)
	}
	copy(row, e.Words[int(id)*h:][:h])
	if e.PositionsFirst && e.Positions != nil {
		Add(row, row, e.Positions[pos*h:][:h])
	}
	if typeIDs != nil {
		tid := typeIDs[src]
		if tid < 0 {
			tid += int64(len(e.TokenTypes) / h)
		}
		Add(row, row, e.TokenTypes[int(tid)*h:][:h])
	} else if e.TokenTypes != nil {
		Add(row, row, e.TokenTypes[:h])
	}
	if !e.PositionsFirst && e.Positions != nil {
		Add(row, row, e.Positions[pos*h:][:h])
	}
}

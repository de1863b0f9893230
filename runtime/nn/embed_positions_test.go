package nn

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// robertaPositions is transformers' create_position_ids_from_input_ids
// written as its graph computes it: mask = ids != pad, cumsum(mask, 1) ·
// mask + pad.
func robertaPositions(ids []int64, batch, seq int, pad int64) []int64 {
	out := make([]int64, len(ids))
	for b := range batch {
		sum := int64(0)
		for s := range seq {
			mask := int64(0)
			if ids[b*seq+s] != pad {
				mask = 1
			}
			sum += mask
			out[b*seq+s] = sum*mask + pad
		}
	}
	return out
}

// padPositionCase is a right-padded batch of RoBERTa-style ids (pad id 1)
// with a pad id inside the real tokens of row 1 and a row of one token.
func padPositionCase() (e *Embeddings, ids []int64, lengths []int, batch, seq int) {
	const hidden, vocab, maxPos, pad = 40, 30, 24, 1
	e = &Embeddings{
		Hidden: hidden, Words: randSlice(41, vocab*hidden, -1, 1), Positions: randSlice(42, maxPos*hidden, -1, 1),
		TokenTypes: randSlice(43, hidden, -1, 1), PadPositions: true, PaddingIdx: pad,
	}
	lengths = []int{9, 20, 1, 14}
	batch, seq = len(lengths), 20
	ids = make([]int64, batch*seq)
	for b, l := range lengths {
		for s := range seq {
			id := int64(pad)
			if s < l {
				id = int64((b*7+s*11)%(vocab-2) + 2)
			}
			ids[b*seq+s] = id
		}
	}
	ids[1*seq+5], ids[1*seq+6] = pad, pad // pad ids among row 1's real tokens
	ids[3*seq+0] = -3                     // a negative id (Gather's rule), not the pad id
	return e, ids, lengths, batch, seq
}

// TestPadPositions: with PadPositions, EmbedSum, EmbedSumParallel and
// EmbedSumPacked give (word + type row 0) + Pos[create_position_ids...],
// bit for bit; the packed rows of each sequence are those of the sequence
// alone and those of the padded batch.
func TestPadPositions(t *testing.T) {
	e, ids, lengths, batch, seq := padPositionCase()
	h := e.Hidden
	pos := robertaPositions(ids, batch, seq, e.PaddingIdx)
	want := make([]float32, batch*seq*h)
	if err := Gather(want, e.Words, 1, len(e.Words)/h, h, ids); err != nil {
		t.Fatal(err)
	}
	for t := range batch * seq {
		row := want[t*h : (t+1)*h]
		Add(row, row, e.TokenTypes)
		Add(row, row, e.Positions[pos[t]*int64(h):][:h])
	}
	serial := make([]float32, len(want))
	if err := EmbedSum(serial, e, ids, nil, batch, seq); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "EmbedSum", serial, want)
	offsets := PackedOffsets(nil, lengths)
	withPools(t, func(t *testing.T, p *pool.Pool) {
		got := make([]float32, len(want))
		if err := EmbedSumParallel(p, got, e, ids, nil, batch, seq); err != nil {
			t.Fatal(err)
		}
		sameBits(t, fmt.Sprintf("EmbedSumParallel, %d workers", workers(p)), got, want)
		packed := make([]float32, offsets[batch]*h)
		if err := EmbedSumPacked(p, packed, e, ids, nil, seq, offsets); err != nil {
			t.Fatal(err)
		}
		for b, l := range lengths {
			alone := make([]float32, l*h)
			if err := EmbedSumParallel(p, alone, e, ids[b*seq:b*seq+l], nil, 1, l); err != nil {
				t.Fatal(err)
			}
			rows := packed[offsets[b]*h : offsets[b+1]*h]
			sameBits(t, fmt.Sprintf("sequence %d packed vs alone", b), rows, alone)
			sameBits(t, fmt.Sprintf("sequence %d packed vs padded", b), rows, want[b*seq*h:][:l*h])
		}
	})
}

// TestPadPositionsRange: a sequence whose last position (padding_idx +
// its non-padding tokens) is past the table is an error naming it, in
// every form; the same count of tokens fits when some are padding ids.
func TestPadPositionsRange(t *testing.T) {
	e, _, _, _, _ := padPositionCase()
	maxPos := len(e.Positions) / e.Hidden
	n := maxPos - int(e.PaddingIdx) // one too many: positions pad+1 .. pad+n
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = 5
	}
	out := make([]float32, n*e.Hidden)
	offsets := PackedOffsets(nil, []int{n})
	for name, err := range map[string]error{
		"EmbedSum":         EmbedSum(out, e, ids, nil, 1, n),
		"EmbedSumParallel": EmbedSumParallel(nil, out, e, ids, nil, 1, n),
		"EmbedSumPacked":   EmbedSumPacked(nil, out, e, ids, nil, n, offsets),
	} {
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("position %d", maxPos)) {
			t.Errorf("%s: error %v, want one naming position %d", name, err, maxPos)
		}
	}
	ids[3] = e.PaddingIdx
	if err := EmbedSumParallel(nil, out, e, ids, nil, 1, n); err != nil {
		t.Errorf("a pad id among %d tokens: %v", n, err)
	}
	neg := *e
	neg.PaddingIdx = -1
	if err := EmbedSum(out, &neg, ids, nil, 1, n); err == nil {
		t.Error("negative padding_idx: no error")
	}
}

package nn

import (
	"fmt"
	"sort"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// Packed (padding-free) batches. A batch of sequences of different
// lengths runs its token-wise steps on the real tokens only, laid out one
// after another: sequence b is rows offsets[b] .. offsets[b+1]-1 of every
// [tokens, width] activation (offsets has one entry per sequence plus
// one, offsets[0] = 0). The kernels below are the ones whose result
// depends on where a sequence starts (embeddings' positions, attention,
// picking a token of each sequence); every other kernel works row by row
// and runs unchanged on offsets[len-1] rows. Each gives for every
// sequence the bits its unpacked form gives for that sequence alone.

// PackedOffsets writes into offsets (reused when its capacity suffices)
// the row offsets of sequences of the given lengths: 0, l0, l0+l1, ...
func PackedOffsets(offsets []int, lengths []int) []int {
	offsets = growStats(offsets, len(lengths)+1)
	offsets[0] = 0
	for i, l := range lengths {
		offsets[i+1] = offsets[i] + l
	}
	return offsets
}

// MaskLengths reads the lengths of a right-padded batch from its 0/1
// attention mask ([batch, seq] row-major) into lengths (reused when its
// capacity suffices). ok reports whether the batch packs: every row is
// ones (non-zero) then zeros with at least one one, and some row is
// padded (with none, packed and padded are the same layout).
func MaskLengths(lengths []int, mask []int64, batch, seq int) (_ []int, ok bool) {
	lengths = growStats(lengths, batch)
	padded := false
	for b := range batch {
		row := mask[b*seq : (b+1)*seq]
		n := 0
		for n < seq && row[n] != 0 {
			n++
		}
		for _, m := range row[n:] {
			if m != 0 {
				return lengths, false // not right-padding
			}
		}
		if n == 0 {
			return lengths, false // an empty sequence has no packed form
		}
		lengths[b] = n
		padded = padded || n < seq
	}
	return lengths, padded
}

// EmbedSumPacked is EmbedSumParallel for a packed batch: ids (and typeIDs
// when non-nil) are [len(offsets)-1, seq] row-major, right-padded, and
// token t of sequence b (t < offsets[b+1]-offsets[b] <= seq) is written to
// row offsets[b]+t of dst with the position it has in sequence b alone
// (t, or with e.PadPositions the padding-offset count of ids[b, :t+1],
// which padding after it does not change). Padding is neither read nor
// checked.
func EmbedSumPacked(p *pool.Pool, dst []float32, e *Embeddings, ids, typeIDs []int64, seq int, offsets []int) error {
	h := e.Hidden
	words, types := len(e.Words)/h, len(e.TokenTypes)/h
	for b := range len(offsets) - 1 {
		n := offsets[b+1] - offsets[b]
		if n > seq || n < 0 {
			return fmt.Errorf("sequence %d of %d tokens in rows of %d", b, n, seq)
		}
		if err := e.checkPositions(ids[b*seq : b*seq+n]); err != nil {
			return err
		}
		for t, ix := range ids[b*seq : b*seq+n] {
			if ix < -int64(words) || ix >= int64(words) {
				return fmt.Errorf("token id: index %d (position %d) out of range [%d, %d)", ix, b*seq+t, -words, words)
			}
		}
		if typeIDs != nil {
			for t, id := range typeIDs[b*seq : b*seq+n] {
				if id < -int64(types) || id >= int64(types) {
					return fmt.Errorf("token type id %d (position %d) out of range [%d, %d)", id, b*seq+t, -types, types)
				}
			}
		}
	}
	tokens := offsets[len(offsets)-1]
	forRows(embedPackedCalls, p, tokens, 3*h, embedPackedArgs{dst: dst, e: e, ids: ids, typeIDs: typeIDs, seq: seq, offsets: offsets}, embedPackedRange)
	return nil
}

type embedPackedArgs struct {
	dst          []float32
	e            *Embeddings
	ids, typeIDs []int64
	seq          int
	offsets      []int
}

var embedPackedCalls = newRowsRecycler[embedPackedArgs]()

// embedPackedRange writes packed rows [r0, r1), as embedRange writes a
// padded row: the same sums in the same order.
func embedPackedRange(a *embedPackedArgs, r0, r1 int) {
	h := a.e.Hidden
	b := sort.SearchInts(a.offsets, r0+1) - 1 // the sequence holding row r0
	pos := a.e.positionsAfter(a.ids[b*a.seq : b*a.seq+r0-a.offsets[b]])
	for r := r0; r < r1; r++ {
		for r >= a.offsets[b+1] {
			b++
			pos = a.e.positionsAfter(nil)
		}
		t := r - a.offsets[b]
		a.e.embedRow(a.dst[r*h:(r+1)*h], a.ids, a.typeIDs, b*a.seq+t, pos.next(a.ids[b*a.seq+t], t))
	}
}

// AttentionPacked is Attention of a packed batch: every sequence b
// attends to its own offsets[b+1]-offsets[b] keys, with no mask, and gets
// the bits Attention gives it alone (Batch 1, SeqQ = SeqK = its length,
// no mask). Q, K, V and the output are [tokens, ...] with d's strides;
// d's Batch, SeqQ, SeqK and mask strides are not used. scratch is
// AttentionScratchLen(workers, longest sequence, HeadDim) long.
func AttentionPacked(p *pool.Pool, scratch, out, q, k, v []float32, d *AttentionDims, offsets []int) {
	attentionPacked(active(), p, scratch, out, q, k, v, nil, d, offsets)
}

// AttentionPackedBiased is AttentionPacked adding a bias to each
// sequence's scores, as AttentionBiased does with no mask: sequence b
// adds Bias[b, h, i, j] for its own i, j (below its length), the bias
// laid out by d's bias strides as for the padded batch (MPNet's position
// bias, [1, heads, seq, seq] at the padded length seq: every sequence
// reads its top-left corner). Where that corner is the bias the sequence
// alone has (a bias of positions only: passes.MarkPositionOnlyBias), each
// sequence gets the bits AttentionBiased gives it alone.
func AttentionPackedBiased(p *pool.Pool, scratch, out, q, k, v, bias []float32, d *AttentionDims, offsets []int) {
	attentionPacked(active(), p, scratch, out, q, k, v, bias, d, offsets)
}

func attentionPacked(kern *kernels, p *pool.Pool, scratch, out, q, k, v, bias []float32, d *AttentionDims, offsets []int) {
	n := len(offsets) - 1
	if n <= 0 || d.HeadDim <= 0 {
		return
	}
	c := packedAttentionCalls.get()
	c.kern, c.scratch, c.out, c.q, c.k, c.v, c.bias, c.d, c.offsets = kern, scratch, out, q, k, v, bias, *d, offsets
	c.starts = growStats(c.starts, n+1)
	longest := 0
	for b := range n {
		l := offsets[b+1] - offsets[b]
		longest = max(longest, l)
		c.starts[b+1] = c.starts[b] + d.Heads*((l+attnTaskRows-1)/attnTaskRows)
	}
	c.per = attnScratchPerWorker(longest, d.HeadDim)
	parallelFor(p, c.starts[n], c.task)
	c.scratch, c.out, c.q, c.k, c.v, c.bias, c.offsets = nil, nil, nil, nil, nil, nil, nil
	packedAttentionCalls.put(c)
}

// packedAttentionCall is one AttentionPacked call's state: tasks
// starts[b] .. starts[b+1]-1 are sequence b's (head, query block) pairs.
type packedAttentionCall struct {
	kern                        *kernels
	scratch, out, q, k, v, bias []float32
	d                           AttentionDims
	offsets, starts             []int
	per                         int
	task                        func(worker, t int)
}

var packedAttentionCalls = newRecycler(func() *packedAttentionCall {
	c := &packedAttentionCall{}
	c.task = c.block
	return c
})

// block is task t: attentionBlock of one sequence seen alone.
func (c *packedAttentionCall) block(worker, t int) {
	b := sort.SearchInts(c.starts, t+1) - 1
	off, l := c.offsets[b], c.offsets[b+1]-c.offsets[b]
	d := c.d
	d.Batch, d.SeqQ, d.SeqK = 1, l, l
	blocks := (l + attnTaskRows - 1) / attnTaskRows
	local := t - c.starts[b]
	h, blk := local/blocks, local%blocks
	attentionBlock(c.kern, c.scratch[worker*c.per:(worker+1)*c.per], c.out[off*d.OutStride:], c.q[off*d.QStride:],
		c.k[off*d.KStride:], c.v[off*d.VStride:], nil, sequenceBias(c.bias, &d, b), &d, 0, h, blk*attnTaskRows)
}

// sequenceBias is sequence b's part of a packed batch's bias (nil for
// none), indexed as batch 0.
func sequenceBias(bias []float32, d *AttentionDims, b int) []float32 {
	if bias == nil {
		return nil
	}
	return bias[b*d.BiasBatchStride:]
}

// GatherPacked picks tokens of each sequence of a packed batch: dst
// ([len(offsets)-1, len(indices), inner]) gets at [b, j, :] row
// offsets[b]+indices[j] of src, a negative index counting from the end of
// sequence b: Gather along the sequence axis of each sequence alone (the
// pooler's first token). It returns an error naming the first index
// outside a sequence.
func GatherPacked(dst, src []float32, inner int, offsets []int, indices []int64) error {
	for b := range len(offsets) - 1 {
		l := int64(offsets[b+1] - offsets[b])
		for j, ix := range indices {
			if ix < 0 {
				ix += l
			}
			if ix < 0 || ix >= l {
				return fmt.Errorf("index %d (position %d) out of range [%d, %d) of sequence %d", indices[j], j, -l, l, b)
			}
			copy(dst[(b*len(indices)+j)*inner:][:inner], src[(offsets[b]+int(ix))*inner:][:inner])
		}
	}
	return nil
}

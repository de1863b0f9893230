package nn

import (
	"fmt"
	"slices"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// DisentangledDims describe one DisentangledBias call (sqc.DisentangledBias,
// DeBERTa's relative attention terms): Q and K are [Batch, Seq,
// Heads*HeadDim] with row strides QStride and KStride; the projected
// relative embeddings PosKey and PosQuery are [Rows, Heads*HeadDim],
// dense; the index tables are [Seq, Seq].
type DisentangledDims struct {
	Batch, Seq, Heads, HeadDim int
	Rows                       int // relative embedding rows, 2·span
	QStride, KStride           int
	Divisor                    float32
}

// DisentangledBias writes, for every sequence b, head h, query i and key
// j, out[b, h, i, j] ([Batch, Heads, Seq, Seq]) =
//
//	c2p = float32(dot(Q[b, i, h], PosKey[c2pIndex[i, j], h]) / Divisor)
//	p2c = float32(dot(K[b, j, h], PosQuery[p2cIndex[j, i], h]) / Divisor)
//	out = c2p + p2c, or the one of them whose inputs are given
//
// where X[., ., h] is columns h*HeadDim .. (h+1)*HeadDim and dot is
// sum_c float32(x_c * y_c), c ascending from 0 (kernels.attnScores, so
// every ISA gives the same bits). q and posKey nil mean no c2p term, k and
// posQuery nil no p2c. An index outside [0, Rows) is an error, and nothing
// is written. scratch holds DisentangledScratchLen values per worker.
//
// Each task is one head of one sequence: its query rows in blocks of 16
// (transposed, one row per vector lane) against the embedding rows the
// table reaches, then its keys likewise, so only the relative distances a
// sequence of Seq tokens has are multiplied (at most 2·Seq - 1 rows).
func DisentangledBias(p *pool.Pool, scratch, out, q, posKey []float32, c2pIndex []int64, k, posQuery []float32, p2cIndex []int64, d *DisentangledDims) error {
	return disentangledBias(active(), p, scratch, out, q, posKey, c2pIndex, k, posQuery, p2cIndex, d, nil)
}

// DisentangledBiasPacked is DisentangledBias on a packed batch: q and k
// are [tokens, ...] rows, sequence b at rows offsets[b] .. offsets[b+1]-1;
// d.Seq is the padded length that the index tables ([Seq, Seq]) and out
// ([Batch, Heads, Seq, Seq], Batch = len(offsets) - 1) are laid out at.
// Sequence b of n tokens gets the top-left n x n corner of each of its
// heads' [Seq, Seq] blocks, the bits DisentangledBias gives it alone (the
// index tables depend on positions only); the rest of out is left as it
// is, and packed attention reads only the corners.
func DisentangledBiasPacked(p *pool.Pool, scratch, out, q, posKey []float32, c2pIndex []int64, k, posQuery []float32, p2cIndex []int64, d *DisentangledDims, offsets []int) error {
	if len(offsets) < 1 || d.Batch != len(offsets)-1 {
		return fmt.Errorf("%d sequences for %d offsets", d.Batch, len(offsets))
	}
	for b := range d.Batch {
		if n := offsets[b+1] - offsets[b]; n < 0 || n > d.Seq {
			return fmt.Errorf("sequence %d has %d tokens, outside [0, %d]", b, n, d.Seq)
		}
	}
	return disentangledBias(active(), p, scratch, out, q, posKey, c2pIndex, k, posQuery, p2cIndex, d, offsets)
}

// DisentangledScratchLen is the scratch DisentangledBias needs for a pool
// of the given number of workers (1 without a pool): per worker a block
// of transposed rows and its products with every embedding row, for each
// of the two blocks it works on at once.
func DisentangledScratchLen(workers, rows, headDim int) int {
	return workers * disentangledPerWorker(rows, headDim)
}

func disentangledPerWorker(rows, headDim int) int { return 2 * attnRows * (headDim + rows) }

func disentangledBias(kern *kernels, p *pool.Pool, scratch, out, q, posKey []float32, c2pIndex []int64, k, posQuery []float32, p2cIndex []int64, d *DisentangledDims, offsets []int) error {
	if d.Batch <= 0 || d.Seq <= 0 || d.Heads <= 0 || (q == nil && k == nil) {
		return nil
	}
	c := disentangledCalls.get()
	// The tables' row ranges, checked against the embedding rows before
	// anything is written.
	var err error
	if q != nil {
		c.c2pRows, err = rowRanges(c.c2pRows, c2pIndex, d.Seq, d.Rows, "c2p")
	}
	if k != nil && err == nil {
		c.p2cRows, err = rowRanges(c.p2cRows, p2cIndex, d.Seq, d.Rows, "p2c")
	}
	if err != nil {
		disentangledCalls.put(c)
		return err
	}
	c.kern, c.scratch, c.out, c.q, c.posKey, c.c2p, c.k, c.posQuery, c.p2c, c.d = kern, scratch, out, q, posKey, c2pIndex, k, posQuery, p2cIndex, *d
	c.offsets = offsets
	c.per = disentangledPerWorker(d.Rows, d.HeadDim)
	// The tables as int32 (indices below Rows), the gathers' offsets; p2c
	// transposed, as it is read column by column. Once per call.
	ss := d.Seq * d.Seq
	if q != nil {
		c.c2p32 = slices.Grow(c.c2p32[:0], ss)[:ss]
		for i, x := range c2pIndex[:ss] {
			c.c2p32[i] = int32(x)
		}
	}
	if k != nil {
		c.p2cT = slices.Grow(c.p2cT[:0], ss)[:ss]
		for j := range d.Seq {
			for i, x := range p2cIndex[j*d.Seq:][:d.Seq] {
				c.p2cT[i*d.Seq+j] = int32(x)
			}
		}
	}
	parallelFor(p, d.Batch*d.Heads, c.task)
	c.scratch, c.out, c.q, c.posKey, c.c2p, c.k, c.posQuery, c.p2c, c.offsets = nil, nil, nil, nil, nil, nil, nil, nil, nil
	disentangledCalls.put(c)
	return nil
}

// disentangledCall is one DisentangledBias call's state (see calls.go).
type disentangledCall struct {
	kern                                 *kernels
	scratch, out, q, posKey, k, posQuery []float32
	c2p, p2c                             []int64
	offsets                              []int   // a packed batch's (nil: padded)
	c2p32, p2cT                          []int32 // c2p as is and p2c transposed, [Seq, Seq]; kept between calls
	c2pRows, p2cRows                     []int32 // each table row's least and greatest value, interleaved
	d                                    DisentangledDims
	per                                  int
	task                                 func(worker, t int)
}

var disentangledCalls = newRecycler(func() *disentangledCall {
	c := &disentangledCall{}
	c.task = c.head
	return c
})

// head is task t: head t%Heads of sequence t/Heads, whose n tokens are
// rows row0 .. of q and k (n = Seq and row0 = b·Seq for a padded batch).
// The index tables and the head's [Seq, Seq] block of out have row
// stride Seq; the corner n x n is computed. Queries (then keys) go in
// pairs of 16-row blocks that share each load of an embedding row
// (kernels.attnScores2), multiplying only the rows their part of the
// table reaches (about n + 32 for DeBERTa's tables); p2c is written query
// row by query row through the transposed table, 16 contiguous values at
// a time.
func (c *disentangledCall) head(worker, t int) {
	d := &c.d
	b, h := t/d.Heads, t%d.Heads
	s, hd := d.Seq, d.HeadDim
	n, row0 := s, b*s
	if c.offsets != nil {
		row0 = c.offsets[b]
		n = c.offsets[b+1] - row0
	}
	o := c.out[(b*d.Heads+h)*s*s:][:s*s]
	sc := c.scratch[worker*c.per:][:c.per]
	div := d.Divisor
	if c.q != nil {
		for i0 := 0; i0 < n; i0 += attnTaskRows {
			rows := min(attnTaskRows, n-i0)
			span, prod := c.products(sc, c.q[(row0+i0)*d.QStride+h*hd:], d.QStride, c.posKey[h*hd:], c.c2pRows, i0, rows)
			for r := range rows {
				// Embedding row e of query i0+r at prod[r/16][(e-lo)*16 + r%16].
				i := i0 + r
				c.kern.relGather(o[i*s:], s, prod[r/attnRows], c.c2p32[i*s:], s, 1, n, r%attnRows-int(span.lo)*attnRows, 0, span, div, false)
			}
		}
	}
	if c.k == nil {
		return
	}
	for j0 := 0; j0 < n; j0 += attnTaskRows {
		rows := min(attnTaskRows, n-j0)
		span, prod := c.products(sc, c.k[(row0+j0)*d.KStride+h*hd:], d.KStride, c.posQuery[h*hd:], c.p2cRows, j0, rows)
		for blk := 0; blk*attnRows < rows; blk++ {
			// Key j1+r's embedding row e at prod[blk][(e-lo)*16 + r]: lane r.
			j1 := j0 + blk*attnRows
			c.kern.relGather(o[j1:], s, prod[blk], c.p2cT[j1:], s, n, min(attnRows, rows-blk*attnRows), -int(span.lo)*attnRows, 1, span, div, c.q != nil)
		}
	}
}

// idxSpan is the least and greatest index a relative gather reads.
type idxSpan struct{ lo, hi int32 }

// relGatherGo is kernels.relGather: for r < rows and j < cols, with row r
// of dst at dst[r*dstStride:] and of idx at idx[r*idxStride:],
//
//	v = src[base + idx[r, j]*16 + lane*j]
//	v = v / div              unless div is 1 (x / 1 is x)
//	v = v + dst[r, j]        if add
//	dst[r, j] = v
//
// An index outside span panics: the assembly relies on the caller's span.
func relGatherGo(dst []float32, dstStride int, src []float32, idx []int32, idxStride, rows, cols, base, lane int, span idxSpan, div float32, add bool) {
	for r := range rows {
		out, ix := dst[r*dstStride:][:cols], idx[r*idxStride:][:cols]
		for j, x := range ix {
			if x < span.lo || x > span.hi {
				panic(fmt.Sprintf("nn: relative gather index %d outside %d..%d", x, span.lo, span.hi))
			}
			v := src[base+int(x)*attnRows+lane*j]
			if div != 1 {
				v /= div
			}
			if add {
				v += out[j]
			}
			out[j] = v
		}
	}
}

// products multiplies rows (1 to 32) rows of x (row stride stride, the
// head's columns first) with the embedding rows they reach (emb, the
// head's columns of row 0 first): it returns the least row reached, lo,
// and greatest (span) and the two blocks' products, block k's row r
// against embedding row e at prod[k][(e-lo)*16 + r].
func (c *disentangledCall) products(sc, x []float32, stride int, emb []float32, ranges []int32, r0, rows int) (span idxSpan, prod [2][]float32) {
	d := &c.d
	hd, width := d.HeadDim, d.Heads*d.HeadDim
	lo, hi := blockRange(ranges, r0, rows)
	span = idxSpan{int32(lo), int32(hi)}
	per := attnRows * (hd + d.Rows)
	var xT [2][]float32
	for k := range 2 {
		xT[k], prod[k] = sc[k*per:][:attnRows*hd], sc[k*per+attnRows*hd:][:attnRows*d.Rows]
	}
	c.kern.attnTranspose(xT[0], x, stride, min(attnRows, rows), hd)
	if rows <= attnRows {
		c.kern.attnScores(prod[0], xT[0], emb[lo*width:], width, hi-lo+1, hd)
		return span, prod
	}
	c.kern.attnTranspose(xT[1], x[attnRows*stride:], stride, rows-attnRows, hd)
	c.kern.attnScores2(prod[0], prod[1], xT[0], xT[1], emb[lo*width:], width, hi-lo+1, hd)
	return span, prod
}

// rowRanges sets dst (grown to 2·s) to each row's least and greatest
// value of an index table [s, s], interleaved, or returns an error naming
// the table (what) when a value lies outside [0, rows).
func rowRanges(dst []int32, index []int64, s, rows int, what string) ([]int32, error) {
	if cap(dst) < 2*s {
		dst = make([]int32, 2*s)
	}
	dst = dst[:2*s]
	for r := range s {
		row := index[r*s:][:s]
		l, h := row[0], row[0]
		for _, v := range row {
			l, h = min(l, v), max(h, v)
		}
		switch {
		case l < 0:
			return dst, fmt.Errorf("%s index %d is negative", what, l)
		case h >= int64(rows):
			return dst, fmt.Errorf("%s index %d is past the %d relative embedding rows", what, h, rows)
		}
		dst[2*r], dst[2*r+1] = int32(l), int32(h)
	}
	return dst, nil
}

// blockRange is the least and greatest value of rows r0 .. r0+rows-1 of
// a table whose row ranges are ranges (rowRanges): the embedding rows a
// block reaches. A shorter sequence of a packed batch reads only the
// first n columns of its rows, a part of those: the range is then more
// than it needs, which costs products, not bits.
func blockRange(ranges []int32, r0, rows int) (lo, hi int) {
	l, h := ranges[2*r0], ranges[2*r0+1]
	for r := r0 + 1; r < r0+rows; r++ {
		l, h = min(l, ranges[2*r]), max(h, ranges[2*r+1])
	}
	return int(l), int(h)
}

package nn

import (
	"fmt"

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
// of transposed rows and its products with every embedding row.
func DisentangledScratchLen(workers, rows, headDim int) int {
	return workers * disentangledPerWorker(rows, headDim)
}

func disentangledPerWorker(rows, headDim int) int { return attnRows * (headDim + rows) }

// indexRange returns the least and greatest value of an index table, or
// an error naming what when one lies outside [0, rows).
func indexRange(index []int64, rows int, what string) (lo, hi int, err error) {
	l, h := index[0], index[0]
	for _, v := range index {
		l, h = min(l, v), max(h, v)
	}
	switch {
	case l < 0:
		return 0, 0, fmt.Errorf("%s index %d is negative", what, l)
	case h >= int64(rows):
		return 0, 0, fmt.Errorf("%s index %d is past the %d relative embedding rows", what, h, rows)
	}
	return int(l), int(h), nil
}

func disentangledBias(kern *kernels, p *pool.Pool, scratch, out, q, posKey []float32, c2pIndex []int64, k, posQuery []float32, p2cIndex []int64, d *DisentangledDims, offsets []int) error {
	if d.Batch <= 0 || d.Seq <= 0 || d.Heads <= 0 || (q == nil && k == nil) {
		return nil
	}
	var c2pLo, c2pHi, p2cLo, p2cHi int
	var err error
	if q != nil {
		if c2pLo, c2pHi, err = indexRange(c2pIndex[:d.Seq*d.Seq], d.Rows, "c2p"); err != nil {
			return err
		}
	}
	if k != nil {
		if p2cLo, p2cHi, err = indexRange(p2cIndex[:d.Seq*d.Seq], d.Rows, "p2c"); err != nil {
			return err
		}
	}
	c := disentangledCalls.get()
	c.kern, c.scratch, c.out, c.q, c.posKey, c.c2p, c.k, c.posQuery, c.p2c, c.d = kern, scratch, out, q, posKey, c2pIndex, k, posQuery, p2cIndex, *d
	c.offsets = offsets
	c.per = disentangledPerWorker(d.Rows, d.HeadDim)
	c.c2pLo, c.c2pHi, c.p2cLo, c.p2cHi = c2pLo, c2pHi, p2cLo, p2cHi
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
	offsets                              []int // a packed batch's (nil: padded)
	d                                    DisentangledDims
	per                                  int
	c2pLo, c2pHi, p2cLo, p2cHi           int // the index tables' ranges
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
// stride Seq; the corner n x n is computed.
func (c *disentangledCall) head(worker, t int) {
	d := &c.d
	b, h := t/d.Heads, t%d.Heads
	s, hd, width := d.Seq, d.HeadDim, d.Heads*d.HeadDim
	n, row0 := s, b*s
	if c.offsets != nil {
		row0 = c.offsets[b]
		n = c.offsets[b+1] - row0
	}
	sc := c.scratch[worker*c.per:][:c.per]
	rowsT, prod := sc[:attnRows*hd], sc[attnRows*hd:]
	o := c.out[(b*d.Heads+h)*s*s:][:s*s]
	if c.q != nil {
		lo, hi := c.c2pLo, c.c2pHi
		if n < s {
			lo, hi = cornerRange(c.c2p, s, n)
		}
		emb := c.posKey[lo*width+h*hd:]
		for i0 := 0; i0 < n; i0 += attnRows {
			rows := min(attnRows, n-i0)
			c.kern.attnTranspose(rowsT, c.q[(row0+i0)*d.QStride+h*hd:], d.QStride, rows, hd)
			c.kern.attnScores(prod, rowsT, emb, width, hi-lo+1, hd)
			for r := range rows {
				i := i0 + r
				dst, idx := o[i*s:][:n], c.c2p[i*s:][:n]
				for j, x := range idx {
					dst[j] = prod[(int(x)-lo)*attnRows+r] / d.Divisor
				}
			}
		}
	}
	if c.k == nil {
		return
	}
	lo, hi := c.p2cLo, c.p2cHi
	if n < s {
		lo, hi = cornerRange(c.p2c, s, n)
	}
	emb := c.posQuery[lo*width+h*hd:]
	for j0 := 0; j0 < n; j0 += attnRows {
		rows := min(attnRows, n-j0)
		c.kern.attnTranspose(rowsT, c.k[(row0+j0)*d.KStride+h*hd:], d.KStride, rows, hd)
		c.kern.attnScores(prod, rowsT, emb, width, hi-lo+1, hd)
		for r := range rows {
			j := j0 + r
			for i, x := range c.p2c[j*s:][:n] {
				v := prod[(int(x)-lo)*attnRows+r] / d.Divisor
				if c.q != nil {
					v += o[i*s+j]
				}
				o[i*s+j] = v
			}
		}
	}
}

// cornerRange is the least and greatest value in the top-left n x n corner
// (n >= 1) of an index table of row stride s, already checked to lie in
// the embedding rows: a shorter sequence of a packed batch multiplies
// only the distances it has.
func cornerRange(index []int64, s, n int) (lo, hi int) {
	l, h := index[0], index[0]
	for i := range n {
		for _, v := range index[i*s:][:n] {
			l, h = min(l, v), max(h, v)
		}
	}
	return int(l), int(h)
}

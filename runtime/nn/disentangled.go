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
	return disentangledBias(active(), p, scratch, out, q, posKey, c2pIndex, k, posQuery, p2cIndex, d)
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

func disentangledBias(kern *kernels, p *pool.Pool, scratch, out, q, posKey []float32, c2pIndex []int64, k, posQuery []float32, p2cIndex []int64, d *DisentangledDims) error {
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
	c.per = disentangledPerWorker(d.Rows, d.HeadDim)
	c.c2pLo, c.c2pHi, c.p2cLo, c.p2cHi = c2pLo, c2pHi, p2cLo, p2cHi
	parallelFor(p, d.Batch*d.Heads, c.task)
	c.scratch, c.out, c.q, c.posKey, c.c2p, c.k, c.posQuery, c.p2c = nil, nil, nil, nil, nil, nil, nil, nil
	disentangledCalls.put(c)
	return nil
}

// disentangledCall is one DisentangledBias call's state (see calls.go).
type disentangledCall struct {
	kern                                 *kernels
	scratch, out, q, posKey, k, posQuery []float32
	c2p, p2c                             []int64
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

// head is task t: head t%Heads of sequence t/Heads.
func (c *disentangledCall) head(worker, t int) {
	d := &c.d
	b, h := t/d.Heads, t%d.Heads
	s, hd, width := d.Seq, d.HeadDim, d.Heads*d.HeadDim
	sc := c.scratch[worker*c.per:][:c.per]
	rowsT, prod := sc[:attnRows*hd], sc[attnRows*hd:]
	o := c.out[(b*d.Heads+h)*s*s:][:s*s]
	if c.q != nil {
		n := c.c2pHi - c.c2pLo + 1
		emb := c.posKey[c.c2pLo*width+h*hd:]
		for i0 := 0; i0 < s; i0 += attnRows {
			rows := min(attnRows, s-i0)
			c.kern.attnTranspose(rowsT, c.q[(b*s+i0)*d.QStride+h*hd:], d.QStride, rows, hd)
			c.kern.attnScores(prod, rowsT, emb, width, n, hd)
			for r := range rows {
				i := i0 + r
				dst, idx := o[i*s:][:s], c.c2p[i*s:][:s]
				for j, x := range idx {
					dst[j] = prod[(int(x)-c.c2pLo)*attnRows+r] / d.Divisor
				}
			}
		}
	}
	if c.k == nil {
		return
	}
	n := c.p2cHi - c.p2cLo + 1
	emb := c.posQuery[c.p2cLo*width+h*hd:]
	for j0 := 0; j0 < s; j0 += attnRows {
		rows := min(attnRows, s-j0)
		c.kern.attnTranspose(rowsT, c.k[(b*s+j0)*d.KStride+h*hd:], d.KStride, rows, hd)
		c.kern.attnScores(prod, rowsT, emb, width, n, hd)
		for r := range rows {
			j := j0 + r
			for i, x := range c.p2c[j*s:][:s] {
				v := prod[(int(x)-c.p2cLo)*attnRows+r] / d.Divisor
				if c.q != nil {
					v += o[i*s+j]
				}
				o[i*s+j] = v
			}
		}
	}
}

package nn

import (
	"math"

	"github.com/sqc-dev/sqc/internal/expf"
	"github.com/sqc-dev/sqc/runtime/pool"
)

// AttentionDims describe one multi-head attention call on unsplit heads
// (sqc.Attention): Q is [Batch, SeqQ, Heads*HeadDim], K and V are
// [Batch, SeqK, Heads*HeadDim], each with its own row stride in elements
// (at least Heads*HeadDim; a fused QKV projection has Q, K and V at
// offsets 0, H*D and 2*H*D of rows of stride 3*H*D), and so is the output.
// The optional additive mask is broadcast to [Batch, Heads, SeqQ, SeqK]
// with the given strides (0 for a broadcast dimension; keys are always
// contiguous): a [batch, 1, 1, seq] mask has MaskBatchStride = seq and
// zero head and row strides. So is the optional bias of the *Biased
// functions (MPNet's relative position bias, [1, heads, seq, seq]: zero
// batch stride), which is added to the mask first: the scores' addend is
// float32(Bias + Mask).
type AttentionDims struct {
	Batch, SeqQ, SeqK int
	Heads, HeadDim    int
	Scale             float32

	QStride, KStride, VStride, OutStride int

	MaskBatchStride, MaskHeadStride, MaskRowStride int
	BiasBatchStride, BiasHeadStride, BiasRowStride int
}

// attnRows is the query block the kernels work on, one query row per
// lane of a 16-float AVX-512 register: its scores ([SeqK][16] float32,
// 8 KiB at SeqK = 128) and the transposed queries stay in L1.
const attnRows = 16

// attnTaskRows is the query rows one task handles: two blocks, whose
// score kernel (kernels.attnScores2) shares each load of a key element
// between the two blocks' products.
const attnTaskRows = 2 * attnRows

// AttentionScratchLen is the length of the scratch slice Attention needs
// for a pool of the given number of workers (1 without a pool).
func AttentionScratchLen(workers, seqK, headDim int) int {
	return workers * attnScratchPerWorker(seqK, headDim)
}

// attnScratchPerWorker is one task's scratch: for each of its two
// blocks, transposed queries (headDim x 16), scores and the transposed
// mask (seqK x 16 each) and the 16 rows' softmax sums; and the Go P·V
// kernel's accumulators (headDim x 16).
func attnScratchPerWorker(seqK, headDim int) int {
	return attnRows * (3*headDim + 4*seqK + 2)
}

// Attention computes, for every batch b, head h and query row i, in
// float32 and in this order:
//
//	s_j  = float32(dot(Q_i, K_j) * Scale) + Mask[b, h, i, j]   dot: c ascending, from 0
//	m    = s_0, then m = s_j wherever s_j > m                    j ascending
//	e_j  = expf.Exp(s_j - m)
//	sum  = sum_j e_j                                           j ascending, from 0
//	Y_i  = (sum_j e_j * V_j) / sum                             j ascending, terms with e_j = 0 skipped
//
// with every product rounded to float32 before it is added, where the
// head's slices of Q, K, V and Y are columns h*HeadDim .. (h+1)*HeadDim.
// Work is split into tasks of 32 query rows of one head, so no [batch,
// heads, seq, seq] tensor exists: each task holds its rows' scores in its
// worker's part of scratch (AttentionScratchLen). mask may be nil.
//
// Inside a block the queries are transposed so that each of the 16 rows is
// one lane of a vector: every sum above runs down a lane in the order
// given, which is what lets the AVX-512 kernels (asmgen/nn) give the same
// bits as the Go ones.
func Attention(p *pool.Pool, scratch, out, q, k, v, mask []float32, d *AttentionDims) {
	attention(active(), p, scratch, out, q, k, v, mask, nil, d)
}

// AttentionBiased is Attention with a bias added to the mask (see
// AttentionDims): Mask[b, h, i, j] above is float32(Bias[b, h, i, j] +
// Mask[b, h, i, j]), Mask 0 where mask is nil.
func AttentionBiased(p *pool.Pool, scratch, out, q, k, v, mask, bias []float32, d *AttentionDims) {
	attention(active(), p, scratch, out, q, k, v, mask, bias, d)
}

func attention(kern *kernels, p *pool.Pool, scratch, out, q, k, v, mask, bias []float32, d *AttentionDims) {
	if d.SeqQ <= 0 || d.HeadDim <= 0 {
		return
	}
	c := attentionCalls.get()
	c.kern, c.scratch, c.out, c.q, c.k, c.v, c.mask, c.bias, c.d = kern, scratch, out, q, k, v, mask, bias, *d
	c.blocks = (d.SeqQ + attnTaskRows - 1) / attnTaskRows
	c.per = attnScratchPerWorker(d.SeqK, d.HeadDim)
	parallelFor(p, d.Batch*d.Heads*c.blocks, c.task)
	c.scratch, c.out, c.q, c.k, c.v, c.mask, c.bias = nil, nil, nil, nil, nil, nil, nil // keep no caller memory alive
	attentionCalls.put(c)
}

// attentionCall is one Attention call's state (see calls.go).
type attentionCall struct {
	kern                              *kernels
	scratch, out, q, k, v, mask, bias []float32
	d                                 AttentionDims
	blocks, per                       int // tasks per head, scratch per worker
	task                              func(worker, t int)
}

var attentionCalls = newRecycler(func() *attentionCall {
	c := &attentionCall{}
	c.task = c.block
	return c
})

// block is task t: query rows 32*(t%blocks) .. of head t/blocks%Heads
// of sequence t/(Heads*blocks).
func (c *attentionCall) block(worker, t int) {
	d := &c.d
	b, h, blk := t/(d.Heads*c.blocks), t/c.blocks%d.Heads, t%c.blocks
	attentionBlock(c.kern, c.scratch[worker*c.per:(worker+1)*c.per], c.out, c.q, c.k, c.v, c.mask, c.bias, d, b, h, blk*attnTaskRows)
}

// attentionBlock computes query rows i0 .. i0+31 (clipped) of head h of
// sequence b: one 16-row block, or two sharing one pass over the keys.
func attentionBlock(kern *kernels, scratch, out, q, k, v, mask, bias []float32, d *AttentionDims, b, h, i0 int) {
	n := min(attnTaskRows, d.SeqQ-i0)
	hd, sk := d.HeadDim, d.SeqK
	type blockScratch struct {
		qT, sT, maskT []float32
		sums          *[attnRows]float32
	}
	// The sums are in scratch rather than on the stack: passed to a
	// kernel through a function value, a local array would escape to the
	// heap.
	var blk [2]blockScratch
	for i := range blk {
		s := scratch[i*attnRows*(hd+2*sk+1):]
		blk[i] = blockScratch{
			qT:    s[:attnRows*hd],
			sT:    s[attnRows*hd:][:attnRows*sk],
			maskT: s[attnRows*(hd+sk):][:attnRows*sk],
			sums:  (*[attnRows]float32)(s[attnRows*(hd+2*sk):]),
		}
	}
	acc := scratch[2*attnRows*(hd+2*sk+1):][:attnRows*hd]
	nb := 1 // blocks of 16 rows
	if n > attnRows {
		nb = 2
	}

	var kb, vb []float32 // the head's keys and values (none when SeqK = 0)
	if sk > 0 {
		kb, vb = k[b*sk*d.KStride+h*hd:], v[b*sk*d.VStride+h*hd:]
	}
	for i := range nb {
		r := i0 + i*attnRows
		kern.attnTranspose(blk[i].qT, q[(b*d.SeqQ+r)*d.QStride+h*hd:], d.QStride, min(attnRows, d.SeqQ-r), hd)
	}
	if nb == 2 {
		kern.attnScores2(blk[0].sT, blk[1].sT, blk[0].qT, blk[1].qT, kb, d.KStride, sk, hd)
	} else {
		kern.attnScores(blk[0].sT, blk[0].qT, kb, d.KStride, sk, hd)
	}
	for i := range nb {
		r := i0 + i*attnRows
		var m []float32
		transposed := false
		if sk > 0 {
			m, transposed = scoreAddend(kern, blk[i].maskT, mask, bias, d, b, h, r, min(attnRows, d.SeqQ-r))
		}
		kern.attnSoftmax(blk[i].sT, sk, d.Scale, m, transposed, blk[i].sums)
	}
	for i := range nb {
		r := i0 + i*attnRows
		kern.attnPV(out[(b*d.SeqQ+r)*d.OutStride+h*hd:], d.OutStride, min(attnRows, d.SeqQ-r), blk[i].sT, vb, d.VStride, sk, hd, blk[i].sums, acc)
	}
}

// scoreAddend is what the softmax kernels add to the scores of query rows
// r .. r+n-1 (1 <= n <= 16) of head h of sequence b: nil for nothing; the
// mask's row itself when the mask is all there is and is broadcast over
// rows; otherwise the rows transposed into maskT ([key][16], lanes past n
// zero), holding float32(bias + mask) where there is a bias.
func scoreAddend(kern *kernels, maskT, mask, bias []float32, d *AttentionDims, b, h, r, n int) (m []float32, transposed bool) {
	sk := d.SeqK
	mbase := b*d.MaskBatchStride + h*d.MaskHeadStride + r*d.MaskRowStride
	switch {
	case bias == nil && mask == nil:
		return nil, false
	case bias == nil && d.MaskRowStride == 0:
		return mask[mbase : mbase+sk], false
	case bias == nil:
		kern.attnTranspose(maskT, mask[mbase:], d.MaskRowStride, n, sk)
		return maskT, true
	}
	kern.attnTranspose(maskT, bias[b*d.BiasBatchStride+h*d.BiasHeadStride+r*d.BiasRowStride:], d.BiasRowStride, n, sk)
	switch {
	case mask != nil && d.MaskRowStride == 0:
		// One mask row for every query, the padding mask: 0 for the keys
		// kept, whose sum is skipped (adding 0 changes at most the sign
		// of a zero, which no score, maximum or exponential tells apart).
		for j, x := range mask[mbase : mbase+sk] {
			if x == 0 {
				continue
			}
			lanes := maskT[j*attnRows:][:n]
			for i := range lanes {
				lanes[i] = AddSaturating(lanes[i], x)
			}
		}
	case mask != nil:
		for j := range sk {
			lanes := maskT[j*attnRows:][:n]
			for i := range lanes {
				lanes[i] = AddSaturating(lanes[i], mask[mbase+i*d.MaskRowStride+j])
			}
		}
	}
	return maskT, true
}

// AddSaturating is float32(a + b), except that a sum of two finite values
// that overflows is ±math.MaxFloat32 rather than ±Inf: how the attention
// kernels add a bias to the mask. A sliding window written as a bias of
// float32's lowest (passes.SplitSlidingWindowMask) then adds to the
// padding mask's lowest as the exported Where(outside, lowest, mask)
// chooses it, lowest, and a query row that every key is masked from
// (a padded row far from its sequence's tokens) attends to all keys alike
// as the exported graph's does, where -Inf would have left it none.
func AddSaturating(a, b float32) float32 {
	s := a + b
	if math.IsInf(float64(s), 0) && !math.IsInf(float64(a), 0) && !math.IsInf(float64(b), 0) {
		return float32(math.Copysign(math.MaxFloat32, float64(s)))
	}
	return s
}

// The Go kernels of attention. Blocks are 16 lanes wide whatever the
// number of valid rows: lanes past them hold zero queries (and zero mask)
// and give finite scores that are never stored.

// transposeGo is kernels.attnTranspose.
func transposeGo(dst, src []float32, stride, rows, cols int) {
	dst = dst[:attnRows*cols]
	for r := range attnRows {
		if r < rows {
			for c, x := range src[r*stride : r*stride+cols] {
				dst[c*attnRows+r] = x
			}
		} else {
			for c := range cols {
				dst[c*attnRows+r] = 0
			}
		}
	}
}

// scoresGo is kernels.attnScores: lane r of key j is
// sum_c float32(k[j][c] * qT[c][r]), c ascending from 0.
func scoresGo(sT, qT, k []float32, kStride, sk, d int) {
	qT = qT[:attnRows*d]
	for j := range sk {
		var acc [attnRows]float32
		for c, x := range k[j*kStride : j*kStride+d] {
			qc := (*[attnRows]float32)(qT[c*attnRows:])
			for r, y := range qc {
				acc[r] += float32(x * y)
			}
		}
		*(*[attnRows]float32)(sT[j*attnRows:]) = acc
	}
}

// softmaxGo is kernels.attnSoftmax: per lane r,
//
//	x_j = float32(s_j * scale) + mask_j;  top = x_0, then top = x_j wherever x_j > top
//	e_j = expf.Exp(x_j - top);  sum = 0 + e_0 + e_1 + ...
func softmaxGo(sT []float32, sk int, scale float32, mask []float32, maskT bool, sums *[attnRows]float32) {
	var top [attnRows]float32
	for j := range sk {
		s := (*[attnRows]float32)(sT[j*attnRows:])
		var m *[attnRows]float32
		if maskT {
			m = (*[attnRows]float32)(mask[j*attnRows:])
		}
		for r, x := range s {
			x = float32(x * scale)
			if m != nil {
				x += m[r]
			} else if mask != nil {
				x += mask[j]
			}
			s[r] = x
			if j == 0 || x > top[r] {
				top[r] = x
			}
		}
	}
	var sum [attnRows]float32
	for j := range sk {
		s := (*[attnRows]float32)(sT[j*attnRows:])
		for r, x := range s {
			e := expf.Exp(x - top[r])
			s[r] = e
			sum[r] += e
		}
	}
	*sums = sum
}

// scores2Go is kernels.attnScores2: scoresGo on each block.
func scores2Go(sA, sB, qA, qB, k []float32, kStride, sk, d int) {
	scoresGo(sA, qA, k, kStride, sk, d)
	scoresGo(sB, qB, k, kStride, sk, d)
}

// pvGo is kernels.attnPV:
//
//	out[r][c] = (sum_j float32(p[j][r] * v[j][c])) / sums[r]   j ascending, from 0, terms with p = 0 skipped
//
// accumulated row by row in acc (rows x d), so each value row is read
// once per key.
func pvGo(out []float32, outStride, rows int, pT, v []float32, vStride, sk, d int, sums *[attnRows]float32, acc []float32) {
	acc = acc[:rows*d]
	clear(acc)
	for j := range sk {
		vj := v[j*vStride : j*vStride+d]
		pj := (*[attnRows]float32)(pT[j*attnRows:])
		for r, e := range pj[:rows] {
			if e == 0 {
				continue
			}
			a := acc[r*d : (r+1)*d]
			for c, x := range vj {
				a[c] += float32(e * x)
			}
		}
	}
	for r := range rows {
		y := out[r*outStride : r*outStride+d]
		for c, a := range acc[r*d : (r+1)*d] {
			y[c] = a / sums[r]
		}
	}
}

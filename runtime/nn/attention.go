package nn

import "github.com/sqc-dev/sqc/runtime/pool"

// AttentionDims describe one multi-head attention call on unsplit heads
// (sqc.Attention): Q is [Batch, SeqQ, Heads*HeadDim], K and V are
// [Batch, SeqK, Heads*HeadDim], each with its own row stride in elements
// (at least Heads*HeadDim; a fused QKV projection has Q, K and V at
// offsets 0, H*D and 2*H*D of rows of stride 3*H*D), and so is the output.
// The optional additive mask is broadcast to [Batch, Heads, SeqQ, SeqK]
// with the given strides (0 for a broadcast dimension; keys are always
// contiguous): a [batch, 1, 1, seq] mask has MaskBatchStride = seq and
// zero head and row strides.
type AttentionDims struct {
	Batch, SeqQ, SeqK int
	Heads, HeadDim    int
	Scale             float32

	QStride, KStride, VStride, OutStride int

	MaskBatchStride, MaskHeadStride, MaskRowStride int
}

// attnRows is the query block one task handles: its scores (attnRows x
// SeqK float32, 16 KiB at SeqK = 512) and accumulators stay in L1.
const attnRows = 8

// AttentionScratchLen is the length of the scratch slice Attention needs
// for a pool of the given number of workers (1 without a pool).
func AttentionScratchLen(workers, seqK, headDim int) int {
	return workers * attnRows * (seqK + headDim)
}

// Attention computes, for every batch b, head h and query row i, in
// float32 and in this order:
//
//	s_j  = float32(dot(Q_i, K_j) * Scale) + Mask[b, h, i, j]   dot: c ascending, from 0
//	m    = max_j s_j
//	e_j  = Exp(s_j - m)
//	sum  = sum_j e_j                                           j ascending, from 0
//	Y_i  = (sum_j e_j * V_j) / sum                             j ascending, terms with e_j = 0 skipped
//
// where the head's slices of Q, K, V and Y are columns h*HeadDim ..
// (h+1)*HeadDim. Work is split into blocks of 8 query rows of one head, so
// no [batch, heads, seq, seq] tensor exists: each task holds one block of
// scores in its worker's part of scratch (AttentionScratchLen). mask may
// be nil.
func Attention(p *pool.Pool, scratch, out, q, k, v, mask []float32, d *AttentionDims) {
	blocks := (d.SeqQ + attnRows - 1) / attnRows
	per := attnRows * (d.SeqK + d.HeadDim)
	parallelFor(p, d.Batch*d.Heads*blocks, func(worker, t int) {
		b, h, blk := t/(d.Heads*blocks), t/blocks%d.Heads, t%blocks
		attentionBlock(scratch[worker*per:(worker+1)*per], out, q, k, v, mask, d, b, h, blk*attnRows)
	})
}

// attentionBlock computes query rows i0 .. i0+attnRows-1 (clipped) of head
// h of sequence b.
func attentionBlock(scratch, out, q, k, v, mask []float32, d *AttentionDims, b, h, i0 int) {
	n := min(attnRows, d.SeqQ-i0)
	hd, sk := d.HeadDim, d.SeqK
	scores := scratch[:attnRows*sk]
	acc := scratch[attnRows*sk : attnRows*(sk+hd)]
	qRow := func(r int) []float32 { return q[(b*d.SeqQ+i0+r)*d.QStride+h*hd:][:hd] }

	// Scores: one key row against four query rows at a time.
	for j := range sk {
		kj := k[(b*sk+j)*d.KStride+h*hd:][:hd]
		r := 0
		for ; r+4 <= n; r += 4 {
			s0, s1, s2, s3 := dot4(qRow(r), qRow(r+1), qRow(r+2), qRow(r+3), kj)
			scores[r*sk+j], scores[(r+1)*sk+j], scores[(r+2)*sk+j], scores[(r+3)*sk+j] = s0, s1, s2, s3
		}
		for ; r < n; r++ {
			scores[r*sk+j] = dot1(qRow(r), kj)
		}
	}

	// Scale, mask and softmax numerators, row by row.
	var sums [attnRows]float32
	for r := range n {
		s := scores[r*sk : (r+1)*sk]
		var m []float32
		if mask != nil {
			m = mask[b*d.MaskBatchStride+h*d.MaskHeadStride+(i0+r)*d.MaskRowStride:][:sk]
		}
		top := float32(0)
		for j, x := range s {
			x = float32(x * d.Scale)
			if m != nil {
				x += m[j]
			}
			s[j] = x
			if j == 0 || x > top {
				top = x
			}
		}
		var sum float32
		for j, x := range s {
			e := Exp(x - top)
			s[j] = e
			sum += e
		}
		sums[r] = sum
	}

	// Weighted sum of value rows, one value row against four query rows.
	clear(acc[:n*hd])
	for j := range sk {
		vj := v[(b*sk+j)*d.VStride+h*hd:][:hd]
		r := 0
		for ; r+4 <= n; r += 4 {
			axpy4(acc[r*hd:(r+4)*hd], hd, scores[r*sk+j], scores[(r+1)*sk+j], scores[(r+2)*sk+j], scores[(r+3)*sk+j], vj)
		}
		for ; r < n; r++ {
			if e := scores[r*sk+j]; e != 0 {
				a := acc[r*hd : (r+1)*hd]
				for c, x := range vj {
					a[c] += float32(e * x)
				}
			}
		}
	}
	for r := range n {
		y := out[(b*d.SeqQ+i0+r)*d.OutStride+h*hd:][:hd]
		for c, a := range acc[r*hd : (r+1)*hd] {
			y[c] = a / sums[r]
		}
	}
}

// dot1 is sum_c a[c]*b[c] in float32, c ascending from 0.
func dot1(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for c, x := range a {
		s += float32(x * b[c])
	}
	return s
}

// dot4 is dot1 of four rows with one vector, interleaved so the four
// independent sums overlap in the pipeline; each sum keeps dot1's order.
func dot4(a0, a1, a2, a3, b []float32) (s0, s1, s2, s3 float32) {
	n := len(b)
	a0, a1, a2, a3 = a0[:n], a1[:n], a2[:n], a3[:n]
	for c, x := range b {
		s0 += float32(a0[c] * x)
		s1 += float32(a1[c] * x)
		s2 += float32(a2[c] * x)
		s3 += float32(a3[c] * x)
	}
	return
}

// axpy4 adds e_r * v to row r of the four rows of acc (stride hd), skipping
// rows whose weight is 0.
func axpy4(acc []float32, hd int, e0, e1, e2, e3 float32, v []float32) {
	a0, a1, a2, a3 := acc[:hd], acc[hd:2*hd], acc[2*hd:3*hd], acc[3*hd:4*hd]
	v = v[:hd]
	if e0 != 0 && e1 != 0 && e2 != 0 && e3 != 0 {
		for c, x := range v {
			a0[c] += float32(e0 * x)
			a1[c] += float32(e1 * x)
			a2[c] += float32(e2 * x)
			a3[c] += float32(e3 * x)
		}
		return
	}
	for r, e := range [4]float32{e0, e1, e2, e3} {
		if e == 0 {
			continue
		}
		a := acc[r*hd : (r+1)*hd]
		for c, x := range v {
			a[c] += float32(e * x)
		}
	}
}

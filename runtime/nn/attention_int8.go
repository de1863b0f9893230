package nn

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// INT8 attention (sqc.Attention with int8 = 1): Q·K^T and P·V run as u8 x
// s8 GEMMs on the qgemm Engine's kernels (AMX tiles, VNNI, AVX2 or Go),
// with dynamic scales, so the whole computation is integer products plus
// element-wise float32 steps that every ISA computes alike: the outputs
// are bitwise identical on every kernel family, thread count and batch
// layout (padded, packed, or each sequence alone).
//
// For every sequence b and head h:
//
//	K_j   -> u8, its own scale and zero point (QuantizeRowsU8: per key)
//	Q_i   -> s8 symmetric, s_q[i] = max_c |Q_i[c]| / 127 (1 if 0): per query,
//	         q_s8 = QuantizeU8(Q_i[c], 1/s_q[i], 128) - 128
//	V[:,c] -> s8 symmetric over the live keys, s_v[c] = max_j |V_j[c]| / 127: per channel
//	s_ij  = s_k[j]*s_q[i]*(sum_c k_u8[j][c]*q_s8[i][c] - zp_k[j]*sum_c q_s8[i][c])   (qgemm epilogue)
//	e_ij  = the softmax numerators of s_ij*Scale + Mask (attnSoftmax, as in Attention)
//	p_ij  = roundEven(e_ij * 255) as u8  (e <= 1: the row's largest is 255)
//	Y_i[c] = s_v[c] * (1/(255*sum_j e_ij)) * sum_j p_ij*v_s8[j][c]                   (qgemm epilogue)
//
// Scaling P by its row maximum (e's largest is exactly 1) rather than a
// fixed 1/255 keeps the probabilities of flat rows on the grid; with
// per-token Q and K and per-channel V this is why the attention output is
// cleaner than the INT8 Linears' noise before it (passes' quantize.go
// gives the measurement). A key is live unless the mask holds
// -math.MaxFloat32 or less for it in every query row (a padding key), so
// padding never widens V's scales: a padded batch gives each sequence's
// bits alone.

// int8Chunk is the query rows one GEMM P·V call takes (4 blocks of 16 of
// the softmax): 64 rows of A, four AMX A tiles.
const int8Chunk = 64

// int8Layout is the per-worker scratch of AttentionInt8, in 4-byte words
// with every region 64-byte aligned: for seqK keys and head dim hd.
type int8Layout struct {
	kp, kpv, npd                             int // Kp of Q·K^T (hd), of P·V (seqK), Np of P·V (hd)
	kU8, kScale, kZP, qPack, qScale, qColSum int
	vPack, vScale, vInv, vColSum, c32, sT    int
	sums, maskT, rowScale, rowZP, p, live    int
	zeros, qRows, rowHi, zp128               int
	words                                    int
}

func newInt8Layout(seqK, hd int) int8Layout {
	l := int8Layout{kp: qgemm.RoundUp(hd, qgemm.KBlock), kpv: qgemm.RoundUp(max(seqK, 1), qgemm.KBlock), npd: qgemm.RoundUp(hd, qgemm.NBlock)}
	next := 0
	take := func(bytes int) int {
		at := next
		next += qgemm.RoundUp(bytes, 64) / 4
		return at
	}
	l.kU8, l.kScale, l.kZP = take(seqK*l.kp), take(4*seqK), take(4*seqK)
	l.qPack, l.qScale, l.qColSum = take(int8Chunk*l.kp), take(4*int8Chunk), take(4*int8Chunk)
	l.vPack, l.vScale, l.vInv, l.vColSum = take(l.kpv*l.npd), take(4*l.npd), take(4*l.npd), take(4*l.npd)
	l.c32 = take(4 * max(seqK*int8Chunk, int8Chunk*l.npd))
	l.sT, l.sums, l.maskT = take(4*seqK*attnRows), take(4*attnRows), take(4*seqK*attnRows)
	l.rowScale, l.rowZP, l.p, l.live = take(4*int8Chunk), take(4*int8Chunk), take(int8Chunk*l.kpv), take(seqK)
	l.zeros, l.qRows, l.rowHi, l.zp128 = take(4*l.npd), take(int8Chunk*l.kp), take(4*int8Chunk), take(4*int8Chunk)
	l.words = next
	return l
}

// AttentionInt8ScratchLen is the length of the scratch slice AttentionInt8
// and AttentionInt8Packed need for a pool of the given number of workers
// (1 without a pool), seqK keys at most (the longest sequence) and head
// dimension headDim.
func AttentionInt8ScratchLen(workers, seqK, headDim int) int {
	return workers * newInt8Layout(seqK, headDim).words
}

// int8Worker is one worker's view of its scratch.
type int8Worker struct {
	kU8, qPack, p      []uint8
	qRows              []uint8 // a chunk's query rows as u8 codes (zero point 128), kp apart
	kScale, qScale     []float32
	vScale, vInv, sT   []float32
	maskT              []float32
	zeros              []float32 // a value row of zeros, for the keys past the last
	rowScale           []float32
	rowHi              []float32 // the query rows' maxima (packQueries)
	sums               *[attnRows]float32
	kZP, qColSum       []int32
	vColSum, c32       []int32
	rowZP              []int32
	zp128              []int32 // 128, the query rows' zero point, once per row for quantizeRows
	vPack              []int8
	live               []bool
	kp, kpv, npd, keys int
	// The GEMM operands, here rather than as locals: passed by pointer
	// to the qgemm Engine they would escape, one allocation each per head.
	qB, vB   qgemm.PackedB
	ep1, ep2 qgemm.Epilogue
	s32      s32Scores
	vRows    [4][]float32 // the value rows packValues4 interleaves
}

// scratchView is n values of type T in the scratch s from word at (the
// region int8Layout gave them), the same memory seen as T.
func scratchView[T any](s []float32, at, n int) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	w := s[at : at+(n*size+3)/4]
	return unsafe.Slice((*T)(unsafe.Pointer(&w[0])), n)
}

// carveFor carves w for seqK keys unless it already is: by an earlier head
// of this call on this worker (the same scratch s and layout l; release
// clears the workers between calls), for as many keys. Every field a head
// reads is either the carved view or set by the head before it reads it,
// so a head finds w as a fresh carve would leave it. Carving took 3-4% of
// a 32-token head.
func (w *int8Worker) carveFor(s []float32, l int8Layout, seqK int) {
	if w.kU8 != nil && w.keys == seqK {
		return
	}
	w.carve(s, l, seqK)
}

// carve sets w to a view of a worker's scratch s, laid out by l for at
// least seqK keys, for a head of seqK keys: P·V's K is padded for seqK
// itself.
func (w *int8Worker) carve(s []float32, l int8Layout, seqK int) {
	kpv := qgemm.RoundUp(max(seqK, 1), qgemm.KBlock)
	*w = int8Worker{
		kU8: scratchView[uint8](s, l.kU8, seqK*l.kp), kScale: scratchView[float32](s, l.kScale, seqK), kZP: scratchView[int32](s, l.kZP, seqK),
		qPack: scratchView[uint8](s, l.qPack, int8Chunk*l.kp), qScale: scratchView[float32](s, l.qScale, int8Chunk), qColSum: scratchView[int32](s, l.qColSum, int8Chunk),
		vPack: scratchView[int8](s, l.vPack, kpv*l.npd), vScale: scratchView[float32](s, l.vScale, l.npd), vInv: scratchView[float32](s, l.vInv, l.npd), vColSum: scratchView[int32](s, l.vColSum, l.npd),
		c32: scratchView[int32](s, l.c32, max(seqK*int8Chunk, int8Chunk*l.npd)),
		sT:  scratchView[float32](s, l.sT, seqK*attnRows), sums: (*[attnRows]float32)(s[l.sums:]), maskT: scratchView[float32](s, l.maskT, seqK*attnRows), zeros: scratchView[float32](s, l.zeros, l.npd),
		rowScale: scratchView[float32](s, l.rowScale, int8Chunk), rowHi: scratchView[float32](s, l.rowHi, int8Chunk), rowZP: scratchView[int32](s, l.rowZP, int8Chunk),
		p: scratchView[uint8](s, l.p, int8Chunk*kpv), qRows: scratchView[uint8](s, l.qRows, int8Chunk*l.kp), live: scratchView[bool](s, l.live, seqK),
		zp128: scratchView[int32](s, l.zp128, int8Chunk), kp: l.kp, kpv: kpv, npd: l.npd, keys: seqK,
	}
}

// AttentionInt8 computes what Attention computes, with Q·K^T and P·V as
// INT8 GEMMs on e's kernels (see the comment at the top of this file for
// the exact arithmetic). Work is split into one task per (sequence, head);
// scratch must hold AttentionInt8ScratchLen(workers, d.SeqK, d.HeadDim)
// values. p must be e's pool or nil.
func AttentionInt8(p *pool.Pool, e *qgemm.Engine, scratch, out, q, k, v, mask []float32, d *AttentionDims) {
	attentionInt8(active(), p, e, scratch, attnOut{f32: out}, q, k, v, mask, nil, d, nil)
}

// AttentionInt8Biased is AttentionInt8 with a bias added to the mask, as
// AttentionBiased is Attention's; a key is live where float32(bias + mask)
// is above -math.MaxFloat32 in some row.
func AttentionInt8Biased(p *pool.Pool, e *qgemm.Engine, scratch, out, q, k, v, mask, bias []float32, d *AttentionDims) {
	attentionInt8(active(), p, e, scratch, attnOut{f32: out}, q, k, v, mask, bias, d, nil)
}

// AttentionInt8Packed is AttentionInt8 on a packed batch, as
// AttentionPacked is Attention's: sequence b is rows offsets[b] ..
// offsets[b+1]-1 of q, k, v and out and attends to its own keys only. The
// bits of each sequence are those of AttentionInt8 on it alone. scratch
// must hold AttentionInt8ScratchLen(workers, longest sequence, d.HeadDim).
func AttentionInt8Packed(p *pool.Pool, e *qgemm.Engine, scratch, out, q, k, v []float32, d *AttentionDims, offsets []int) {
	attentionInt8(active(), p, e, scratch, attnOut{f32: out}, q, k, v, nil, nil, d, offsets)
}

// AttentionInt8PackedBiased is AttentionInt8Packed adding a bias to each
// sequence's scores as AttentionPackedBiased does: its bits for a
// sequence are AttentionInt8Biased's for it alone where its corner of the
// bias is its own bias.
func AttentionInt8PackedBiased(p *pool.Pool, e *qgemm.Engine, scratch, out, q, k, v, bias []float32, d *AttentionDims, offsets []int) {
	attentionInt8(active(), p, e, scratch, attnOut{f32: out}, q, k, v, nil, bias, d, offsets)
}

// AttentionInt8U8 is AttentionInt8 writing the u8 codes of its output,
// QuantizeU8's with invScale and zeroPoint, straight from the P·V
// epilogue: the same bytes as AttentionInt8 followed by QuantizeU8, with
// no float32 output written or read. Rows of out are d.OutStride bytes
// apart; the bytes of a row past its Heads*HeadDim codes are set to
// QuantizeU8's padding (zeroPoint clamped to [0, 255]).
func AttentionInt8U8(p *pool.Pool, e *qgemm.Engine, scratch []float32, out []uint8, q, k, v, mask []float32, d *AttentionDims, invScale float32, zeroPoint int32) {
	attentionInt8(active(), p, e, scratch, attnOut{u8: out, invScale: invScale, zeroPoint: zeroPoint}, q, k, v, mask, nil, d, nil)
}

// AttentionInt8U8Biased is AttentionInt8U8 with a bias, as
// AttentionInt8Biased is AttentionInt8's.
func AttentionInt8U8Biased(p *pool.Pool, e *qgemm.Engine, scratch []float32, out []uint8, q, k, v, mask, bias []float32, d *AttentionDims, invScale float32, zeroPoint int32) {
	attentionInt8(active(), p, e, scratch, attnOut{u8: out, invScale: invScale, zeroPoint: zeroPoint}, q, k, v, mask, bias, d, nil)
}

// AttentionInt8U8Packed is AttentionInt8Packed writing u8 codes as
// AttentionInt8U8 does.
func AttentionInt8U8Packed(p *pool.Pool, e *qgemm.Engine, scratch []float32, out []uint8, q, k, v []float32, d *AttentionDims, offsets []int, invScale float32, zeroPoint int32) {
	attentionInt8(active(), p, e, scratch, attnOut{u8: out, invScale: invScale, zeroPoint: zeroPoint}, q, k, v, nil, nil, d, offsets)
}

// AttentionInt8U8PackedBiased is AttentionInt8U8Packed adding a bias as
// AttentionInt8PackedBiased does.
func AttentionInt8U8PackedBiased(p *pool.Pool, e *qgemm.Engine, scratch []float32, out []uint8, q, k, v, bias []float32, d *AttentionDims, offsets []int, invScale float32, zeroPoint int32) {
	attentionInt8(active(), p, e, scratch, attnOut{u8: out, invScale: invScale, zeroPoint: zeroPoint}, q, k, v, nil, bias, d, offsets)
}

// attnOut is where INT8 attention writes: float32 values (f32), or their
// u8 codes (u8, quantised with invScale and zeroPoint).
type attnOut struct {
	f32       []float32
	u8        []uint8
	invScale  float32
	zeroPoint int32
}

// from is o from element off on.
func (o attnOut) from(off int) attnOut {
	if o.u8 != nil {
		o.u8 = o.u8[off:]
	} else {
		o.f32 = o.f32[off:]
	}
	return o
}

// set sets n elements from off to v (quantised for u8).
func (o attnOut) set(off, n int, v float32) {
	if o.u8 != nil {
		fill(o.u8[off:off+n], qgemm.QuantizeU8(v, o.invScale, o.zeroPoint))
	} else {
		fill(o.f32[off:off+n], v)
	}
}

// epilogue points ep's output at element off, rows stride apart.
func (o attnOut) epilogue(ep *qgemm.Epilogue, off, stride int) {
	ep.OutStride = stride
	if o.u8 != nil {
		ep.OutU8, ep.OutInvScale, ep.OutZeroPoint = o.u8[off:], o.invScale, o.zeroPoint
	} else {
		ep.OutF32 = o.f32[off:]
	}
}

// padRows sets the bytes past width of rows rows of a u8 output to
// QuantizeU8's padding; a float32 output has none.
func (o attnOut) padRows(rows, width, stride int) {
	if o.u8 == nil || stride <= width {
		return
	}
	pad := uint8(min(max(o.zeroPoint, 0), 255))
	for i := range rows {
		fill(o.u8[i*stride+width:(i+1)*stride], pad)
	}
}

// attentionInt8 is AttentionInt8 (offsets nil) or AttentionInt8Packed
// with the nn kernels kern, into out.
func attentionInt8(kern *kernels, p *pool.Pool, e *qgemm.Engine, scratch []float32, out attnOut, q, k, v, mask, bias []float32, d *AttentionDims, offsets []int) {
	if d.HeadDim <= 0 {
		return
	}
	tasks, longest, rows := d.Batch*d.Heads, d.SeqK, d.Batch*d.SeqQ
	if offsets != nil {
		n := max(len(offsets)-1, 0)
		tasks, longest, rows = n*d.Heads, 0, 0
		for b := range n {
			longest = max(longest, offsets[b+1]-offsets[b])
		}
		if n > 0 {
			rows = offsets[n]
		}
	} else if d.SeqQ <= 0 {
		return
	}
	c := int8Calls.get()
	c.kern, c.e, c.scratch, c.out, c.q, c.k, c.v, c.mask, c.bias, c.d = kern, e, scratch, out, q, k, v, mask, bias, *d
	c.offsets, c.lay = offsets, newInt8Layout(longest, d.HeadDim)
	c.workers = growStats(c.workers, workers(p))
	parallelFor(p, tasks, c.task)
	c.release()
	out.padRows(rows, d.Heads*d.HeadDim, d.OutStride)
}

// int8Call is one AttentionInt8 (or AttentionInt8Packed) call's state.
type int8Call struct {
	kern                         *kernels
	e                            *qgemm.Engine
	scratch, q, k, v, mask, bias []float32
	out                          attnOut
	d                            AttentionDims
	offsets                      []int
	lay                          int8Layout
	workers                      []int8Worker // indexed by worker id, reused across calls
	task                         func(worker, t int)
}

var int8Calls = newRecycler(func() *int8Call {
	c := &int8Call{}
	c.task = c.head
	return c
})

func (c *int8Call) release() {
	c.e, c.scratch, c.out, c.q, c.k, c.v, c.mask, c.bias, c.offsets = nil, nil, attnOut{}, nil, nil, nil, nil, nil, nil
	for i := range c.workers {
		c.workers[i] = int8Worker{} // keep no scratch or caller memory alive
	}
	int8Calls.put(c)
}

// head is task t: head t%Heads of sequence t/Heads.
func (c *int8Call) head(worker, t int) {
	d := c.d
	b, h := t/d.Heads, t%d.Heads
	s := c.scratch[worker*c.lay.words : (worker+1)*c.lay.words]
	w := &c.workers[worker]
	if c.offsets == nil {
		w.carveFor(s, c.lay, d.SeqK)
		attnInt8Head(c.kern, c.e, w, c.out, c.q, c.k, c.v, c.mask, c.bias, &d, b, h)
		return
	}
	off, l := c.offsets[b], c.offsets[b+1]-c.offsets[b]
	if l == 0 {
		return
	}
	d.Batch, d.SeqQ, d.SeqK = 1, l, l
	w.carveFor(s, c.lay, l)
	attnInt8Head(c.kern, c.e, w, c.out.from(off*d.OutStride), c.q[off*d.QStride:], c.k[off*d.KStride:], c.v[off*d.VStride:], nil, sequenceBias(c.bias, &d, b), &d, 0, h)
}

// attnInt8Head computes every query row of head h of sequence b.
func attnInt8Head(kern *kernels, e *qgemm.Engine, w *int8Worker, out attnOut, q, k, v, mask, bias []float32, d *AttentionDims, b, h int) {
	hd, sk := d.HeadDim, d.SeqK
	if sk == 0 {
		// No keys: as Attention, every output is 0/0.
		for i := range d.SeqQ {
			out.set((b*d.SeqQ+i)*d.OutStride+h*hd, hd, float32(math.NaN()))
		}
		return
	}
	kb, vb := k[b*sk*d.KStride+h*hd:], v[b*sk*d.VStride+h*hd:]
	quantizeRowsU8(kern, w.kU8, w.kp, kb, d.KStride, sk, hd, w.kScale, w.kZP)
	live := liveKeys(w.live, mask, bias, d, b, h)
	packValues(kern, w, vb, d.VStride, hd, live)

	for r0 := 0; r0 < d.SeqQ; r0 += int8Chunk {
		rows := min(int8Chunk, d.SeqQ-r0)
		packQueries(kern, w, q[(b*d.SeqQ+r0)*d.QStride+h*hd:], d.QStride, rows, hd)
		// S^T = K·Q^T for the chunk's queries at once (keys x queries, s32),
		// then per block of 16 queries the epilogue into the softmax's
		// [key][16] layout.
		np := qgemm.RoundUp(rows, qgemm.NBlock)
		w.qB = qgemm.PackedB{K: hd, N: rows, Kp: w.kp, Np: np, Data: w.qPackS8()[:np*w.kp], ColSum: w.qColSum[:np]}
		mustGEMM(e.KernelSerial(w.c32, w.kU8, sk, w.kp, &w.qB))
		for blk := 0; blk*attnRows < rows; blk++ {
			n := min(attnRows, rows-blk*attnRows)
			r := r0 + blk*attnRows
			m, transposed := scoreAddend(kern, w.maskT, mask, bias, d, b, h, r, n)
			if kern.attnSoftmaxS32 != nil {
				// The block's lanes of no query (n < 16) have column sum 0
				// and scale 1 (packQueries): defined, never stored.
				w.s32 = s32Scores{
					c: w.c32[blk*attnRows:], ldc: np,
					colSum: w.qColSum[blk*attnRows:][:attnRows], colScale: w.qScale[blk*attnRows:][:attnRows],
					rowZP: w.kZP, rowScale: w.kScale,
				}
				kern.attnSoftmaxS32(w.sT, sk, d.Scale, m, transposed, w.sums, &w.s32)
			} else {
				w.ep1 = qgemm.Epilogue{
					ColSum: w.qColSum[blk*attnRows:][:n], Scale: w.qScale[blk*attnRows:][:n],
					RowScale: w.kScale, RowZeroPoint: w.kZP,
					OutF32: w.sT, OutStride: attnRows,
				}
				mustGEMM(e.EpilogueSerial(&w.ep1, w.c32[blk*attnRows:], np, sk, n))
				if n < attnRows { // lanes of no query: defined, never stored
					for j := range sk {
						clear(w.sT[j*attnRows+n : (j+1)*attnRows])
					}
				}
				kern.attnSoftmax(w.sT, sk, d.Scale, m, transposed, w.sums)
			}
			quantizeProbs(kern, w, blk*attnRows, n, sk)
		}
		w.ep2 = qgemm.Epilogue{
			ColSum: w.vB.ColSum, Scale: w.vScale,
			RowScale: w.rowScale[:rows], RowZeroPoint: w.rowZP[:rows],
		}
		out.epilogue(&w.ep2, (b*d.SeqQ+r0)*d.OutStride+h*hd, d.OutStride)
		mustGEMM(e.GEMMSerial(w.c32, w.p, rows, w.kpv, &w.vB, &w.ep2))
	}
}

// s32Scores are the operands of kernels.attnSoftmaxS32: a 16-query block
// of S^T = K·Q^T as s32 (key j's lanes at c[j*ldc:]) and what dequantises
// it, as the S^T epilogue (qgemm.Epilogue's ColSum, Scale, RowZeroPoint
// and RowScale) would: per query lane colSum and colScale, per key rowZP
// and rowScale.
type s32Scores struct {
	c                  []int32
	ldc                int
	colSum, rowZP      []int32
	colScale, rowScale []float32
}

// softmaxS32Go is kernels.attnSoftmaxS32 in Go, the reference of its
// assembly: the scores dequantised into sT with the float32 operations of
// qgemm's epilogue in its order, then softmaxGo.
func softmaxS32Go(sT []float32, sk int, scale float32, mask []float32, maskT bool, sums *[attnRows]float32, in *s32Scores) {
	for j := range sk {
		zp, rs := in.rowZP[j], in.rowScale[j]
		for r, acc := range in.c[j*in.ldc : j*in.ldc+attnRows] {
			acc -= zp * in.colSum[r]
			v := float32(float32(acc) * in.colScale[r])
			sT[j*attnRows+r] = float32(v * rs)
		}
	}
	softmaxGo(sT, sk, scale, mask, maskT, sums)
}

// mustGEMM panics on a qgemm serial call's error: the buffers are this file's own,
// sized by int8Layout, so an error is a bug here, not bad input.
func mustGEMM(err error) {
	if err != nil {
		panic(fmt.Sprintf("nn: INT8 attention: %v", err))
	}
}

func (w *int8Worker) qPackS8() []int8 {
	return unsafe.Slice((*int8)(unsafe.Pointer(&w.qPack[0])), len(w.qPack))
}

// liveKeys returns how many keys of head h of sequence b some query row
// can attend to, and marks them in live: all without a mask or bias (live
// is then left as it is: packValues reads it only when some keys are not
// live); with them, those whose float32(bias + mask) is above
// -math.MaxFloat32 in at least one row.
func liveKeys(live []bool, mask, bias []float32, d *AttentionDims, b, h int) int {
	if mask == nil && bias == nil {
		return len(live)
	}
	rows := d.SeqQ
	if (mask == nil || d.MaskRowStride == 0) && (bias == nil || d.BiasRowStride == 0) {
		rows = 1
	}
	mbase, bbase := b*d.MaskBatchStride+h*d.MaskHeadStride, b*d.BiasBatchStride+h*d.BiasHeadStride
	n := 0
	for j := range live {
		live[j] = false
		for i := range rows {
			var x float32
			if bias != nil {
				x = bias[bbase+i*d.BiasRowStride+j]
			}
			if mask != nil {
				x += mask[mbase+i*d.MaskRowStride+j]
			}
			if x > -math.MaxFloat32 {
				live[j] = true
				n++
				break
			}
		}
	}
	return n
}

// symScale is the symmetric s8 scale of values whose largest magnitude
// is absMax: absMax/127, or 1 when it is 0 (all zeros quantise to 0).
func symScale(absMax float32) float32 {
	if absMax == 0 {
		return 1
	}
	return absMax / 127
}

// symScalesGo is kernels.symScales: scale[c] = symScale(m[c]), then
// inv[c] = 1/scale[c] (m may be inv).
func symScalesGo(m, scale, inv []float32) {
	scale, inv = scale[:len(m)], inv[:len(m)]
	for c, x := range m {
		scale[c] = symScale(x)
		inv[c] = 1 / scale[c]
	}
}

// quantS8 is roundEven(x*inv) clamped to [-127, 127], NaN giving -127 as
// the assembly's MAXPS clamp does (packValues4AVX2Asm). Once clamped,
// adding and subtracting 1.5*2^23 rounds to the nearest integer, ties to
// even, exactly (the sum's ulp is 1), without math.RoundToEven's software
// path on GOAMD64=v1.
func quantS8(x, inv float32) int8 {
	const roundMagic = 12582912 // 1.5 * 2^23
	f := float32(x * inv)       // rounded: the add below must not fuse into an FMA
	switch {
	case f > 127:
		return 127
	case f >= -127:
		f += roundMagic
		f -= roundMagic
		return int8(f)
	}
	return -127 // below, or NaN
}

// packQueries quantises rows (<= int8Chunk) query rows (row stride
// stride, hd values) to s8 per row and packs them as the qgemm B operand
// of Q·K^T: query i is column i%16 of N-block i/16, K = the head
// dimension. The vectorised u8 quantiser does the rounding, every row in
// one call, with zero point 128: q_s8 = QuantizeU8(x, 1/s_q, 128) - 128,
// which is roundEven(x/s_q) for every finite x (|x/s_q| <= 127) and 0 for
// NaN. packQueries16 then transposes each 16 rows' codes into a strip.
func packQueries(kern *kernels, w *int8Worker, q []float32, stride, rows, hd int) {
	// Every row's extremes first, in one kernel call: the minima in
	// qScale, the maxima in rowHi.
	kern.minMaxRows(q, stride, rows, hd, w.qScale, w.rowHi)
	for i := range rows {
		w.qScale[i] = symScale(max(-w.qScale[i], w.rowHi[i]))
		w.zp128[i] = 128
	}
	quantizeRowsPadded(kern, w.qRows, w.kp, q, stride, rows, hd, w.qScale, w.zp128) // K padding: 128, the code of 0
	words := unsafe.Slice((*uint32)(unsafe.Pointer(&w.qPack[0])), len(w.qPack)/4)
	strip := w.kp / 4 * qgemm.NBlock
	for r0 := 0; r0 < rows; r0 += qgemm.NBlock {
		kern.packQueries16(words[r0/qgemm.NBlock*strip:][:strip], w.qRows[r0*w.kp:], w.kp, min(qgemm.NBlock, rows-r0), w.qColSum[r0:r0+qgemm.NBlock])
	}
	// Columns of no query in the last N-block (zero words and sums from
	// packQueries16) get scale 1, so the block is defined; the epilogue
	// stores only the real ones.
	for i := rows; i < qgemm.RoundUp(rows, qgemm.NBlock); i++ {
		w.qScale[i] = 1
	}
}

// packQueries16Go is kernels.packQueries16: rows (1..16) rows of kp u8
// codes (row r at codes[r*kp:], zero point 128) become the 16-column strip
// words of the qgemm B layout, words[g*16+r] = the little-endian word of
// row r's bytes 4g..4g+3, each flipped from u8 to s8 by xor 0x80, and
// colSum[r] = the sum of row r's s8 codes; columns rows..15 get zero words
// and sums.
func packQueries16Go(words []uint32, codes []uint8, kp, rows int, colSum []int32) {
	groups := kp / 4
	words, colSum = words[:groups*qgemm.NBlock], colSum[:qgemm.NBlock]
	for r := range qgemm.NBlock {
		if r >= rows {
			for g := range groups {
				words[g*qgemm.NBlock+r] = 0
			}
			colSum[r] = 0
			continue
		}
		row := codes[r*kp : (r+1)*kp]
		var sum uint32 // of the u8 codes: at most 255 * kp
		for g := range groups {
			word := binary.LittleEndian.Uint32(row[4*g:])
			words[g*qgemm.NBlock+r] = word ^ 0x80808080
			sum += word&0xff + word>>8&0xff + word>>16&0xff + word>>24
		}
		colSum[r] = int32(sum) - 128*int32(kp)
	}
}

// abs32 is |x| (NaN stays NaN).
func abs32(x float32) float32 {
	return math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
}

// packValues quantises the head's values (w.keys rows of hd, row stride
// stride) to s8 per channel over the live keys and packs them as the qgemm
// B operand of P·V (K = keys padded to kpv with zero rows, N = hd) in
// w.vB: keys 4g..4g+3 of channel c are one 32-bit word, written at once.
func packValues(kern *kernels, w *int8Worker, v []float32, stride, hd, live int) {
	sk := w.keys
	m := w.vInv[:hd] // the channel maxima first, then their inverses' scales
	clear(m)
	if live == sk || live == 0 { // every key, as when none is live
		kern.absMaxCols(m, v, stride, sk, hd)
	} else {
		for j := 0; j < sk; {
			if !w.live[j] {
				j++
				continue
			}
			run := 1 // live keys from j on
			for j+run < sk && w.live[j+run] {
				run++
			}
			kern.absMaxCols(m, v[j*stride:], stride, run, hd)
			j += run
		}
	}
	kern.symScales(m, w.vScale[:hd], w.vInv[:hd]) // m is w.vInv: read before written, lane by lane
	for c := hd; c < w.npd; c++ {
		w.vScale[c], w.vInv[c] = 1, 1
	}
	clear(w.vColSum)
	words := unsafe.Slice((*uint32)(unsafe.Pointer(&w.vPack[0])), len(w.vPack)/4)
	groups := w.kpv / 4
	stripWords := groups * qgemm.NBlock
	full := 0 // whole groups of four keys packed by packValueGroups
	if kern.packValueGroups != nil {
		full = sk / 4
		if full > 0 {
			kern.packValueGroups(words, stripWords, v, stride, full, w.vInv[:hd], w.vColSum[:hd], hd)
		}
	}
	// It writes every word of its groups; the rest start from zero (the
	// K padding, and the channels past hd of the last group).
	for s := 0; s < len(words); s += stripWords {
		clear(words[s+full*qgemm.NBlock : s+stripWords])
	}
	clear(w.zeros)
	rows := &w.vRows // not a local: passed to a kernel, it would escape
	for g := full; g < (sk+3)/4; g++ {
		for t := range rows {
			if j := 4*g + t; j < sk {
				rows[t] = v[j*stride : j*stride+hd]
			} else {
				rows[t] = w.zeros[:hd]
			}
		}
		kern.packValues4(words[g*qgemm.NBlock:], groups*qgemm.NBlock, rows, w.vInv[:hd], w.vColSum[:hd], 0, hd)
	}
	w.vB = qgemm.PackedB{K: sk, N: hd, Kp: w.kpv, Np: w.npd, Data: w.vPack, ColSum: w.vColSum}
}

// quantizeProbs turns the softmax numerators of a 16-row block (w.sT,
// lanes = rows, n of them real) into rows row0 .. row0+15 of the u8 P
// operand (attnProbs; rows past n are P rows of no query, never read), and
// the real rows' P·V row scales 1/(255*sum).
func quantizeProbs(kern *kernels, w *int8Worker, row0, n, sk int) {
	kern.attnProbs(w.p[row0*w.kpv:], w.kpv, w.sT, sk)
	for r := range n {
		w.rowScale[row0+r] = 1 / (255 * w.sums[r])
		w.rowZP[row0+r] = 0
	}
}

// probsGo is kernels.attnProbs: p[r*kpv+j] = qgemm.QuantizeU8(sT[j*16+r],
// 255, 0) for r < 16, j < sk.
func probsGo(p []uint8, kpv int, sT []float32, sk int) { probsGoFrom(p, kpv, sT, 0, sk) }

// probsGoFrom is probsGo for keys j0 <= j < sk: 8 keys at a time quantised
// in their own layout and transposed 8 x 8 bytes at a time, the rest one by
// one.
func probsGoFrom(p []uint8, kpv int, sT []float32, j0, sk int) {
	var blk [8 * attnRows]uint8
	j := j0
	for ; j+8 <= sk; j += 8 {
		quantizeGo(blk[:], attnRows, sT[j*attnRows:], attnRows, 8, attnRows, 255, 0)
		for lane := 0; lane < attnRows; lane += 8 {
			var m [8]uint64
			for k := range m {
				m[k] = binary.LittleEndian.Uint64(blk[k*attnRows+lane:])
			}
			transpose8x8(&m)
			for r := range m {
				binary.LittleEndian.PutUint64(p[(lane+r)*kpv+j:], m[r])
			}
		}
	}
	for ; j < sk; j++ {
		for r := range attnRows {
			p[r*kpv+j] = qgemm.QuantizeU8(sT[j*attnRows+r], 255, 0)
		}
	}
}

// transpose8x8 transposes the 8 x 8 bytes m (byte c of m[r] is element (r,
// c)) in place: three rounds of swapping the off-diagonal blocks of 4, 2
// and 1 bytes between rows that far apart.
func transpose8x8(m *[8]uint64) {
	for _, s := range [...]struct {
		shift, step int
		mask        uint64
	}{{32, 4, 0x00000000ffffffff}, {16, 2, 0x0000ffff0000ffff}, {8, 1, 0x00ff00ff00ff00ff}} {
		for i := range 8 {
			if i&s.step != 0 {
				continue
			}
			t := (m[i]>>s.shift ^ m[i+s.step]) & s.mask
			m[i] ^= t << s.shift
			m[i+s.step] ^= t
		}
	}
}

// packValues4Go is kernels.packValues4: for channels c0 <= c < hd of the
// four value rows, x_t = quantS8(rows[t][c], inv[c]), colSum[c] += x_0 +
// x_1 + x_2 + x_3, and the word of bytes x_0..x_3 goes to words[(c/16)*
// stripWords + c%16].
// packValueGroupsGo is kernels.packValueGroups in Go, the reference of its
// assembly: packValues4Go group by group, each group's words of every
// strip cleared first.
func packValueGroupsGo(words []uint32, stripWords int, v []float32, vStride, groups int, inv []float32, colSum []int32, hd int) {
	var rows [4][]float32
	for g := range groups {
		for t := range rows {
			rows[t] = v[(4*g+t)*vStride:][:hd]
		}
		for s := range (hd + qgemm.NBlock - 1) / qgemm.NBlock {
			clear(words[s*stripWords+g*qgemm.NBlock:][:qgemm.NBlock])
		}
		packValues4Go(words[g*qgemm.NBlock:], stripWords, &rows, inv, colSum, 0, hd)
	}
}

func packValues4Go(words []uint32, stripWords int, rows *[4][]float32, inv []float32, colSum []int32, c0, hd int) {
	r0, r1, r2, r3 := rows[0][:hd], rows[1][:hd], rows[2][:hd], rows[3][:hd]
	inv, colSum = inv[:hd], colSum[:hd]
	for c := c0; c < hd; c++ {
		x0, x1, x2, x3 := quantS8(r0[c], inv[c]), quantS8(r1[c], inv[c]), quantS8(r2[c], inv[c]), quantS8(r3[c], inv[c])
		colSum[c] += int32(x0) + int32(x1) + int32(x2) + int32(x3)
		words[(c/qgemm.NBlock)*stripWords+c%qgemm.NBlock] =
			uint32(uint8(x0)) | uint32(uint8(x1))<<8 | uint32(uint8(x2))<<16 | uint32(uint8(x3))<<24
	}
}

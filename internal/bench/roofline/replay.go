package roofline

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Operations counted per element by the non-GEMM kernels (multiply-adds
// count 2). They are the arithmetic the kernels' documented formulas do,
// not instruction counts.
const (
	opsLayerNorm   = 8 // sum; subtract, square, sum; subtract, scale, gamma, beta
	opsQuantize    = 3 // scale, round, add zero point (clamps not counted)
	opsQuantizeRow = 5 // min, max, then scale, round, add zero point
	opsSoftmax     = 5 // per score: scale, mask add, max, exp, normalise
	opsAdd         = 1
	opsMask        = 2
)

// Kinds of ops, for grouping and colours.
const (
	KindGEMM      = "GEMM"
	KindAttention = "Attention"
	KindLayerNorm = "LayerNorm"
	KindQuantize  = "Quantize"
	KindLinearF32 = "LinearF32"
	KindElemwise  = "Elementwise"
	KindGather    = "Gather"
)

// replay is one step made runnable on its own.
type replay struct {
	kind, label string
	ops, bytes  float64 // per call
	run         func() error
}

// replayer builds replays of a Program's steps for one shape.
type replayer struct {
	prog    *exec.Program
	sh      shapes
	pool    *pool.Pool
	rng     *rand.Rand
	workers int
}

func (r *replayer) f32(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.rng.NormFloat64())
	}
	return s
}

func (r *replayer) u8(n int) []uint8 {
	s := make([]uint8, n)
	for i := range s {
		s[i] = uint8(r.rng.Uint32())
	}
	return s
}

// build returns the replay of step s, or an error saying why it has none
// (generic OpSteps, or a shape that does not resolve).
func (r *replayer) build(s exec.Step) (*replay, error) {
	unresolved := fmt.Errorf("%s: shape does not resolve", s.Call())
	switch s := s.(type) {
	case *exec.GEMMStep:
		m, kp, ok := r.sh.rows(s.A)
		if !ok || kp != s.B.Kp {
			return nil, unresolved
		}
		b := s.B
		a := r.u8(m * kp)
		ep := qgemm.Epilogue{AZeroPoint: s.AZeroPoint, ColSum: b.ColSum, Scale: s.Scale, Bias: s.Bias, Act: s.Act}
		label := fmt.Sprintf("GEMM %dx%d", b.K, b.N)
		bytes := float64(m*kp + b.Kp*b.Np + 4*b.N)
		if s.Bias != nil {
			bytes += float64(4 * b.N)
		}
		if s.RowScale != exec.NoSlot {
			ep.RowScale = make([]float32, m)
			ep.RowZeroPoint = make([]int32, m)
			for i := range m {
				ep.RowScale[i], ep.RowZeroPoint[i] = 1.0/64, 128
			}
			bytes += float64(8 * m)
			label += " dyn"
		}
		if s.Act != qgemm.ActNone {
			label += " +" + s.Act.String()
		}
		if s.Residual != exec.NoSlot {
			ep.Residual, ep.ResidualStride = r.f32(m*b.N), b.N
			bytes += float64(4 * m * b.N)
			label += " +res"
		}
		if s.OutU8 {
			ep.OutU8, ep.OutStride = make([]uint8, m*s.OutKp), s.OutKp
			ep.OutInvScale, ep.OutZeroPoint = s.OutInvScale, s.OutZeroPoint
			bytes += float64(m * s.OutKp)
			label += " ->u8"
		} else {
			ep.OutF32, ep.OutStride = make([]float32, m*b.N), b.N
			bytes += float64(4 * m * b.N)
		}
		eng := r.prog.Engine()
		return &replay{kind: KindGEMM, label: label, ops: 2 * float64(m) * float64(b.K) * float64(b.N), bytes: bytes,
			run: func() error { return eng.GEMM(a, m, kp, b, &ep) }}, nil

	case *exec.LayerNormStep:
		rows, n, ok := r.sh.rows(s.X)
		if !ok {
			return nil, unresolved
		}
		x := r.f32(rows * n)
		params := s.Params
		ops, bytes := float64(opsLayerNorm*rows*n), float64(4*rows*n)
		var out []float32
		if s.Out != exec.NoSlot {
			out = make([]float32, rows*n)
			bytes += float64(4 * rows * n)
		}
		label := fmt.Sprintf("LayerNorm %d", n)
		if s.OutU8 == exec.NoSlot {
			return &replay{kind: KindLayerNorm, label: label, ops: ops, bytes: bytes,
				run: func() error { nn.LayerNorm(r.pool, out, n, x, n, rows, &params); return nil }}, nil
		}
		q := make([]uint8, rows*s.Kp)
		ops += float64(opsQuantize * rows * n)
		bytes += float64(rows * s.Kp)
		if out == nil {
			label += " ->u8"
		} else {
			label += " ->f32+u8"
		}
		inv, zp, kp := s.InvScale, s.ZeroPoint, s.Kp
		if s.GammaU8 != nil { // sqc.LayerNormDual: one pass, two normalisations
			gq, bq := s.GammaU8, s.BetaU8
			ops += float64(4 * rows * n) // the second subtract, scale, gamma, beta
			return &replay{kind: KindLayerNorm, label: label + " (dual)", ops: ops, bytes: bytes,
				run: func() error {
					nn.LayerNormDual(r.pool, out, n, q, kp, x, n, rows, &params, gq, bq, inv, zp)
					return nil
				}}, nil
		}
		return &replay{kind: KindLayerNorm, label: label, ops: ops, bytes: bytes,
			run: func() error { nn.LayerNormU8(r.pool, out, n, q, kp, x, n, rows, &params, inv, zp); return nil }}, nil

	case *exec.AttentionStep:
		qs, ok1 := r.sh.of(s.Q)
		ks, ok2 := qs, ok1 // packed: K and V are columns of Q's buffer
		if !s.Packed {
			ks, ok2 = r.sh.of(s.K)
		}
		if !ok1 || !ok2 || len(qs) != 3 || len(ks) != 3 {
			return nil, unresolved
		}
		batch, sq, width, sk := qs[0], qs[1], qs[2], ks[1]
		stride := width
		if s.Packed {
			lay := exec.PackedAttentionLayout(width)
			width = lay.Width
		}
		if width%s.Heads != 0 {
			return nil, unresolved
		}
		d := nn.AttentionDims{Batch: batch, SeqQ: sq, SeqK: sk, Heads: s.Heads, HeadDim: width / s.Heads, Scale: s.Scale,
			QStride: stride, KStride: stride, VStride: stride, OutStride: width}
		var q, k, v []float32
		if s.Packed {
			qkv := r.f32(batch * sq * stride)
			lay := exec.PackedAttentionLayout(stride)
			q, k, v = qkv, qkv[lay.KOffset:], qkv[lay.VOffset:]
		} else {
			q, k, v = r.f32(batch*sq*width), r.f32(batch*sk*width), r.f32(batch*sk*width)
		}
		out := make([]float32, batch*sq*width)
		var mask []float32
		bytes := float64(4 * (2*batch*sq*width + 2*batch*sk*width))
		if s.Mask != exec.NoSlot {
			mask = make([]float32, batch*sk) // [batch, 1, 1, seqK]: every key attended
			d.MaskBatchStride = sk
			bytes += float64(4 * batch * sk)
		}
		scratch := make([]float32, nn.AttentionScratchLen(r.workers, sk, d.HeadDim))
		scores := float64(batch * s.Heads * sq * sk)
		ops := scores * (4*float64(d.HeadDim) + opsSoftmax) // Q·K and P·V: 2 ops per multiply-add each
		return &replay{kind: KindAttention, label: fmt.Sprintf("Attention %dx%d", s.Heads, d.HeadDim), ops: ops, bytes: bytes,
			run: func() error { nn.Attention(r.pool, scratch, out, q, k, v, mask, &d); return nil }}, nil

	case *exec.QuantizeStep:
		rows, k, ok := r.sh.rows(s.X)
		if !ok {
			return nil, unresolved
		}
		x, out := r.f32(rows*k), make([]uint8, rows*s.Kp)
		kp, inv, zp := s.Kp, s.InvScale, s.ZeroPoint
		return &replay{kind: KindQuantize, label: fmt.Sprintf("Quantize %d", k), ops: float64(opsQuantize * rows * k),
			bytes: float64(4*rows*k + rows*kp),
			run:   func() error { nn.QuantizeU8Parallel(r.pool, out, kp, x, k, rows, k, inv, zp); return nil }}, nil

	case *exec.QuantizeRowsStep:
		rows, k, ok := r.sh.rows(s.X)
		if !ok {
			return nil, unresolved
		}
		x, out := r.f32(rows*k), make([]uint8, rows*s.Kp)
		scales, zps := make([]float32, rows), make([]int32, rows)
		kp := s.Kp
		return &replay{kind: KindQuantize, label: fmt.Sprintf("QuantizeRows %d", k), ops: float64(opsQuantizeRow * rows * k),
			bytes: float64(4*rows*k + rows*kp + 8*rows),
			run:   func() error { nn.QuantizeRowsU8Parallel(r.pool, out, kp, x, k, rows, k, scales, zps); return nil }}, nil

	case *exec.LinearF32Step:
		rows, _, ok := r.sh.rows(s.X)
		if !ok {
			return nil, unresolved
		}
		x, out := r.f32(rows*s.K), make([]float32, rows*s.N)
		w, bias, k, n := s.W, s.Bias, s.K, s.N
		return &replay{kind: KindLinearF32, label: fmt.Sprintf("LinearF32 %dx%d", k, n), ops: 2 * float64(rows*k*n),
			bytes: float64(4 * (rows*k + k*n + rows*n)),
			run:   func() error { nn.LinearF32(r.pool, out, n, x, k, rows, k, n, w, bias); return nil }}, nil

	case *exec.AddStep:
		na, ok1 := r.sh.elems(s.A)
		nb, ok2 := r.sh.elems(s.B)
		if !ok1 || !ok2 || nb == 0 || na == 0 {
			return nil, unresolved
		}
		if nb > na {
			na, nb = nb, na
		}
		a, b, out := r.f32(na), r.f32(nb), make([]float32, na)
		return &replay{kind: KindElemwise, label: "Add", ops: float64(opsAdd * na), bytes: float64(4 * (2*na + nb)),
			run: func() error { nn.AddParallel(r.pool, out, a, b); return nil }}, nil

	case *exec.ActivationStep:
		n, ok := r.sh.elems(s.X)
		if !ok {
			return nil, unresolved
		}
		x, out := r.f32(n), make([]float32, n)
		a := s.Activation()
		if a.Run == nil {
			return nil, fmt.Errorf("%s: activation %q", s.Call(), s.Func)
		}
		f, per := a.Run, a.OpsPerElement
		return &replay{kind: KindElemwise, label: strings.TrimSuffix(s.Call()[len("nn."):], "Parallel"), ops: float64(per * n), bytes: float64(8 * n),
			run: func() error { f(r.pool, out, x); return nil }}, nil

	case *exec.AttentionMaskStep:
		sh, ok := r.sh.of(s.Mask)
		if !ok || len(sh) != 2 {
			return nil, unresolved
		}
		n := sh[0] * sh[1]
		mask, out, fill := make([]int64, n), make([]float32, n), s.Fill
		for i := range mask {
			mask[i] = 1
		}
		return &replay{kind: KindElemwise, label: "AttentionMask", ops: float64(opsMask * n), bytes: float64(12 * n),
			run: func() error { nn.AttentionMask(out, mask, fill); return nil }}, nil

	case *exec.EmbedStep:
		sh, ok := r.sh.of(s.IDs)
		if !ok || len(sh) != 2 {
			return nil, unresolved
		}
		batch, seq, h := sh[0], sh[1], s.Params.Hidden
		vocab := len(s.Params.Words) / h
		ids := make([]int64, batch*seq)
		for i := range ids {
			ids[i] = int64(r.rng.IntN(vocab))
		}
		var types []int64
		terms := 2
		if s.TypeIDs != exec.NoSlot {
			types = make([]int64, batch*seq)
			terms = 3
		}
		out, params := make([]float32, batch*seq*h), s.Params
		n := batch * seq * h
		return &replay{kind: KindGather, label: fmt.Sprintf("Embeddings %d", h), ops: float64((terms - 1) * n),
			bytes: float64(4*(terms+1)*n + 8*batch*seq*(terms-1)),
			run:   func() error { return nn.EmbedSumParallel(r.pool, out, &params, ids, types, batch, seq) }}, nil

	case *exec.GatherStep:
		ds, ok1 := r.sh.of(s.Data)
		ni, ok2 := r.sh.elems(s.Indices)
		if !ok1 || !ok2 || s.Axis >= len(ds) {
			return nil, unresolved
		}
		outer, dim, inner := 1, ds[s.Axis], 1
		for _, d := range ds[:s.Axis] {
			outer *= d
		}
		for _, d := range ds[s.Axis+1:] {
			inner *= d
		}
		var data []float32
		if c := r.sh.slots[s.Data].Const; c != nil {
			data = c.F32
		} else {
			data = r.f32(outer * dim * inner)
		}
		idx := make([]int64, ni)
		for i := range idx {
			idx[i] = int64(r.rng.IntN(dim))
		}
		out := make([]float32, outer*ni*inner)
		return &replay{kind: KindGather, label: fmt.Sprintf("Gather %d", inner), bytes: float64(8 * len(out)),
			run: func() error { return nn.Gather(out, data, outer, dim, inner, idx) }}, nil
	}
	return nil, fmt.Errorf("%s: no replay (a generic runtime/ops step or an unknown one)", s.Call())
}

package exec

import (
	"fmt"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// AttentionStep is nn.Attention of Q, K, V ([batch, seq, Heads*d]) with the
// optional additive Mask (broadcast to [batch, Heads, seqQ, seqK], keys
// contiguous) into Out; with a Bias (sqc.Attention's input 4, broadcast
// likewise), nn.AttentionBiased and its INT8 forms, which add it to the
// mask first; BiasByPosition (sqc.Attention's bias_by_position) says the
// bias depends on the head and positions only, so that a packed batch
// reads each sequence's top-left corner of it. When Packed (sqc.Attention's qkv_packed), Q is one
// [batch, seq, 3*Heads*d] buffer holding Q, K and V side by side, K and V
// are NoSlot, and the kernel reads K and V at column offsets W and 2W of
// Q's rows (row stride 3W; see PackedLayout). When Int8 (sqc.Attention's
// int8), it is nn.AttentionInt8 on the program's GEMM engine instead.
// With OutKp > 0 (INT8 only: sqc.Attention's out_scale), Out is u8
// [..., OutKp], the codes of nn.QuantizeU8 with OutInvScale and
// OutZeroPoint, written by the P·V epilogue (nn.AttentionInt8U8).
type AttentionStep struct {
	node
	Q, K, V, Mask  SlotID
	Bias           SlotID // NoSlot: none
	BiasByPosition bool
	Packed         bool
	Int8           bool
	Heads          int
	Scale          float32
	Out            SlotID
	OutKp          int
	OutInvScale    float32
	OutZeroPoint   int32
	dims           nn.AttentionDims
	shape          []int64 // Out's shape, reused so that Run does not allocate
}

// AttentionMaskStep is nn.AttentionMask of an i64 [batch, seq] mask into
// the f32 [batch, 1, 1, seq] additive mask Out.
type AttentionMaskStep struct {
	node
	Mask, Out SlotID
	Fill      float32
}

func (s *AttentionStep) Call() string {
	biased := ""
	if s.Bias != NoSlot {
		biased = "Biased"
	}
	switch {
	case s.OutKp > 0:
		return "nn.AttentionInt8U8" + biased
	case s.Int8:
		return "nn.AttentionInt8" + biased
	}
	return "nn.Attention" + biased
}
func (s *AttentionMaskStep) Call() string { return "nn.AttentionMask" }

func (s *AttentionStep) Describe(sl []*Slot) string {
	packed := ""
	if s.Packed {
		packed = ", qkv_packed"
	}
	if s.BiasByPosition {
		packed += ", bias_by_position"
	}
	if s.Int8 {
		packed += ", int8"
	}
	if s.OutKp > 0 {
		packed += fmt.Sprintf(", out=u8 Kp=%d inv_scale=%g zero_point=%d", s.OutKp, s.OutInvScale, s.OutZeroPoint)
	}
	operands := []SlotID{s.Q, s.K, s.V, s.Mask}
	if s.Bias != NoSlot {
		operands = append(operands, s.Bias)
	}
	return fmt.Sprintf("%s = %s(%s; heads=%d, scale=%g%s)", slotName(sl, s.Out), s.Call(),
		slotNames(sl, operands...), s.Heads, s.Scale, packed)
}

func (s *AttentionMaskStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s; fill=%g)", slotName(sl, s.Out), s.Call(), slotName(sl, s.Mask), s.Fill)
}

func (s *AttentionStep) run(p *Program) error {
	if p.run.offsets != nil {
		return s.runVarlen(p)
	}
	if s.Packed {
		return s.runPacked(p)
	}
	q, k, v := p.bufs[s.Q], p.bufs[s.K], p.bufs[s.V]
	for _, t := range []*compiler.Tensor{q, k, v} {
		if t.DType != compiler.Float32 || len(t.Shape) != 3 {
			return fmt.Errorf("%w: Attention operand %s%v, want f32 [batch, seq, width]", compiler.ErrShapeMismatch, t.DType, t.Shape)
		}
	}
	batch, sq, width, sk := int(q.Shape[0]), int(q.Shape[1]), int(q.Shape[2]), int(k.Shape[1])
	if !slices.Equal(k.Shape, v.Shape) || k.Shape[0] != q.Shape[0] || k.Shape[2] != q.Shape[2] || width%s.Heads != 0 {
		return fmt.Errorf("%w: Attention q %v, k %v, v %v with %d heads", compiler.ErrShapeMismatch, q.Shape, k.Shape, v.Shape, s.Heads)
	}
	d := &s.dims
	*d = nn.AttentionDims{
		Batch: batch, SeqQ: sq, SeqK: sk, Heads: s.Heads, HeadDim: width / s.Heads, Scale: s.Scale,
		QStride: width, KStride: width, VStride: width, OutStride: s.OutStride(width),
	}
	return s.attend(p, q.F32, k.F32, v.F32, q.Shape)
}

// attend runs nn.Attention with s.dims (mask strides still to set) into
// Out of the given shape.
func (s *AttentionStep) attend(p *Program, q, k, v []float32, outShape []int64) error {
	d := &s.dims
	var mask, bias []float32
	if s.Mask != NoSlot {
		m := p.bufs[s.Mask]
		if err := addendStrides(m, d, "mask", &d.MaskBatchStride, &d.MaskHeadStride, &d.MaskRowStride); err != nil {
			return err
		}
		mask = m.F32
	}
	if s.Bias != NoSlot {
		b := p.bufs[s.Bias]
		if err := addendStrides(b, d, "bias", &d.BiasBatchStride, &d.BiasHeadStride, &d.BiasRowStride); err != nil {
			return err
		}
		bias = b.F32
	}
	out := s.resizeOut(p, outShape)
	p.scratch = grow(p.scratch, s.scratchLen(p, d.SeqK))
	switch {
	case s.OutKp > 0 && bias != nil:
		nn.AttentionInt8U8Biased(p.pool, p.engine, p.scratch, out.U8, q, k, v, mask, bias, d, s.OutInvScale, s.OutZeroPoint)
	case s.OutKp > 0:
		nn.AttentionInt8U8(p.pool, p.engine, p.scratch, out.U8, q, k, v, mask, d, s.OutInvScale, s.OutZeroPoint)
	case s.Int8 && bias != nil:
		nn.AttentionInt8Biased(p.pool, p.engine, p.scratch, out.F32, q, k, v, mask, bias, d)
	case s.Int8:
		nn.AttentionInt8(p.pool, p.engine, p.scratch, out.F32, q, k, v, mask, d)
	case bias != nil:
		nn.AttentionBiased(p.pool, p.scratch, out.F32, q, k, v, mask, bias, d)
	default:
		nn.Attention(p.pool, p.scratch, out.F32, q, k, v, mask, d)
	}
	return nil
}

// OutStride is the row stride of Out for width output columns: OutKp
// bytes when it is u8.
func (s *AttentionStep) OutStride(width int) int {
	if s.OutKp > 0 {
		return s.OutKp
	}
	return width
}

// resizeOut sizes Out to shape, whose last dim is the output width (OutKp
// bytes when it is u8).
func (s *AttentionStep) resizeOut(p *Program, shape []int64) *compiler.Tensor {
	out := p.bufs[s.Out]
	if s.OutKp > 0 {
		s.shape = withLast(s.shape, shape, s.OutKp)
		resize(out, compiler.Uint8, s.shape...)
	} else {
		resize(out, compiler.Float32, shape...)
	}
	return out
}

// scratchLen is the attention scratch for keys keys at most.
func (s *AttentionStep) scratchLen(p *Program, keys int) int {
	if s.Int8 {
		return nn.AttentionInt8ScratchLen(p.pool.Workers(), keys, s.dims.HeadDim)
	}
	return nn.AttentionScratchLen(p.pool.Workers(), keys, s.dims.HeadDim)
}

// addendStrides sets the batch, head and row strides of an additive term
// of the scores (the mask or the bias, named what), m, which must
// broadcast to [batch, heads, seqQ, seqK] with its last dim seqK.
func addendStrides(m *compiler.Tensor, d *nn.AttentionDims, what string, batch, head, row *int) error {
	full := [4]int64{int64(d.Batch), int64(d.Heads), int64(d.SeqQ), int64(d.SeqK)}
	bad := func() error { // built only on failure: Run allocates nothing otherwise
		return fmt.Errorf("%w: Attention %s %s%v does not broadcast to scores %v with keys contiguous", compiler.ErrShapeMismatch, what, m.DType, m.Shape, full)
	}
	r := len(m.Shape)
	if m.DType != compiler.Float32 || r == 0 || r > 4 || m.Shape[r-1] != full[3] {
		return bad()
	}
	var strides [4]int
	stride := 1
	for i := 3; i >= 0; i-- {
		j := i - (4 - r) // the mask's dim aligned with score dim i
		if j < 0 {
			continue
		}
		switch m.Shape[j] {
		case full[i]:
			strides[i] = stride
		case 1:
		default:
			return bad()
		}
		stride *= int(m.Shape[j])
	}
	*batch, *head, *row = strides[0], strides[1], strides[2]
	return nil
}

func (s *AttentionMaskStep) run(p *Program) error {
	m := p.bufs[s.Mask]
	if m.DType != compiler.Int64 || len(m.Shape) != 2 {
		return fmt.Errorf("%w: AttentionMask input %s%v, want i64 [batch, seq]", compiler.ErrShapeMismatch, m.DType, m.Shape)
	}
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, m.Shape[0], 1, 1, m.Shape[1])
	nn.AttentionMask(out.F32, m.I64, s.Fill)
	return nil
}

func (s *AttentionStep) Operands() Operands {
	return operands(reads(s.Q, s.K, s.V, s.Mask, s.Bias), s.Out)
}

func (s *AttentionMaskStep) Operands() Operands { return operands(reads(s.Mask), s.Out) }

// cost counts Q·K^T and P·V (2 ops per multiply-add each) and the softmax
// per score: over every sequence's own length when the batch ran packed.
func (s *AttentionStep) cost(p *Program) Cost {
	d := s.dims
	scores := float64(d.Batch * d.SeqQ * d.SeqK)
	if p.run.offsets != nil {
		scores = 0
		for _, l := range p.run.lengths {
			scores += float64(l * l)
		}
	}
	scores *= float64(s.Heads)
	label := fmt.Sprintf("Attention %dx%d", s.Heads, d.HeadDim)
	if s.Int8 {
		label += " int8"
	}
	if s.OutKp > 0 {
		label += " ->u8"
	}
	return Cost{Kind: KindAttention, Label: label, INT8: s.Int8,
		Ops: scores * (4*float64(d.HeadDim) + opsSoftmax), Bytes: p.operandBytes(s)}
}

func (s *AttentionMaskStep) cost(p *Program) Cost {
	n := float64(len(p.bufs[s.Out].F32))
	return Cost{Kind: KindElemwise, Label: "AttentionMask", Ops: opsMask * n, Bytes: p.operandBytes(s)}
}

// runPacked is run for the packed form: Q, K and V are column ranges of
// one buffer, attended in place with row stride 3*width.
func (s *AttentionStep) runPacked(p *Program) error {
	qkv := p.bufs[s.Q]
	if qkv.DType != compiler.Float32 || len(qkv.Shape) != 3 || qkv.Shape[2]%int64(3*s.Heads) != 0 {
		return fmt.Errorf("%w: packed Attention operand %s%v, want f32 [batch, seq, 3*width] with width a multiple of %d heads",
			compiler.ErrShapeMismatch, qkv.DType, qkv.Shape, s.Heads)
	}
	batch, seq := int(qkv.Shape[0]), int(qkv.Shape[1])
	lay := PackedAttentionLayout(int(qkv.Shape[2]))
	outShape := []int64{qkv.Shape[0], qkv.Shape[1], int64(lay.Width)}
	if batch*seq == 0 { // no tokens: nothing to attend, and no K or V columns to slice
		s.resizeOut(p, outShape)
		return nil
	}
	s.dims = nn.AttentionDims{
		Batch: batch, SeqQ: seq, SeqK: seq, Heads: s.Heads, HeadDim: lay.Width / s.Heads, Scale: s.Scale,
		QStride: lay.Stride, KStride: lay.Stride, VStride: lay.Stride, OutStride: s.OutStride(lay.Width),
	}
	return s.attend(p, qkv.F32, qkv.F32[lay.KOffset:], qkv.F32[lay.VOffset:], outShape)
}

// runVarlen is run for a packed batch (packed.go): Q, K and V (or the
// packed QKV operand) are [tokens, ...], and each sequence attends to its
// own tokens only, with no mask, adding its corner of a position-only
// bias.
func (s *AttentionStep) runVarlen(p *Program) error {
	off := p.run.offsets
	q := p.bufs[s.Q]
	if q.DType != compiler.Float32 || len(q.Shape) != 2 || q.Shape[0] != int64(off[len(off)-1]) {
		return fmt.Errorf("internal error: packed Attention operand %s%v for %d tokens", q.DType, q.Shape, off[len(off)-1])
	}
	width := int(q.Shape[1])
	qs, ks, vs := q.F32, q.F32, q.F32
	stride := width
	if s.Packed {
		lay := PackedAttentionLayout(width)
		width, stride = lay.Width, lay.Stride
		if len(qs) > 0 {
			ks, vs = qs[lay.KOffset:], qs[lay.VOffset:]
		}
	} else {
		k, v := p.bufs[s.K], p.bufs[s.V]
		if !slices.Equal(k.Shape, q.Shape) || !slices.Equal(v.Shape, q.Shape) {
			return fmt.Errorf("%w: Attention q %v, k %v, v %v", compiler.ErrShapeMismatch, q.Shape, k.Shape, v.Shape)
		}
		ks, vs = k.F32, v.F32
	}
	if width%s.Heads != 0 {
		return fmt.Errorf("%w: Attention width %d with %d heads", compiler.ErrShapeMismatch, width, s.Heads)
	}
	s.dims = nn.AttentionDims{
		Heads: s.Heads, HeadDim: width / s.Heads, Scale: s.Scale,
		QStride: stride, KStride: stride, VStride: stride, OutStride: s.OutStride(width),
	}
	out := s.resizeOut(p, []int64{q.Shape[0], int64(width)})
	longest := 0
	for _, l := range p.run.lengths {
		longest = max(longest, l)
	}
	p.scratch = grow(p.scratch, s.scratchLen(p, longest))
	var bias []float32
	if s.Bias != NoSlot {
		// The bias was computed at the padded length (planPacking allows
		// a position-only one, or DeBERTa's relative terms with each
		// sequence's in its corner): its strides are those of the padded
		// scores, and each sequence reads its top-left corner.
		b := p.bufs[s.Bias]
		d := s.dims
		d.Batch, d.SeqQ, d.SeqK = len(off)-1, p.run.seq, p.run.seq
		if err := addendStrides(b, &d, "bias", &s.dims.BiasBatchStride, &s.dims.BiasHeadStride, &s.dims.BiasRowStride); err != nil {
			return err
		}
		bias = b.F32
	}
	switch {
	case s.OutKp > 0 && bias != nil:
		nn.AttentionInt8U8PackedBiased(p.pool, p.engine, p.scratch, out.U8, qs, ks, vs, bias, &s.dims, off, s.OutInvScale, s.OutZeroPoint)
	case s.OutKp > 0:
		nn.AttentionInt8U8Packed(p.pool, p.engine, p.scratch, out.U8, qs, ks, vs, &s.dims, off, s.OutInvScale, s.OutZeroPoint)
	case s.Int8 && bias != nil:
		nn.AttentionInt8PackedBiased(p.pool, p.engine, p.scratch, out.F32, qs, ks, vs, bias, &s.dims, off)
	case s.Int8:
		nn.AttentionInt8Packed(p.pool, p.engine, p.scratch, out.F32, qs, ks, vs, &s.dims, off)
	case bias != nil:
		nn.AttentionPackedBiased(p.pool, p.scratch, out.F32, qs, ks, vs, bias, &s.dims, off)
	default:
		nn.AttentionPacked(p.pool, p.scratch, out.F32, qs, ks, vs, &s.dims, off)
	}
	return nil
}

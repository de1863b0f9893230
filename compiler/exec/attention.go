package exec

import (
	"fmt"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// attention lowers an f32 sqc.Attention to an AttentionStep, packed
// (qkv_packed = 1: one [batch, seq, 3W] operand) or not.
func (l *lowering) attention(n *compiler.Node) bool {
	for _, in := range n.Inputs {
		if in != "" && l.dtype(in) != compiler.Float32 {
			return false
		}
	}
	s := &AttentionStep{
		Node: n.Name, Q: l.slot(n.Inputs[0]), K: NoSlot, V: NoSlot, Mask: NoSlot,
		Heads: int(n.AttrInt("heads", 1)), Scale: n.AttrFloat("scale", 1),
	}
	if compiler.AttentionPacked(n) {
		s.Packed = true
	} else {
		s.K, s.V = l.slot(n.Inputs[1]), l.slot(n.Inputs[2])
	}
	if len(n.Inputs) > 3 && n.Inputs[3] != "" {
		s.Mask = l.slot(n.Inputs[3])
	}
	s.Out = l.slot(n.Outputs[0])
	l.emit(s)
	return true
}

// PackedLayout is where a packed AttentionStep finds Q, K and V in its
// [batch, seq, 3*width] operand: K and V start at element offsets KOffset
// and VOffset of the buffer (width and 2*width), and every row of Q, K and
// V has stride Stride (3*width). nn.Attention reads row r of head h at
// offset + r*Stride + h*HeadDim, so no copy is needed.
type PackedLayout struct {
	Width, Stride, KOffset, VOffset int
}

// PackedAttentionLayout returns the layout of a packed QKV operand whose
// rows are qkvWidth (= 3*width) wide.
func PackedAttentionLayout(qkvWidth int) PackedLayout {
	w := qkvWidth / 3
	return PackedLayout{Width: w, Stride: qkvWidth, KOffset: w, VOffset: 2 * w}
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
		resize(p.bufs[s.Out], compiler.Float32, outShape...)
		return nil
	}
	s.dims = nn.AttentionDims{
		Batch: batch, SeqQ: seq, SeqK: seq, Heads: s.Heads, HeadDim: lay.Width / s.Heads, Scale: s.Scale,
		QStride: lay.Stride, KStride: lay.Stride, VStride: lay.Stride, OutStride: lay.Width,
	}
	return s.attend(p, qkv.F32, qkv.F32[lay.KOffset:], qkv.F32[lay.VOffset:], outShape)
}

// runVarlen is run for a packed batch (packed.go): Q, K and V (or the
// packed QKV operand) are [tokens, ...], and each sequence attends to its
// own tokens only, with no mask.
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
		QStride: stride, KStride: stride, VStride: stride, OutStride: width,
	}
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, q.Shape[0], int64(width))
	longest := 0
	for _, l := range p.run.lengths {
		longest = max(longest, l)
	}
	p.scratch = grow(p.scratch, nn.AttentionScratchLen(p.pool.Workers(), longest, s.dims.HeadDim))
	nn.AttentionPacked(p.pool, p.scratch, out.F32, qs, ks, vs, &s.dims, off)
	return nil
}

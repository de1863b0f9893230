package exec

import (
	"github.com/sqc-dev/sqc/compiler"
)

// PackedLayout is where a packed AttentionStep finds Q, K and V in its
// [batch, seq, 3*width] operand: K and V start at element offsets KOffset
// and VOffset of the buffer (width and 2*width), and every row of Q, K and
// V has stride Stride (3*width). nn.Attention reads row r of head h at
// offset + r*Stride + h*HeadDim, so no copy is needed.
type PackedLayout struct {
	Width, Stride, KOffset, VOffset int
}

// attention lowers an f32 sqc.Attention to an AttentionStep, packed
// (qkv_packed = 1: one [batch, seq, 3W] operand) or not, FP32 or INT8
// (int8 = 1), writing f32 or (out_scale) u8.
func (l *lowering) attention(n *compiler.Node) bool {
	if !l.allF32(n.Inputs...) {
		return false
	}
	s := &AttentionStep{
		node: node{n.Name}, Q: l.slot(n.Inputs[0]), K: NoSlot, V: NoSlot, Mask: NoSlot, Bias: NoSlot,
		Heads: int(n.AttrInt("heads", 1)), Scale: n.AttrFloat("scale", 1), Int8: compiler.AttentionInt8(n),
	}
	if compiler.AttentionPacked(n) {
		s.Packed = true
	} else {
		s.K, s.V = l.slot(n.Inputs[1]), l.slot(n.Inputs[2])
	}
	if len(n.Inputs) > 3 && n.Inputs[3] != "" {
		s.Mask = l.slot(n.Inputs[3])
	}
	if len(n.Inputs) > 4 && n.Inputs[4] != "" {
		s.Bias = l.slot(n.Inputs[4])
		s.BiasByPosition = compiler.AttentionBiasByPosition(n)
	}
	s.Out = l.slot(n.Outputs[0])
	if scale, zp, ok := compiler.U8Output(n); ok { // passes.WriteU8Directly
		_, shape := l.info(n.Outputs[0])
		if len(shape) == 0 || !shape[len(shape)-1].Known() {
			return false
		}
		s.OutKp, s.OutInvScale, s.OutZeroPoint = u8Row(int(shape[len(shape)-1].Size)), 1/scale, zp
	}
	l.emit(s)
	return true
}

// PackedAttentionLayout returns the layout of a packed QKV operand whose
// rows are qkvWidth (= 3*width) wide.
func PackedAttentionLayout(qkvWidth int) PackedLayout {
	w := qkvWidth / 3
	return PackedLayout{Width: w, Stride: qkvWidth, KOffset: w, VOffset: 2 * w}
}

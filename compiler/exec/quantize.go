package exec

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
)

// quantize lowers an sqc.Quantize (passes.MaterializeQuantize) to the step
// computing it: QuantizeStep (static) or QuantizeRowsStep (dynamic, with
// the row scales and zero points as rank-1 buffers of one value per row).
func (l *lowering) quantize(i int, n *compiler.Node) error {
	x := n.Inputs[0]
	dt, shape := l.info(x)
	if dt != compiler.Float32 || shape == nil || len(shape) == 0 || !shape[len(shape)-1].Known() {
		return l.bad(i, fmt.Errorf("%w: sqc.Quantize needs f32 [..., K] with K known, has %s %s", compiler.ErrMalformed, dt, shape))
	}
	k := int(shape[len(shape)-1].Size)
	if compiler.QuantizeMode(n) == compiler.QLinearDynamic {
		out := l.slot(n.Outputs[0])
		rows := shape[:len(shape)-1]
		scales, zps := l.rowSlot(n.Outputs[1], compiler.Float32, rows), l.rowSlot(n.Outputs[2], compiler.Int32, rows)
		l.emit(&QuantizeRowsStep{node: node{n.Name}, X: l.slot(x), Out: out, Scales: scales, ZeroPoints: zps, K: k, Kp: u8Row(k)})
		return nil
	}
	s := n.AttrFloat("scale", 0)
	l.emit(&QuantizeStep{node: node{n.Name}, X: l.slot(x), Out: l.slot(n.Outputs[0]), K: k, Kp: u8Row(k), InvScale: 1 / s, ZeroPoint: int32(n.AttrInt("zero_point", 0))})
	return nil
}

// rowSlot is the buffer of a per-row quantisation parameter: one value
// per row of x, so x's leading dims (which PlanMemory sizes it by).
func (l *lowering) rowSlot(name string, dt compiler.DType, rows compiler.Shape) SlotID {
	id := l.internal(name, dt, rows.Clone())
	l.slots[name] = id
	return id
}

// quantBuf is a QLinear's quantised input buffer and, in dynamic mode,
// its per-row scales and zero points.
type quantBuf struct {
	u8, scales, zeroPoints SlotID
}

// quantizedInput returns the u8 buffer QLinear n reads: its input, which
// an sqc.Quantize or a producer's u8 output writes. Lowering makes no
// quantisation of its own: a QLinear of an f32 input is a graph the
// quantisation passes (passes.MaterializeQuantize) have not run on.
func (l *lowering) quantizedInput(n *compiler.Node) (quantBuf, error) {
	b := quantBuf{u8: l.slot(n.Inputs[0]), scales: NoSlot, zeroPoints: NoSlot}
	if compiler.QLinearMode(n) == compiler.QLinearDynamic {
		rs, rz := compiler.QLinearRowParams(n)
		if rs == "" {
			return b, fmt.Errorf("%w: dynamic QLinear of a u8 input without its row scales and zero points", compiler.ErrMalformed)
		}
		b.scales, b.zeroPoints = l.slot(rs), l.slot(rz)
	}
	return b, nil
}

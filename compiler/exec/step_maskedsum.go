package exec

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// MaskedSumStep is nn.MaskedSumParallel: sqc.MaskedSum's sum over the
// tokens of X [batch, seq, hidden] times the attention mask Mask [batch,
// seq] into Out [batch, hidden] ([batch, 1, hidden] with KeepDims). A
// packed batch sums each sequence's real tokens (nn.MaskedSumPacked).
type MaskedSumStep struct {
	node
	KeepDims     bool
	X, Mask, Out SlotID
}

func (s *MaskedSumStep) Call() string { return "nn.MaskedSumParallel" }

func (s *MaskedSumStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s, %s)", slotName(sl, s.Out), s.Call(), slotName(sl, s.X), slotName(sl, s.Mask))
}

func (s *MaskedSumStep) Operands() Operands { return operands(reads(s.X, s.Mask), s.Out) }

func (s *MaskedSumStep) run(p *Program) error {
	x, m := p.bufs[s.X], p.bufs[s.Mask]
	if x.DType != compiler.Float32 || m.DType != compiler.Int64 || len(m.Shape) != 2 {
		return fmt.Errorf("%w: MaskedSum of %s%v with mask %s%v", compiler.ErrShapeMismatch, x.DType, x.Shape, m.DType, m.Shape)
	}
	batch, seq := m.Shape[0], m.Shape[1]
	out := p.bufs[s.Out]
	if off := p.run.offsets; off != nil { // packed.go: x is [tokens, hidden]
		if len(x.Shape) != 2 || x.Shape[0] != int64(off[len(off)-1]) || int64(len(off)-1) != batch {
			return fmt.Errorf("internal error: packed MaskedSum of %v for %d tokens", x.Shape, off[len(off)-1])
		}
		hidden := x.Shape[1]
		s.resize(out, batch, hidden)
		nn.MaskedSumPacked(p.pool, out.F32, x.F32, m.I64, int(seq), int(hidden), off)
		return nil
	}
	if len(x.Shape) != 3 || x.Shape[0] != batch || x.Shape[1] != seq {
		return fmt.Errorf("%w: MaskedSum of %v with mask %v", compiler.ErrShapeMismatch, x.Shape, m.Shape)
	}
	hidden := x.Shape[2]
	s.resize(out, batch, hidden)
	nn.MaskedSumParallel(p.pool, out.F32, x.F32, m.I64, int(batch), int(seq), int(hidden))
	return nil
}

func (s *MaskedSumStep) resize(out *compiler.Tensor, batch, hidden int64) {
	if s.KeepDims {
		resize(out, compiler.Float32, batch, 1, hidden)
		return
	}
	resize(out, compiler.Float32, batch, hidden)
}

// cost: a product and a sum per element of X.
func (s *MaskedSumStep) cost(p *Program) Cost {
	return Cost{Kind: KindElemwise, Label: "MaskedSum", Ops: 2 * float64(len(p.bufs[s.X].F32)), Bytes: p.operandBytes(s)}
}

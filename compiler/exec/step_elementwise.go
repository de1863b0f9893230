package exec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// AddStep is nn.AddParallel: Out = A + B, where B's shape equals A's or is a
// suffix of it (leading ones dropped) or the other way round.
type AddStep struct {
	node
	A, B, Out SlotID
	shape     []int64
}

// MulStep is nn.MulParallel: Out = A * B for A and B of one shape (a
// gated linear unit's act(input) * gate).
type MulStep struct {
	node
	A, B, Out SlotID
}

// ActivationStep applies an elementwise activation (Func: ActGelu,
// ActGeluTanh, ActTanh, ActRelu; activation.go) to X into Out.
type ActivationStep struct {
	node
	Func   string
	X, Out SlotID
}

func (s *AddStep) Call() string        { return "nn.AddParallel" }
func (s *ActivationStep) Call() string { return "nn." + s.Activation().NN }
func (s *MulStep) Call() string        { return "nn.MulParallel" }

func (s *MulStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s, %s)", slotName(sl, s.Out), s.Call(), slotName(sl, s.A), slotName(sl, s.B))
}

func (s *MulStep) run(p *Program) error {
	a, b := p.bufs[s.A], p.bufs[s.B]
	if a.DType != compiler.Float32 || b.DType != compiler.Float32 {
		return fmt.Errorf("%w: Mul of %s and %s", compiler.ErrDTypeMismatch, a.DType, b.DType)
	}
	if !slices.Equal(a.Shape, b.Shape) {
		return fmt.Errorf("%w: Mul of %v and %v (the step multiplies equal shapes only)", compiler.ErrShapeMismatch, a.Shape, b.Shape)
	}
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, slices.Clone(a.Shape)...)
	nn.MulParallel(p.pool, out.F32, a.F32, b.F32)
	return nil
}

func (s *MulStep) Operands() Operands { return operands(reads(s.A, s.B), s.Out) }

func (s *MulStep) cost(p *Program) Cost {
	return Cost{Kind: KindElemwise, Label: "Mul", Ops: float64(len(p.bufs[s.Out].F32)), Bytes: p.operandBytes(s)}
}

func (s *AddStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s, %s)", slotName(sl, s.Out), s.Call(), slotName(sl, s.A), slotName(sl, s.B))
}

func (s *ActivationStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s)", slotName(sl, s.Out), s.Call(), slotName(sl, s.X))
}

func (s *AddStep) run(p *Program) error {
	a, b := p.bufs[s.A], p.bufs[s.B]
	if a.DType != compiler.Float32 || b.DType != compiler.Float32 {
		return fmt.Errorf("%w: Add of %s and %s", compiler.ErrDTypeMismatch, a.DType, b.DType)
	}
	if !isSuffix(b.Shape, a.Shape) {
		if !isSuffix(a.Shape, b.Shape) {
			return fmt.Errorf("%w: Add of %v and %v is not a suffix broadcast", compiler.ErrShapeMismatch, a.Shape, b.Shape)
		}
		a, b = b, a // a + b = b + a bit for bit
	}
	s.shape = broadcastShape(s.shape, b.Shape, a.Shape)
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, s.shape...)
	if len(b.F32) > 0 {
		nn.AddParallel(p.pool, out.F32, a.F32, b.F32)
	}
	return nil
}

// isSuffix reports whether small, without its leading ones, equals the
// trailing dims of big, so that small broadcasts over big's leading dims.
func isSuffix(small, big []int64) bool {
	for len(small) > 0 && small[0] == 1 {
		small = small[1:]
	}
	return len(small) <= len(big) && slices.Equal(small, big[len(big)-len(small):])
}

// broadcastShape is the shape of big + small for isSuffix(small, big):
// big's, with leading ones if small has the higher rank.
func broadcastShape(buf, small, big []int64) []int64 {
	buf = buf[:0]
	for range len(small) - len(big) {
		buf = append(buf, 1)
	}
	return append(buf, big...)
}

func (s *ActivationStep) run(p *Program) error {
	x := p.bufs[s.X]
	if x.DType != compiler.Float32 {
		return fmt.Errorf("%w: %s of %s", compiler.ErrDTypeMismatch, s.Func, x.DType)
	}
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, x.Shape...)
	s.Activation().Run(p.pool, out.F32, x.F32)
	return nil
}

func (s *AddStep) Operands() Operands        { return operands(reads(s.A, s.B), s.Out) }
func (s *ActivationStep) Operands() Operands { return operands(reads(s.X), s.Out) }

func (s *AddStep) cost(p *Program) Cost {
	return Cost{Kind: KindElemwise, Label: "Add", Ops: float64(len(p.bufs[s.Out].F32)),
		Bytes: p.operandBytes(s)}
}

func (s *ActivationStep) cost(p *Program) Cost {
	a := s.Activation()
	return Cost{Kind: KindElemwise, Label: strings.TrimSuffix(a.NN, "Parallel"), Ops: float64(a.OpsPerElement * len(p.bufs[s.Out].F32)),
		Bytes: p.operandBytes(s)}
}

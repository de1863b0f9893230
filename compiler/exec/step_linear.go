package exec

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// LinearF32Step is the float32 Linear of FP32 graphs: nn.LinearF32 of X
// ([..., K]) with W ([K, N]) and optional Bias into Out ([..., N]).
type LinearF32Step struct {
	node
	Weight   string
	X, Out   SlotID
	K, N     int
	W, Bias  []float32
	BiasName string
	shape    []int64
}

func (s *LinearF32Step) Call() string { return "nn.LinearF32" }

func (s *LinearF32Step) Describe(sl []*Slot) string {
	bias := ""
	if s.Bias != nil {
		bias = ", bias=%" + s.BiasName
	}
	return fmt.Sprintf("%s = %s(%s, %%%s [%dx%d]%s)", slotName(sl, s.Out), s.Call(), slotName(sl, s.X), s.Weight, s.K, s.N, bias)
}

func (s *LinearF32Step) run(p *Program) error {
	x := p.bufs[s.X]
	if err := want(x, "Linear input", compiler.Float32, s.K); err != nil {
		return err
	}
	rows, _ := rowsOf(x.Shape)
	out := p.bufs[s.Out]
	s.shape = withLast(s.shape, x.Shape, s.N)
	resize(out, compiler.Float32, s.shape...)
	nn.LinearF32(p.pool, out.F32, s.N, x.F32, s.K, rows, s.K, s.N, s.W, s.Bias)
	return nil
}

func (s *LinearF32Step) Operands() Operands { return operands(reads(s.X), s.Out) }

func (s *LinearF32Step) cost(p *Program) Cost {
	rows, _ := rowsOf(p.bufs[s.X].Shape)
	return Cost{Kind: KindLinearF32, Label: fmt.Sprintf("LinearF32 %dx%d", s.K, s.N), Ops: 2 * float64(rows*s.K*s.N),
		Bytes: float64(4*len(s.W)+4*len(s.Bias)) + p.operandBytes(s)}
}

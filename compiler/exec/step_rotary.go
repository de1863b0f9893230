package exec

import (
	"fmt"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// RotaryStep is nn.RotaryParallel: sqc.Rotary's rotary position embedding
// of X [batch, seq, Heads*d] by the Cos and Sin tables [1 or batch, seq,
// d] into Out.
type RotaryStep struct {
	node
	Heads int
	// TablesByPosition: the tables are proved to depend on positions only
	// (sqc.Rotary's tables_by_position), so a packed batch may run.
	TablesByPosition bool
	X, Cos, Sin, Out SlotID
	dims             nn.RotaryDims
}

func (s *RotaryStep) Call() string { return "nn.RotaryParallel" }

func (s *RotaryStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s, %s, %s; heads=%d)", slotName(sl, s.Out), s.Call(), slotName(sl, s.X), slotName(sl, s.Cos), slotName(sl, s.Sin), s.Heads)
}

func (s *RotaryStep) Operands() Operands { return operands(reads(s.X, s.Cos, s.Sin), s.Out) }

func (s *RotaryStep) run(p *Program) error {
	x, cos, sin := p.bufs[s.X], p.bufs[s.Cos], p.bufs[s.Sin]
	for _, t := range []*compiler.Tensor{x, cos, sin} {
		if err := want(t, "Rotary operand", compiler.Float32, 0); err != nil {
			return err
		}
	}
	if off := p.run.offsets; off != nil { // packed.go: [tokens, width], each sequence from table row 0
		tokens := int64(off[len(off)-1])
		if len(x.Shape) != 2 || x.Shape[0] != tokens || len(cos.Shape) != 3 || cos.Shape[0] != 1 {
			return fmt.Errorf("internal error: packed Rotary of %v with table %v for %d tokens", x.Shape, cos.Shape, tokens)
		}
		heads, d, _, err := compiler.RotaryShape(int64(s.Heads), []int64{1, cos.Shape[1], x.Shape[1]}, cos.Shape, sin.Shape)
		if err != nil {
			return err
		}
		s.dims = nn.RotaryDims{Batch: len(off) - 1, Seq: int(cos.Shape[1]), Heads: heads, HeadSize: d, TableBatch: 1}
		out := p.bufs[s.Out]
		resize(out, compiler.Float32, slices.Clone(x.Shape)...)
		nn.RotaryPacked(p.pool, out.F32, x.F32, cos.F32, sin.F32, &s.dims, off)
		return nil
	}
	heads, d, tb, err := compiler.RotaryShape(int64(s.Heads), x.Shape, cos.Shape, sin.Shape)
	if err != nil {
		return err
	}
	s.dims = nn.RotaryDims{Batch: int(x.Shape[0]), Seq: int(x.Shape[1]), Heads: heads, HeadSize: d, TableBatch: tb}
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, slices.Clone(x.Shape)...)
	nn.RotaryParallel(p.pool, out.F32, x.F32, cos.F32, sin.F32, &s.dims)
	return nil
}

// cost: per element two products and a sum.
func (s *RotaryStep) cost(p *Program) Cost {
	return Cost{Kind: KindElemwise, Label: "Rotary", Ops: 3 * float64(len(p.bufs[s.Out].F32)), Bytes: p.operandBytes(s)}
}

package exec

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// GatherStep is nn.Gather of f32 Data along Axis at the i64 Indices (ONNX
// Gather): embedding lookups and the classifier's first-token pick.
type GatherStep struct {
	node
	Data, Indices, Out SlotID
	Axis               int
	shape              []int64
}

func (s *GatherStep) Call() string { return "nn.Gather" }

func (s *GatherStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s, %s; axis=%d)", slotName(sl, s.Out), s.Call(), slotName(sl, s.Data), slotName(sl, s.Indices), s.Axis)
}

func (s *GatherStep) run(p *Program) error {
	data, ix := p.bufs[s.Data], p.bufs[s.Indices]
	if data.DType != compiler.Float32 || ix.DType != compiler.Int64 || s.Axis >= len(data.Shape) {
		return fmt.Errorf("%w: Gather of %s%v at %s indices along axis %d", compiler.ErrShapeMismatch, data.DType, data.Shape, ix.DType, s.Axis)
	}
	if off := p.run.offsets; off != nil && p.pack.tokenWise[s.Data] { // packed.go: [tokens, inner]
		inner := int(compiler.NumElements(data.Shape[1:]))
		s.shape = append(append(append(s.shape[:0], int64(len(off)-1)), ix.Shape...), data.Shape[1:]...)
		out := p.bufs[s.Out]
		resize(out, compiler.Float32, s.shape...)
		if err := nn.GatherPacked(out.F32, data.F32, inner, off, ix.I64); err != nil {
			return fmt.Errorf("%w: Gather: %v", compiler.ErrInvalidRequest, err)
		}
		return nil
	}
	s.shape = append(append(append(s.shape[:0], data.Shape[:s.Axis]...), ix.Shape...), data.Shape[s.Axis+1:]...)
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, s.shape...)
	outer := int(compiler.NumElements(data.Shape[:s.Axis]))
	inner := int(compiler.NumElements(data.Shape[s.Axis+1:]))
	if err := nn.Gather(out.F32, data.F32, outer, int(data.Shape[s.Axis]), inner, ix.I64); err != nil {
		return fmt.Errorf("%w: Gather: %v", compiler.ErrInvalidRequest, err)
	}
	return nil
}

func (s *GatherStep) Operands() Operands { return operands(reads(s.Data, s.Indices), s.Out) }

// cost counts the rows read from the table as bytes, not the table.
func (s *GatherStep) cost(p *Program) Cost {
	out := p.bufs[s.Out]
	inner := 1
	if r := len(out.Shape); r > 0 {
		inner = int(out.Shape[r-1])
	}
	return Cost{Kind: KindGather, Label: fmt.Sprintf("Gather %d", inner), Bytes: 2*p.bytesOf(s.Out) + p.bytesOf(s.Indices)}
}

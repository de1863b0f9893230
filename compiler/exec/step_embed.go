package exec

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// EmbedStep is nn.EmbedSumParallel: (word[ids] + type[type_ids]) +
// position into Out (f32 [batch, seq, hidden]), the positions 0..seq-1 or
// RoBERTa's (Params.PadPositions); TypeIDs is NoSlot for models without
// token type ids (then every token takes type 0 when Params.TokenTypes is
// set). Params.Norm is unused: the LayerNormalization after it is a step
// of its own.
type EmbedStep struct {
	node
	IDs, TypeIDs, Out           SlotID
	Params                      nn.Embeddings
	WordName, PosName, TypeName string
}

func (s *EmbedStep) Operands() Operands { return operands(reads(s.IDs, s.TypeIDs), s.Out) }

// cost counts one add per table after the first and the rows read from
// each table.
func (s *EmbedStep) cost(p *Program) Cost {
	tables := 2.0
	if s.Params.TokenTypes != nil { // a row per token, type 0 without type ids
		tables = 3
	}
	out := p.bytesOf(s.Out)
	return Cost{Kind: KindGather, Label: fmt.Sprintf("Embeddings %d", s.Params.Hidden), Ops: (tables - 1) * out / 4,
		Bytes: (tables+1)*out + p.bytesOf(s.IDs) + p.bytesOf(s.TypeIDs)}
}

func (s *EmbedStep) Call() string { return "nn.EmbedSumParallel" }

func (s *EmbedStep) Describe(sl []*Slot) string {
	padding := ""
	if s.Params.PadPositions {
		padding = fmt.Sprintf(", padding_idx=%d", s.Params.PaddingIdx)
	}
	if s.Params.PositionsFirst {
		padding += ", positions first"
	}
	return fmt.Sprintf("%s = %s(%s, %s; word=%%%s, pos=%%%s, type=%%%s, hidden=%d%s)", slotName(sl, s.Out), s.Call(),
		slotName(sl, s.IDs), slotName(sl, s.TypeIDs), s.WordName, s.PosName, s.TypeName, s.Params.Hidden, padding)
}

func (s *EmbedStep) run(p *Program) error {
	ids := p.bufs[s.IDs]
	if ids.DType != compiler.Int64 || len(ids.Shape) != 2 {
		return fmt.Errorf("%w: Embeddings ids %s%v, want i64 [batch, seq]", compiler.ErrShapeMismatch, ids.DType, ids.Shape)
	}
	batch, seq := int(ids.Shape[0]), int(ids.Shape[1])
	var typeIDs []int64
	if s.TypeIDs != NoSlot {
		t := p.bufs[s.TypeIDs]
		if t.DType != compiler.Int64 || len(t.I64) != len(ids.I64) {
			return fmt.Errorf("%w: token_type_ids %s%v for ids %v", compiler.ErrShapeMismatch, t.DType, t.Shape, ids.Shape)
		}
		typeIDs = t.I64
	}
	out := p.bufs[s.Out]
	if off := p.run.offsets; off != nil { // packed.go: the real tokens only
		resize(out, compiler.Float32, int64(off[len(off)-1]), int64(s.Params.Hidden))
		if err := nn.EmbedSumPacked(p.pool, out.F32, &s.Params, ids.I64, typeIDs, seq, off); err != nil {
			return fmt.Errorf("%w: %v", compiler.ErrInvalidRequest, err)
		}
		return nil
	}
	resize(out, compiler.Float32, int64(batch), int64(seq), int64(s.Params.Hidden))
	if err := nn.EmbedSumParallel(p.pool, out.F32, &s.Params, ids.I64, typeIDs, batch, seq); err != nil {
		return fmt.Errorf("%w: %v", compiler.ErrInvalidRequest, err)
	}
	return nil
}

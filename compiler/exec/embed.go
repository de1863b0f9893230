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
	Node                                             string
	IDs, TypeIDs, Out                                SlotID
	Params                                           nn.Embeddings
	WordName, PosName, TypeName, GammaName, BetaName string
}

func (s *EmbedStep) Call() string   { return "nn.EmbedSumParallel" }
func (s *EmbedStep) Source() string { return s.Node }

func (s *EmbedStep) Describe(sl []*Slot) string {
	padding := ""
	if s.Params.PadPositions {
		padding = fmt.Sprintf(", padding_idx=%d", s.Params.PaddingIdx)
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

// embeddings lowers sqc.Embeddings to an EmbedStep when its tables are f32
// constants.
func (l *lowering) embeddings(n *compiler.Node) bool {
	word, pos := l.constant(n.Inputs[1]), l.constant(n.Inputs[2])
	for _, t := range []*compiler.Tensor{word, pos} {
		if t == nil || t.DType != compiler.Float32 {
			return false
		}
	}
	if len(word.Shape) != 2 || l.dtype(n.Inputs[0]) != compiler.Int64 {
		return false
	}
	h := int(word.Shape[1])
	s := &EmbedStep{
		Node: n.Name, IDs: l.slot(n.Inputs[0]), TypeIDs: NoSlot, Out: l.slot(n.Outputs[0]),
		WordName: n.Inputs[1], PosName: n.Inputs[2],
		Params: nn.Embeddings{Hidden: h, Words: word.F32, Positions: pos.F32},
	}
	s.Params.PaddingIdx, s.Params.PadPositions = compiler.EmbeddingsPaddingIdx(n)
	if len(n.Inputs) == 5 && n.Inputs[4] != "" {
		typ := l.constant(n.Inputs[4])
		if typ == nil || typ.DType != compiler.Float32 {
			return false
		}
		s.TypeName, s.Params.TokenTypes = n.Inputs[4], typ.F32
		if n.Inputs[3] != "" { // else type 0 for every token
			if l.dtype(n.Inputs[3]) != compiler.Int64 {
				return false
			}
			s.TypeIDs = l.slot(n.Inputs[3])
		}
	}
	l.emit(s)
	return true
}

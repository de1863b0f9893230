package exec

import (
	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// embeddings lowers sqc.Embeddings to an EmbedStep when its tables are f32
// constants.
func (l *lowering) embeddings(n *compiler.Node) bool {
	posName := "" // none: no position term
	if len(n.Inputs) > 2 {
		posName = n.Inputs[2]
	}
	word, pos := l.constant(n.Inputs[1]), l.constant(posName)
	if word == nil || word.DType != compiler.Float32 || posName != "" && (pos == nil || pos.DType != compiler.Float32) {
		return false
	}
	var posF32 []float32 // nil without a position table
	if pos != nil {
		posF32 = pos.F32
	}
	if len(word.Shape) != 2 || l.dtype(n.Inputs[0]) != compiler.Int64 {
		return false
	}
	h := int(word.Shape[1])
	s := &EmbedStep{
		node: node{n.Name}, IDs: l.slot(n.Inputs[0]), TypeIDs: NoSlot, Out: l.slot(n.Outputs[0]),
		WordName: n.Inputs[1], PosName: posName,
		Params: nn.Embeddings{Hidden: h, Words: word.F32, Positions: posF32},
	}
	s.Params.PaddingIdx, s.Params.PadPositions = compiler.EmbeddingsPaddingIdx(n)
	s.Params.PositionsFirst = compiler.EmbeddingsPositionsFirst(n)
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

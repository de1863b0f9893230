package compiler

import "fmt"

// embeddingsOp: sqc.Embeddings, made by the passes package's
// FuseEmbeddings from the Gather/Add/Slice chains BERT and DistilBERT
// exports compute their input embeddings with, and from the Gather of
// RoBERTa's and XLM-R's padding-offset position ids (the
// LayerNormalization that follows stays a node of its own, so SmoothQuant
// can fold into it and the runtime can fuse its quantized output).
func embeddingsOp() *OpDef {
	return &OpDef{
		Name: "sqc.Embeddings", Domain: DomainSqc,
		Doc: "Y[b, s] = (Word[ids[b, s]] + Type[type_ids[b, s]]) + Pos[p(b, s)], inputs (ids, Word, Pos[, type_ids, Type]) " +
			"(with positions_first = 1: (Word[ids[b, s]] + Pos[p(b, s)]) + Type[type_ids[b, s]], the order of older transformers and ONNX Runtime's EmbedLayerNormalization) " +
			"with ids and type_ids i64 [batch, seq], Word [vocab, H], Pos [max_positions, H], Type [types, H]; Y is f32 [batch, seq, H]. " +
			"No Type: no type term; Type without type_ids (input 3 empty): every token takes Type's row 0. " +
			"Pos omitted (input 2 empty; ModernBERT, whose positions are rotary, in the attention): no position term, and no padding_idx or positions_first. " +
			"p(b, s) = s, or with padding_idx = P (RoBERTa's create_position_ids_from_input_ids): P + #{j <= s : ids[b, j] != P} " +
			"where ids[b, s] != P, else P.",
		MinInputs: 2, MaxInputs: 5, MinOutputs: 1, MaxOutputs: 1,
		Attrs: []AttrSpec{{Name: "padding_idx", Kind: AttrInt}, {Name: "positions_first", Kind: AttrInt}},
		DTypes: DTypeRule{
			In:   []string{"I", "f32", "f32", "I", "f32"},
			Out:  []string{"f32"},
			Vars: map[string][]DType{"I": {Int64}},
		},
		Shape: embeddingsShape,
		Check: embeddingsCheck,
	}
}

// EmbeddingsPaddingIdx returns a sqc.Embeddings node's padding_idx and
// whether it has one: then position ids count the non-padding ids from
// padding_idx + 1 and padding ids take padding_idx (RoBERTa, XLM-R);
// without it they are 0..seq-1 (BERT, DistilBERT).
func EmbeddingsPaddingIdx(n *Node) (int64, bool) {
	if !n.HasAttr("padding_idx") {
		return 0, false
	}
	return n.AttrInt("padding_idx", 0), true
}

// EmbeddingsPositionsFirst reports whether a sqc.Embeddings node adds the
// position row before the type row ((word + position) + type) rather than
// after it ((word + type) + position): float32 sums in another order are
// other bits, so the node keeps the order of the graph it replaced.
func EmbeddingsPositionsFirst(n *Node) bool { return n.AttrInt("positions_first", 0) != 0 }

func embeddingsCheck(n *Node, _ int64) error {
	if v := n.AttrInt("positions_first", 0); v != 0 && v != 1 {
		return fmt.Errorf("sqc.Embeddings positions_first = %d (want 0 or 1)", v)
	}
	if pad, ok := EmbeddingsPaddingIdx(n); ok && pad < 0 {
		return fmt.Errorf("sqc.Embeddings padding_idx = %d (want >= 0: it is a row of the position table)", pad)
	}
	if (len(n.Inputs) < 3 || n.Inputs[2] == "") && (n.HasAttr("padding_idx") || n.HasAttr("positions_first")) {
		return fmt.Errorf("sqc.Embeddings has padding_idx or positions_first but no position table")
	}
	if len(n.Inputs) == 4 || (len(n.Inputs) == 5 && n.Inputs[3] != "" && n.Inputs[4] == "") {
		return fmt.Errorf("sqc.Embeddings has type_ids but no type table")
	}
	return nil
}

func embeddingsShape(a *InferArgs) ([]Inferred, error) {
	ids, word := a.in(0).Shape, a.in(1).Shape
	if err := requireRank("sqc.Embeddings ids", ids, 2); err != nil {
		return nil, err
	}
	if err := requireRank("sqc.Embeddings word table", word, 2); err != nil {
		return nil, err
	}
	if ids == nil || word == nil {
		return one(unknownShape(3)), nil
	}
	for i, what := range map[int]string{2: "position table", 4: "type table"} {
		if t := a.in(i); t.Present && t.Shape != nil {
			if len(t.Shape) != 2 || !dimsMatch(t.Shape[1], word[1]) {
				return nil, fmt.Errorf("%w: sqc.Embeddings %s %s does not match word table %s", ErrShapeMismatch, what, t.Shape, word)
			}
		}
	}
	return one(Shape{ids[0], ids[1], word[1]}), nil
}

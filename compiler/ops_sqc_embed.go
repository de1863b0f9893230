package compiler

import "fmt"

// embeddingsOp: sqc.Embeddings, made by the passes package's
// FuseEmbeddings from the Gather/Add/Slice chains BERT and DistilBERT
// exports compute their input embeddings with (the LayerNormalization that
// follows stays a node of its own, so SmoothQuant can fold into it and the
// runtime can fuse its quantized output).
func embeddingsOp() *OpDef {
	return &OpDef{
		Name: "sqc.Embeddings", Domain: DomainSqc,
		Doc: "Y[b, s] = (Word[ids[b, s]] + Type[type_ids[b, s]]) + Pos[s], inputs (ids, Word, Pos[, type_ids, Type]) " +
			"with ids and type_ids i64 [batch, seq], Word [vocab, H], Pos [max_positions, H], Type [types, H] (no type term without them); Y is f32 [batch, seq, H].",
		MinInputs: 3, MaxInputs: 5, MinOutputs: 1, MaxOutputs: 1,
		DTypes: DTypeRule{
			In:   []string{"I", "f32", "f32", "I", "f32"},
			Out:  []string{"f32"},
			Vars: map[string][]DType{"I": {Int64}},
		},
		Shape: embeddingsShape,
	}
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

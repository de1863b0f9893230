package compiler

import "fmt"

// maskedSumOp: sqc.MaskedSum(x, mask) {keepdims}, made by the passes
// package's FuseMaskedSum from the masked sum over the tokens that mean
// pooling in a graph starts with (ModernBERT's classifier_pooling mean,
// sentence-transformers' Pooling in an optimum export).
func maskedSumOp() *OpDef {
	return &OpDef{
		Name: "sqc.MaskedSum", Domain: DomainSqc,
		Doc: "Y[b, c] = float32(sum over s, in order, of float64(float32(X[b, s, c] * float32(M[b, s])))), X f32 [batch, seq, H], M i64 [batch, seq] " +
			"(the attention mask), Y f32 [batch, H] ([batch, 1, H] with keepdims = 1): ReduceSum over axis 1 of X times the mask cast to float32, " +
			"as the exported Mul and ReduceSum compute it (runtime/nn.MaskedSum defines the bits).",
		MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
		Attrs:  []AttrSpec{{Name: "keepdims", Kind: AttrInt}},
		DTypes: DTypeRule{In: []string{"f32", "i64"}, Out: []string{"f32"}},
		Shape:  maskedSumShape,
		Check: func(n *Node, _ int64) error {
			if k := n.AttrInt("keepdims", 0); k != 0 && k != 1 {
				return fmt.Errorf("keepdims is %d, want 0 or 1", k)
			}
			return nil
		},
	}
}

func maskedSumShape(a *InferArgs) ([]Inferred, error) {
	x, m := a.in(0).Shape, a.in(1).Shape
	if err := requireRank("sqc.MaskedSum input", x, 3); err != nil {
		return nil, err
	}
	if err := requireRank("sqc.MaskedSum mask", m, 2); err != nil {
		return nil, err
	}
	if x == nil {
		return one(nil), nil
	}
	if m != nil && (!dimsMatch(m[0], x[0]) || !dimsMatch(m[1], x[1])) {
		return nil, fmt.Errorf("%w: sqc.MaskedSum mask %s does not fit input %s", ErrShapeMismatch, m, x)
	}
	if a.Node.AttrInt("keepdims", 0) == 1 {
		return one(Shape{x[0], {Size: 1}, x[2]}), nil
	}
	return one(Shape{x[0], x[2]}), nil
}

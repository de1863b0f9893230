package compiler

import (
	"fmt"
	"math"
)

// OpDefs of the attention ops made by the passes package's
// CanonicalizeAttentionMask and FuseAttention (listed in sqcOps).

// attentionMaskOp: sqc.AttentionMask(mask) {fill} -> additive mask.
func attentionMaskOp() *OpDef {
	return &OpDef{
		Name: "sqc.AttentionMask", Domain: DomainSqc,
		Doc: "Y[b, 0, 0, s] = (M[b, s] != 0) ? 0 : fill, with M [batch, seq] (1 = attend, 0 = padding) and Y float32 [batch, 1, 1, seq]: " +
			"the additive attention mask; fill defaults to the float32 minimum, as HF's (1 - mask) * finfo.min and masked_fill use.",
		MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 1,
		Attrs: []AttrSpec{{Name: "fill", Kind: AttrFloat}},
		DTypes: DTypeRule{
			In: []string{"M"}, Out: []string{"f32"},
			Vars: map[string][]DType{"M": {Int64, Int32, Int8, Uint8, Bool, Float32}},
		},
		Shape: attentionMaskShape,
	}
}

// AttentionMaskDefaultFill is sqc.AttentionMask's fill when the attribute is
// absent: -math.MaxFloat32, torch.finfo(torch.float32).min.
const AttentionMaskDefaultFill = -math.MaxFloat32

func attentionMaskShape(a *InferArgs) ([]Inferred, error) {
	m := a.in(0).Shape
	if err := requireRank("sqc.AttentionMask input", m, 2); err != nil {
		return nil, err
	}
	if m == nil {
		return one(unknownShape(4)), nil
	}
	return one(Shape{m[0], {Size: 1}, {Size: 1}, m[1]}), nil
}

// attentionOp: sqc.Attention(q, k, v[, mask]) {heads, scale}.
func attentionOp() *OpDef {
	return &OpDef{
		Name: "sqc.Attention", Domain: DomainSqc,
		Doc: "Multi-head scaled dot-product attention on unsplit heads: Q [batch, sq, heads*d], K and V [batch, sk, heads*d], optional additive " +
			"Mask broadcastable to [batch, heads, sq, sk]; Y[b, i, h*d+e] = sum_j P[b,h,i,j] * V[b, j, h*d+e] with " +
			"P[b,h,i,:] = softmax_j(scale * sum_c Q[b,i,h*d+c] * K[b,j,h*d+c] + Mask[b,h,i,j]); Y is [batch, sq, heads*d].",
		MinInputs: 3, MaxInputs: 4, MinOutputs: 1, MaxOutputs: 1,
		Attrs: []AttrSpec{
			{Name: "heads", Kind: AttrInt, Required: true},
			{Name: "scale", Kind: AttrFloat, Required: true},
		},
		DTypes: DTypeRule{In: []string{"T", "T", "T", "T"}, Out: []string{"T"}, Vars: map[string][]DType{"T": floatTypes()}},
		Shape:  attentionShape,
		Check: func(n *Node, _ int64) error {
			if h := n.AttrInt("heads", 0); h <= 0 {
				return fmt.Errorf("heads is %d, want > 0", h)
			}
			return nil
		},
	}
}

func attentionShape(a *InferArgs) ([]Inferred, error) {
	q, k, v := a.in(0).Shape, a.in(1).Shape, a.in(2).Shape
	for i, s := range []Shape{q, k, v} {
		if err := requireRank(fmt.Sprintf("sqc.Attention input %d", i), s, 3); err != nil {
			return nil, err
		}
	}
	heads := a.Node.AttrInt("heads", 1)
	for i, s := range []Shape{q, k, v} {
		if s != nil && s[2].Known() && heads > 0 && s[2].Size%heads != 0 {
			return nil, fmt.Errorf("%w: sqc.Attention input %d width %d is not a multiple of %d heads", ErrShapeMismatch, i, s[2].Size, heads)
		}
	}
	if k != nil && v != nil && (!dimsMatch(k[0], v[0]) || !dimsMatch(k[1], v[1]) || !dimsMatch(k[2], v[2])) {
		return nil, fmt.Errorf("%w: sqc.Attention key %s and value %s differ", ErrShapeMismatch, k, v)
	}
	if q != nil && k != nil && (!dimsMatch(q[0], k[0]) || !dimsMatch(q[2], k[2])) {
		return nil, fmt.Errorf("%w: sqc.Attention query %s and key %s do not match", ErrShapeMismatch, q, k)
	}
	if m := a.in(3); m.Present && m.Shape != nil && q != nil && k != nil {
		scores := Shape{q[0], {Size: heads}, q[1], k[1]}
		if len(m.Shape) > 4 {
			return nil, fmt.Errorf("%w: sqc.Attention mask %s has rank above 4", ErrShapeMismatch, m.Shape)
		}
		if _, err := broadcastShapes(scores, m.Shape); err != nil {
			return nil, fmt.Errorf("%w: sqc.Attention mask %s does not broadcast to scores %s", ErrShapeMismatch, m.Shape, scores)
		}
	}
	return one(q.Clone()), nil
}

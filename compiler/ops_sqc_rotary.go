package compiler

import "fmt"

// rotaryOp: sqc.Rotary(x, cos, sin) {heads}, made by the passes package's
// FuseRotary from the rotary position embedding transformers exports
// written out on split heads.
func rotaryOp() *OpDef {
	return &OpDef{
		Name: "sqc.Rotary", Domain: DomainSqc,
		Doc: "Rotary position embedding (RoPE, GPT-NeoX's rotate_half layout) on unsplit heads: X [batch, seq, heads*d], Cos and Sin [1 or batch, seq, d]; " +
			"per head, with h = d/2 and e < h, Y[b,s,e] = float32(X[b,s,e]*Cos[b,s,e]) + float32(-X[b,s,e+h]*Sin[b,s,e]) and " +
			"Y[b,s,e+h] = float32(X[b,s,e+h]*Cos[b,s,e+h]) + float32(X[b,s,e]*Sin[b,s,e+h]) (offsets within the head; Cos and Sin read at batch 0 when theirs is 1): " +
			"x*cos + rotate_half(x)*sin as the exported Mul, Neg, Concat and Add compute it. runtime/nn.Rotary defines the bits. " +
			"With tables_by_position = 1 (set by passes.MarkPositionOnlyBias), the tables are [1, seq, d] and row s depends on s only, not on the " +
			"sequence length nor any input's contents: a shorter sequence's tables are the first rows of a longer one's.",
		MinInputs: 3, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 1,
		Attrs:  []AttrSpec{{Name: "heads", Kind: AttrInt, Required: true}, {Name: "tables_by_position", Kind: AttrInt}},
		DTypes: DTypeRule{In: []string{"f32", "f32", "f32"}, Out: []string{"f32"}},
		Shape:  rotaryShape,
		Check: func(n *Node, _ int64) error {
			if h := n.AttrInt("heads", 0); h <= 0 {
				return fmt.Errorf("heads is %d, want > 0", h)
			}
			if v := n.AttrInt("tables_by_position", 0); v != 0 && v != 1 {
				return fmt.Errorf("tables_by_position is %d, want 0 or 1", v)
			}
			return nil
		},
	}
}

func rotaryShape(a *InferArgs) ([]Inferred, error) {
	x, cos, sin := a.in(0).Shape, a.in(1).Shape, a.in(2).Shape
	for i, s := range []Shape{x, cos, sin} {
		if err := requireRank(fmt.Sprintf("sqc.Rotary input %d", i), s, 3); err != nil {
			return nil, err
		}
	}
	heads := a.Node.AttrInt("heads", 1)
	if x != nil && x[2].Known() && (heads <= 0 || x[2].Size%heads != 0 || (x[2].Size/heads)%2 != 0) {
		return nil, fmt.Errorf("%w: sqc.Rotary input width %d is not %d heads of an even size", ErrShapeMismatch, x[2].Size, heads)
	}
	for i, t := range []Shape{cos, sin} {
		if t == nil || x == nil {
			continue
		}
		if !(t[0].Known() && t[0].Size == 1) && !dimsMatch(t[0], x[0]) || !dimsMatch(t[1], x[1]) {
			return nil, fmt.Errorf("%w: sqc.Rotary table %d %s does not fit input %s", ErrShapeMismatch, i+1, t, x)
		}
		if x[2].Known() && t[2].Known() && heads > 0 && t[2].Size != x[2].Size/heads {
			return nil, fmt.Errorf("%w: sqc.Rotary table %d %s is not one head (%d) wide", ErrShapeMismatch, i+1, t, x[2].Size/heads)
		}
	}
	return one(x.Clone()), nil
}

// RotaryShape checks the run-time shapes of an sqc.Rotary input x and its
// tables for h heads and returns the heads, the head size and the tables'
// batch (1 or x's); batch and seq are x's.
func RotaryShape(h int64, x, cos, sin []int64) (heads, headSize, tableBatch int, err error) {
	if len(x) != 3 || len(cos) != 3 || len(sin) != 3 || h <= 0 || x[2]%h != 0 || (x[2]/h)%2 != 0 {
		return 0, 0, 0, fmt.Errorf("%w: Rotary of %v with tables %v, %v and %d heads", ErrShapeMismatch, x, cos, sin, h)
	}
	d := x[2] / h
	for _, t := range [][]int64{cos, sin} {
		if (t[0] != 1 && t[0] != x[0]) || t[1] != x[1] || t[2] != d || t[0] != cos[0] {
			return 0, 0, 0, fmt.Errorf("%w: Rotary table %v does not fit input %v with %d heads", ErrShapeMismatch, t, x, h)
		}
	}
	return int(h), int(d), int(cos[0]), nil
}

// RotaryTablesByPosition reports whether an sqc.Rotary node's tables are
// proved to depend on positions only (tables_by_position = 1), so that a
// packed batch may give each sequence their first rows.
func RotaryTablesByPosition(n *Node) bool { return n.AttrInt("tables_by_position", 0) == 1 }

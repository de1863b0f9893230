package compiler

import (
	"fmt"
	"math"
)

// disentangledBiasOp: sqc.DisentangledBias(q, pos_key, c2p_index, k,
// pos_query, p2c_index) {heads, divisor}, DeBERTa's relative attention
// terms, made by the passes package's FuseDisentangledBias; either triple
// may be omitted.
func disentangledBiasOp() *OpDef {
	return &OpDef{
		Name: "sqc.DisentangledBias", Domain: DomainSqc,
		Doc: "DeBERTa's disentangled attention terms, the bias sqc.Attention adds to its scores: Q and K [batch, seq, heads*d], PosKey and PosQuery " +
			"[rows, heads*d] (the relative embeddings through the key and query projections), C2PIndex and P2CIndex i64 [seq, seq] in [0, rows); " +
			"Y [batch, heads, seq, seq] = c2p + p2c with c2p[b,h,i,j] = float32(dot(Q[b,i,h], PosKey[C2PIndex[i,j],h]) / divisor) and " +
			"p2c[b,h,i,j] = float32(dot(K[b,j,h], PosQuery[P2CIndex[j,i],h]) / divisor), X[.,h] being columns h*d .. (h+1)*d; " +
			"inputs 0-2 (c2p) or 3-5 (p2c) may be omitted, and Y is then the other term. runtime/nn.DisentangledBias defines the bits.",
		// Either term's inputs may be omitted; Check requires one of them.
		MinInputs: 0, MaxInputs: 6, MinOutputs: 1, MaxOutputs: 1,
		Attrs:  []AttrSpec{{Name: "heads", Kind: AttrInt, Required: true}, {Name: "divisor", Kind: AttrFloat, Required: true}},
		DTypes: DTypeRule{In: []string{"f32", "f32", "i64", "f32", "f32", "i64"}, Out: []string{"f32"}},
		Shape:  disentangledBiasShape,
		Check: func(n *Node, _ int64) error {
			if h := n.AttrInt("heads", 0); h <= 0 {
				return fmt.Errorf("heads is %d, want > 0", h)
			}
			if d := n.AttrFloat("divisor", 0); !(d > 0) || math.IsInf(float64(d), 0) {
				return fmt.Errorf("divisor is %v, want a positive finite number", d)
			}
			if !hasInput(n, 0) && !hasInput(n, 3) {
				return fmt.Errorf("neither term: inputs 0 (Q) and 3 (K) are both omitted")
			}
			for _, t := range [][3]int{{0, 1, 2}, {3, 4, 5}} {
				if hasInput(n, t[0]) != hasInput(n, t[1]) || hasInput(n, t[0]) != hasInput(n, t[2]) {
					return fmt.Errorf("inputs %d-%d are given in part: a term needs all three", t[0], t[2])
				}
			}
			return nil
		},
	}
}

func disentangledBiasShape(a *InferArgs) ([]Inferred, error) {
	heads := a.Node.AttrInt("heads", 1)
	var x, idx Shape
	for _, t := range [][3]int{{0, 1, 2}, {3, 4, 5}} {
		if !a.in(t[0]).Present {
			continue
		}
		rows, pos, index := a.in(t[0]).Shape, a.in(t[1]).Shape, a.in(t[2]).Shape
		for i, s := range []Shape{rows, pos, index} {
			if err := requireRank(fmt.Sprintf("sqc.DisentangledBias input %d", t[i]), s, []int{3, 2, 2}[i]); err != nil {
				return nil, err
			}
		}
		if rows != nil && rows[2].Known() && (heads <= 0 || rows[2].Size%heads != 0) {
			return nil, fmt.Errorf("%w: sqc.DisentangledBias input %d width %d is not %d heads", ErrShapeMismatch, t[0], rows[2].Size, heads)
		}
		if rows != nil && pos != nil && !dimsMatch(rows[2], pos[1]) {
			return nil, fmt.Errorf("%w: sqc.DisentangledBias embeddings %s are not as wide as input %d %s", ErrShapeMismatch, pos, t[0], rows)
		}
		if rows != nil && index != nil && (!dimsMatch(index[0], rows[1]) || !dimsMatch(index[1], rows[1])) {
			return nil, fmt.Errorf("%w: sqc.DisentangledBias index %s is not [seq, seq] for input %d %s", ErrShapeMismatch, index, t[0], rows)
		}
		if x == nil {
			x, idx = rows, index
		}
	}
	if x == nil {
		return one(unknownShape(4)), nil
	}
	seq := x[1]
	if !seq.Known() && seq.Param == "" && idx != nil {
		seq = idx[0]
	}
	return one(Shape{x[0], {Size: heads}, seq, seq}), nil
}

// DisentangledBiasSize is an sqc.DisentangledBias call's sizes at run time.
type DisentangledBiasSize struct{ Batch, Seq, HeadSize, Rows int }

// DisentangledBiasShapes checks the run-time shapes of an
// sqc.DisentangledBias node's inputs for h heads (nil for an omitted
// input; each given term is rows [batch, seq, heads*d], its embeddings
// [rows, heads*d] and index [seq, seq], the two terms alike) and returns
// the call's sizes.
func DisentangledBiasShapes(h int64, in [6][]int64) (DisentangledBiasSize, error) {
	var size DisentangledBiasSize
	given := false
	for _, t := range [][3]int{{0, 1, 2}, {3, 4, 5}} {
		x, pos, index := in[t[0]], in[t[1]], in[t[2]]
		if x == nil {
			continue
		}
		if len(x) != 3 || len(pos) != 2 || len(index) != 2 || h <= 0 || x[2]%h != 0 || pos[1] != x[2] || index[0] != x[1] || index[1] != x[1] {
			return size, fmt.Errorf("%w: DisentangledBias term of %v with embeddings %v, index %v and %d heads", ErrShapeMismatch, x, pos, index, h)
		}
		s := DisentangledBiasSize{Batch: int(x[0]), Seq: int(x[1]), HeadSize: int(x[2] / h), Rows: int(pos[0])}
		if given && s != size {
			return size, fmt.Errorf("%w: DisentangledBias terms of %v and %v", ErrShapeMismatch, in[0], in[3])
		}
		size = s
		given = true
	}
	if !given {
		return size, fmt.Errorf("%w: DisentangledBias without a term", ErrShapeMismatch)
	}
	return size, nil
}

// hasInput reports whether node n is given input i (present and not "").
func hasInput(n *Node, i int) bool { return i < len(n.Inputs) && n.Inputs[i] != "" }

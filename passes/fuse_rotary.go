package passes

import (
	"github.com/sqc-dev/sqc/compiler"
)

// FuseRotary replaces the rotary position embedding (RoPE) transformers
// applies to the split heads of Q and K (apply_rotary_pos_emb with
// rotate_half: ModernBERT, NomicBERT, GTE's NewModel), as torch exports it,
//
//	X = Transpose<0,2,1,3>(Reshape(x, [B, S, H, D]))
//	Add(Mul(X, cos), Mul(Concat(Neg(X[..., D/2:]), X[..., :D/2]), sin))
//
// (operands of each Add and Mul in either order; cos and sin [1 or B, 1,
// S, D]), by the same split of sqc.Rotary(x, cos', sin') {heads: H}, cos'
// and sin' the tables without their head axis: the unsplit-heads form
// FuseAttention takes its Q and K in. NomicBERT's hub code rotates the
// heads before their transpose, X = Reshape(x, [B, S, H, D]) with cos and
// sin [S, 1, D] or [1 or B, S, 1, D]; that becomes the Reshape of
// sqc.Rotary(x, cos', sin') alone, cos' = Transpose<1,0,2>(cos) ([1, S,
// D]) or cos without its head axis. sqc.Rotary computes the same float32
// products and sums (runtime/nn.Rotary), so the bits do not change. The
// head split must be the one FuseAttention proves (shape inference gives
// [B, S, H, D] with x's B and S).
var FuseRotary = Pass{Name: "FuseRotary", Run: fuseRotary}

const opRotary = "sqc.Rotary"

func fuseRotary(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	insert := map[*compiler.Node][]*compiler.Node{}
	for _, n := range g.Nodes {
		cur.n = n
		if n.Op != "Add" || insert[n] != nil {
			continue
		}
		m, ok := matchRotary(ix, n)
		if !ok {
			continue
		}
		stem := nm.Fresh(n.Name + "/Rotary")
		var nodes []*compiler.Node
		tables := [2]string{}
		for i, t := range []string{m.cos, m.sin} {
			var table *compiler.Node
			tables[i], table = rotaryTableWithoutHeads(g, ix, nm, stem, t, m.headsFirst)
			if table != nil {
				nodes = append(nodes, table)
			}
		}
		rot := &compiler.Node{Name: stem, Op: opRotary, Inputs: []string{m.x, tables[0], tables[1]},
			Outputs: []string{nm.Fresh(stem + "/out")}, Attrs: map[string]compiler.Attr{"heads": compiler.IntAttr(m.heads)}}
		reshape := &compiler.Node{Name: stem + "/Reshape", Op: "Reshape", Inputs: []string{rot.Outputs[0], intsConst(g, nm, stem+"/heads_shape", 0, 0, m.heads, m.d)},
			Outputs: []string{n.Outputs[0]}}
		if !m.headsFirst {
			insert[n] = append(nodes, rot, reshape)
			continue
		}
		reshape.Outputs = []string{nm.Fresh(stem + "/heads")}
		tr := &compiler.Node{Name: stem + "/Transpose", Op: "Transpose", Inputs: []string{reshape.Outputs[0]},
			Outputs: []string{n.Outputs[0]}, Attrs: map[string]compiler.Attr{"perm": compiler.IntsAttr(permSplit...)}}
		insert[n] = append(nodes, rot, reshape, tr)
	}
	return replaceByMany(g, insert)
}

type rotaryMatch struct {
	x, cos, sin string
	heads, d    int64
	// headsFirst: X is the transposed split [B, H, S, D] (tables [1 or B,
	// 1, S, D]); else the split before its transpose, [B, S, H, D]
	// (tables [S, 1, D] or [1 or B, S, 1, D]).
	headsFirst bool
}

// rotaryTableWithoutHeads returns table t ([1 or B, 1, S, D] for the
// heads-first layout, else [S, 1, D] or [1 or B, S, 1, D]) as sqc.Rotary
// reads it, [1 or B, S, D], and the node that computes that, if one is
// needed: the exporter's Unsqueeze of a table without the head axis is
// read through.
func rotaryTableWithoutHeads(g *compiler.Graph, ix *index, nm *compiler.Namer, stem, t string, headsFirst bool) (string, *compiler.Node) {
	axis := int64(1)
	if !headsFirst {
		if v := valueInfo(g, t); v != nil && len(v.Shape) == 3 { // [S, 1, D] (matchRotary checked its form)
			tr := &compiler.Node{Name: nm.Fresh(stem + "/table"), Op: "Transpose", Inputs: []string{t},
				Attrs: map[string]compiler.Attr{"perm": compiler.IntsAttr(1, 0, 2)}}
			tr.Outputs = []string{tr.Name}
			return tr.Outputs[0], tr
		}
		axis = 2
	}
	if u := ix.producedBy(t, "Unsqueeze"); u != nil {
		if axes, ok := ix.axes(u); ok && len(axes) == 1 && axes[0] == axis {
			return u.Inputs[0], nil
		}
	}
	name := nm.Fresh(stem + "/table")
	return name, squeezeNode(g, nm, name, t, name, axis)
}

// matchRotary matches add = X*cos + rotate_half(X)*sin.
func matchRotary(ix *index, add *compiler.Node) (rotaryMatch, bool) {
	var m rotaryMatch
	for _, order := range [][2]int{{0, 1}, {1, 0}} {
		direct, rotated := ix.producedBy(add.Inputs[order[0]], "Mul"), ix.producedBy(add.Inputs[order[1]], "Mul")
		if direct == nil || rotated == nil {
			continue
		}
		for _, do := range [][2]int{{0, 1}, {1, 0}} {
			xs, cos := direct.Inputs[do[0]], direct.Inputs[do[1]]
			x, heads, width, _, ok := splitHeads(ix, xs, permSplit)
			headsFirst := ok
			if !ok {
				x, heads, width, _, ok = headReshape(ix, xs)
			}
			if !ok || width%(2*heads) != 0 {
				continue
			}
			d := width / heads
			table := func(t string) bool { return rotaryTable(ix, t, xs, d, headsFirst) }
			for _, ro := range [][2]int{{0, 1}, {1, 0}} {
				rh, sin := rotated.Inputs[ro[0]], rotated.Inputs[ro[1]]
				if rotateHalfOf(ix, rh, xs, d) && table(cos) && table(sin) {
					m = rotaryMatch{x: x, cos: cos, sin: sin, heads: heads, d: d, headsFirst: headsFirst}
					return m, true
				}
			}
		}
	}
	return m, false
}

// rotateHalfOf reports whether name is Concat(Neg(X[..., d/2:]),
// X[..., :d/2]) on the last axis of the 4-D X.
func rotateHalfOf(ix *index, name, x string, d int64) bool {
	c := ix.producedBy(name, "Concat")
	if c == nil || len(c.Inputs) != 2 || (c.AttrInt("axis", 0) != -1 && c.AttrInt("axis", 0) != 3) {
		return false
	}
	neg := ix.producedBy(c.Inputs[0], "Neg")
	return neg != nil && lastAxisSlice(ix, neg.Inputs[0], x, d/2, d) && lastAxisSlice(ix, c.Inputs[1], x, 0, d/2)
}

// lastAxisSlice reports whether name is Slice(x) taking [from, to) of the
// last axis (of size d; an end past it, as exporters write "to the end",
// counts as d) with step 1.
func lastAxisSlice(ix *index, name, x string, from, to int64) bool {
	s := ix.producedBy(name, "Slice")
	if s == nil || s.Inputs[0] != x {
		return false
	}
	start, e, axis, ok := ix.oneAxisSlice(s)
	if !ok || (axis != -1 && axis != 3) {
		return false
	}
	if to == 2*from && e >= to { // the upper half: any end at or past d
		e = to
	}
	return start == from && e == to
}

// rotaryTable reports whether name is a float32 table for the split heads
// x: [1 or B, 1, S, d] for x [B, H, S, d] (headsFirst), [S, 1, d] or [1
// or B, S, 1, d] for x [B, S, H, d].
func rotaryTable(ix *index, name, x string, d int64, headsFirst bool) bool {
	t, xv := valueInfo(ix.g, name), valueInfo(ix.g, x)
	if t == nil || xv == nil || t.DType != compiler.Float32 || len(xv.Shape) != 4 {
		return false
	}
	s, one := t.Shape, func(d compiler.Dim) bool { return d.Known() && d.Size == 1 }
	width := len(s) > 0 && s[len(s)-1].Known() && s[len(s)-1].Size == d
	switch {
	case headsFirst:
		return len(s) == 4 && (one(s[0]) || sameDim(s[0], xv.Shape[0])) && one(s[1]) && sameDim(s[2], xv.Shape[2]) && width
	case len(s) == 3:
		return sameDim(s[0], xv.Shape[1]) && one(s[1]) && width
	}
	return len(s) == 4 && (one(s[0]) || sameDim(s[0], xv.Shape[0])) && sameDim(s[1], xv.Shape[1]) && one(s[2]) && width
}

package passes

import (
	"github.com/sqc-dev/sqc/compiler"
)

// UnmergeBatchHeads rewrites attention computed on batch and heads merged
// into one axis, as transformers' DeBERTa writes it (torch.bmm on
// [batch·heads, seq, d]), into the same ops on [batch, heads, seq, d],
// the form FuseAttention and FuseDisentangledBias match.
//
// A merged value is a rank-3 value of dim 0 heads·batch. Its twin holds
// the same elements with that axis split in two: element [i·heads + h,
// r, c] of the merged value is [i, h, r, c] of the twin. Twins are made
// from the ops whose meaning does not depend on where the axis splits:
//
//   - Reshape of a [B, H, r, c] value to [H·B, r, c] merges: its twin is
//     the input itself (the elements keep their order). Reshape of a
//     merged value to [B, H, r, c] splits: its readers read the twin
//     instead (an Identity of it stays for a graph output). These are
//     the only nodes replaced.
//   - Transpose<0,2,1> becomes Transpose<0,1,3,2>.
//   - MatMul of two merged values, Add, Sub, Mul and Div of merged values
//     and values of rank <= 2 (which broadcast over the trailing axes
//     alone either way), and GatherElements along the last axis, keep
//     their meaning on twins (the batch axes pair row for row). x + 0,
//     with 0 a scalar constant, is x's twin itself: the sum equals x but
//     for the sign of a zero, which no score compared or exponentiated
//     tells apart.
//   - Tile(T, [B, 1, 1]) of a [H, r, c] value repeats T for every
//     sequence: its twin is T, read with the batch axis broadcast, which
//     MatMul and the elementwise ops above do for a twin of rank 3 (such
//     a shared twin never reaches a split: a node's twin is shared only
//     when all its merged inputs' twins are). The repeat count is proved
//     by the Tile's inferred shape: H·B on axis 0 and T's other dims kept.
//   - Expand(I, shape) of an index I [1, r, c] to [H·B, r, c] (torch's
//     expand of the relative positions for GatherElements) becomes
//     Expand(I [r, c], [B, H, r, c]), the shape's first element divided
//     by H: exact, since inference proved it H·B.
//
// Inference tracks H·B as the scaled symbol "H·batch" (compiler.ScaledParam)
// through Reshape's -1, Tile and the Shape arithmetic that computes these
// shapes, which is what proves each merged dim. The merged nodes stay
// until nothing reads them: the shape arithmetic feeding the replaced
// splits, Tiles and Expands goes with them.
var UnmergeBatchHeads = Pass{Name: "UnmergeBatchHeads", Run: unmergeBatchHeads}

// headTwin is a merged value's twin.
type headTwin struct {
	name   string
	batch  compiler.Dim // B
	heads  int64        // H
	shared bool         // name is [H, r, c], the same for every sequence
}

func unmergeBatchHeads(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	u := &unmerger{g: g, ix: ix, nm: g.Namer(), twins: map[string]headTwin{}, splits: map[*compiler.Node]string{}}
	repl := map[*compiler.Node][]*compiler.Node{}
	for _, n := range g.Nodes {
		cur.n = n
		if r := u.visit(n); r != nil {
			repl[n] = r
		}
	}
	if len(u.splits) == 0 {
		return false, nil
	}
	// A split's readers read the twin (the matchers follow producers, and
	// an Identity would hide them); one that is a graph output keeps it.
	for n, twin := range u.splits {
		if !ix.isOutput[n.Outputs[0]] {
			renameInputs(g, n.Outputs[0], twin)
			repl[n] = []*compiler.Node{}
		}
	}
	return replaceByMany(g, repl)
}

type unmerger struct {
	g      *compiler.Graph
	ix     *index
	nm     *compiler.Namer
	twins  map[string]headTwin
	splits map[*compiler.Node]string // split Reshapes replaced, and their twins
}

// mergedDim is dim 0 of a merged value of the given batch and heads.
func mergedDim(batch compiler.Dim, heads int64) compiler.Dim {
	if batch.Known() {
		return compiler.Dim{Size: batch.Size * heads}
	}
	if batch.Param == "" {
		return compiler.Dim{Size: -1}
	}
	c, base := compiler.SplitScaledParam(batch.Param)
	return compiler.SymDim(compiler.ScaledParam(c*heads, base))
}

// shapeOf returns name's inferred shape, nil when unknown.
func (u *unmerger) shapeOf(name string) compiler.Shape {
	if v := valueInfo(u.g, name); v != nil {
		return v.Shape
	}
	return nil
}

// merged reports whether out is rank 3 with dim 0 batch·heads.
func (u *unmerger) merged(out string, batch compiler.Dim, heads int64) bool {
	s := u.shapeOf(out)
	return len(s) == 3 && sameDim(s[0], mergedDim(batch, heads))
}

// visit makes the twin of n's output when it can, returning the nodes that
// replace n (n itself first when it stays), or nil to leave n alone.
func (u *unmerger) visit(n *compiler.Node) []*compiler.Node {
	if len(n.Outputs) != 1 {
		return nil
	}
	out := n.Outputs[0]
	switch n.Op {
	case "Reshape":
		return u.reshape(n, out)
	case "Transpose":
		t, ok := u.twins[n.Inputs[0]]
		if !ok || !permIs(n, []int64{0, 2, 1}) || !u.merged(out, t.batch, t.heads) {
			return nil
		}
		perm := []int64{0, 1, 3, 2}
		if t.shared {
			perm = []int64{0, 2, 1}
		}
		return u.emit(n, t, "Transpose", []string{t.name}, map[string]compiler.Attr{"perm": compiler.IntsAttr(perm...)})
	case "Add", "Sub", "Mul", "Div", "MatMul":
		return u.binary(n, out)
	case "GatherElements":
		d, okD := u.twins[n.Inputs[0]]
		i, okI := u.twins[n.Inputs[1]]
		if axis := n.AttrInt("axis", 0); !okD || !okI || d.shared || i.shared || (axis != -1 && axis != 2) ||
			!sameDim(d.batch, i.batch) || d.heads != i.heads || !u.merged(out, d.batch, d.heads) {
			return nil
		}
		return u.emit(n, d, "GatherElements", []string{d.name, i.name}, map[string]compiler.Attr{"axis": compiler.IntAttr(-1)})
	case "Tile":
		return u.tile(n, out)
	case "Expand":
		return u.expand(n, out)
	}
	return nil
}

// emit adds node op(inputs) computing out's twin, shaped like model's
// (shared or not), after n.
func (u *unmerger) emit(n *compiler.Node, model headTwin, op string, inputs []string, attrs map[string]compiler.Attr) []*compiler.Node {
	name := u.nm.Fresh(n.Outputs[0] + "/unmerged")
	u.twins[n.Outputs[0]] = headTwin{name: name, batch: model.batch, heads: model.heads, shared: model.shared}
	return []*compiler.Node{n, {Name: u.nm.Fresh(n.Name + "/unmerged"), Op: op, Inputs: inputs, Outputs: []string{name}, Attrs: attrs}}
}

// reshape handles the merging and splitting Reshapes.
func (u *unmerger) reshape(n *compiler.Node, out string) []*compiler.Node {
	in, os := u.shapeOf(n.Inputs[0]), u.shapeOf(out)
	if t, ok := u.twins[n.Inputs[0]]; ok {
		// A split: [H·B, r, c] to [B, H, r, c].
		if t.shared || len(os) != 4 || len(in) != 3 || !sameDim(os[0], t.batch) || !os[1].Known() || os[1].Size != t.heads ||
			!sameDim(os[2], in[1]) || !sameDim(os[3], in[2]) {
			return nil
		}
		u.splits[n] = t.name
		return []*compiler.Node{{Name: n.Name, Op: "Identity", Inputs: []string{t.name}, Outputs: []string{out}, Attrs: map[string]compiler.Attr{}}}
	}
	// A merge: [B, H, r, c] to [H·B, r, c].
	if len(in) != 4 || len(os) != 3 || !in[1].Known() || in[1].Size < 2 || !u.merged(out, in[0], in[1].Size) ||
		!sameDim(os[1], in[2]) || !sameDim(os[2], in[3]) {
		return nil
	}
	u.twins[out] = headTwin{name: n.Inputs[0], batch: in[0], heads: in[1].Size}
	return nil
}

// binary handles MatMul and the elementwise ops.
func (u *unmerger) binary(n *compiler.Node, out string) []*compiler.Node {
	if len(n.Inputs) != 2 {
		return nil
	}
	if n.Op == "Add" {
		for k := range 2 {
			if t, ok := u.twins[n.Inputs[k]]; ok && u.ix.scalarNear(n.Inputs[1-k], 0, 0) && u.merged(out, t.batch, t.heads) {
				u.twins[out] = t
				return nil
			}
		}
	}
	var model *headTwin
	inputs := make([]string, 2)
	for k, in := range n.Inputs {
		if t, ok := u.twins[in]; ok {
			if model != nil && (!sameDim(model.batch, t.batch) || model.heads != t.heads) {
				return nil
			}
			if model == nil || model.shared {
				model = &t
			}
			inputs[k] = t.name
			continue
		}
		if n.Op == "MatMul" || u.shapeOf(in).Rank() < 0 || u.shapeOf(in).Rank() > 2 {
			return nil
		}
		inputs[k] = in
	}
	if model == nil || !u.merged(out, model.batch, model.heads) {
		return nil
	}
	return u.emit(n, *model, n.Op, inputs, n.Attrs)
}

// tile handles Tile(T, [B, 1, 1]) of a per-head T [H, r, c].
func (u *unmerger) tile(n *compiler.Node, out string) []*compiler.Node {
	t, os := u.shapeOf(n.Inputs[0]), u.shapeOf(out)
	if len(t) != 3 || len(os) != 3 || !t[0].Known() || t[0].Size < 2 || !sameDim(t[1], os[1]) || !sameDim(t[2], os[2]) ||
		!t[1].Known() || t[1].Size == 0 || !t[2].Known() || t[2].Size == 0 {
		return nil
	}
	heads := t[0].Size
	c, base := compiler.SplitScaledParam(os[0].Param)
	var batch compiler.Dim
	switch {
	case os[0].Param != "" && c%heads == 0:
		batch = compiler.SymDim(compiler.ScaledParam(c/heads, base))
	case os[0].Known() && os[0].Size%heads == 0:
		batch = compiler.Dim{Size: os[0].Size / heads}
	default:
		return nil
	}
	u.twins[out] = headTwin{name: n.Inputs[0], batch: batch, heads: heads, shared: true}
	return nil
}

// expand handles Expand(I [1, r, c], shape) to [H·B, r, c], for a
// GatherElements index. B and H come from the merged values the
// GatherElements reads; the Expand is rewritten only for such a reader.
func (u *unmerger) expand(n *compiler.Node, out string) []*compiler.Node {
	idx, os := u.shapeOf(n.Inputs[0]), u.shapeOf(out)
	if len(idx) != 3 || !idx[0].Known() || idx[0].Size != 1 || len(os) != 3 || !sameDim(idx[1], os[1]) || !sameDim(idx[2], os[2]) {
		return nil
	}
	var data *headTwin
	for _, r := range u.ix.consumers[out] {
		if r.Op == "GatherElements" && len(r.Inputs) == 2 && r.Inputs[1] == out {
			if t, ok := u.twins[r.Inputs[0]]; ok && !t.shared && u.merged(out, t.batch, t.heads) {
				data = &t
				break
			}
		}
	}
	if data == nil {
		return nil
	}
	g, nm, h := u.g, u.nm, data.heads
	stem := n.Name + "/unmerged"
	first := nm.Fresh(stem + "/merged")
	batch := nm.Fresh(stem + "/batch")
	shape := nm.Fresh(stem + "/shape")
	rows := nm.Fresh(stem + "/index")
	nodes := []*compiler.Node{n,
		{Name: nm.Fresh(stem + "/Slice"), Op: "Slice", Inputs: []string{n.Inputs[1], intsConst(g, nm, stem+"/zero", 0), intsConst(g, nm, stem+"/one", 1)}, Outputs: []string{first}},
		{Name: nm.Fresh(stem + "/Div"), Op: "Div", Inputs: []string{first, intsConst(g, nm, stem+"/heads", h)}, Outputs: []string{batch}},
		// Expand broadcasts the index's own trailing dims against 1.
		{Name: nm.Fresh(stem + "/Concat"), Op: "Concat", Inputs: []string{batch, intsConst(g, nm, stem+"/heads", h), intsConst(g, nm, stem+"/rest", 1, 1)},
			Outputs: []string{shape}, Attrs: map[string]compiler.Attr{"axis": compiler.IntAttr(0)}},
		squeezeNode(g, nm, nm.Fresh(stem+"/Squeeze"), n.Inputs[0], rows, 0),
	}
	e := u.emit(n, *data, "Expand", []string{rows, shape}, map[string]compiler.Attr{})
	return append(nodes, e[1])
}

package passes

import (
	"math"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
)

// SimplifyShapeOps rewrites data movement that inferred shapes prove
// simpler, in the forms torch.onnx's dynamo exporter writes:
//
//   - Reshape(Transpose<0,2,1>(Reshape(x, [-1, a, b])), [lead..., b, a]),
//     where a and b are x's last two dims and lead its leading ones,
//     becomes Transpose(x) of its last two axes. onnxscript's
//     scaled_dot_product_attention writes Kᵀ so (a static permutation on
//     a tensor of any rank); FuseAttention matches Kᵀ as the Transpose it
//     is. The first Reshape keeps x's rows of a·b elements in order and
//     only merges the leading dims, the second only splits them again, so
//     element [lead, j, i] of the result is x[lead, i, j].
//   - A Slice whose output has provably its input's shape, with unit
//     steps, keeps every element and becomes an Identity: transformers
//     4.57's attention_mask[:, :, :, :key_len] on a mask that is key_len
//     wide already.
//   - Shape(x) whose only readers are Gathers of constant positions, each
//     picking a dim of x that a graph input has at the same position
//     (the same symbol), becomes Shape of that input: MPNet's encoder
//     reads the sequence length from the hidden state, which a packed
//     batch holds as [tokens, hidden] (exec's packed.go); the input ids
//     keep the padded [batch, seq] that the length means. The executor
//     checks every input's symbols against each other, so the two dims
//     are equal in every run.
//   - Any other Shape(x) of a non-input x whose leading dims are a graph
//     input's, the same symbols at the same positions, and whose other
//     dims are known becomes Concat(Shape(input), those sizes): DeBERTa
//     reads the sequence length from the embeddings by a Slice of their
//     shape, which the rule above does not take. The result is the same
//     vector in every run, for the reason above.
//   - Concat operands with a static extent 0 on the concat axis add
//     nothing and are dropped (a Concat left with one operand becomes an
//     Identity): NomicBERT's rotary embedding concatenates the rotated
//     part with x[..., rotary_dim:], which is empty when the rotary
//     embedding covers the whole head.
//   - Gather(Concat(in_0, ..., in_k), i, axis) along the Concat's axis,
//     every in_j of extent 1 there and i a constant scalar, is in_i with
//     that axis removed: torch.stack then indexing (NomicBERT's
//     stack((q, k, v), dim=2) read back as qkv[:, :, i]) gives the
//     stacked value itself. It becomes Identity(x) where in_i is
//     Unsqueeze(x) at that axis, else Squeeze(in_i, axis).
//   - A float Range(start, Cast(n), delta) with start and delta constant
//     integers and n an int64 scalar (torch.arange(seq, dtype=float32):
//     NomicBERT's rotary positions) becomes Cast(Range(start, n, delta))
//     of int64 constants: the same values (integers below 2^24 are exact
//     in float32), and shape inference gives the integer Range its length
//     symbol, which MarkPositionOnlyBias needs.
//
// Proof is by dims that are the same known size or the same symbol
// (sameDim); a dim inference leaves unknown proves nothing, and the node
// stays.
var SimplifyShapeOps = Pass{Name: "SimplifyShapeOps", Run: simplifyShapeOps}

func simplifyShapeOps(g *compiler.Graph) (bool, error) {
	ix := newIndex(g)
	repl := map[*compiler.Node]*compiler.Node{}
	many := map[*compiler.Node][]*compiler.Node{}
	for _, n := range g.Nodes {
		switch n.Op {
		case "Reshape":
			if x, perm, ok := matchReshapedSwap(ix, n); ok {
				repl[n] = &compiler.Node{Name: n.Name, Op: "Transpose", Inputs: []string{x}, Outputs: []string{n.Outputs[0]},
					Attrs: map[string]compiler.Attr{"perm": compiler.IntsAttr(perm...)}}
			}
		case "Shape":
			if y, ok := shapeSourceInput(ix, n); ok {
				r := &compiler.Node{Name: n.Name, Op: "Shape", Inputs: []string{y}, Outputs: []string{n.Outputs[0]}, Attrs: map[string]compiler.Attr{}}
				g.Values[n.Outputs[0]] = &compiler.Value{Name: n.Outputs[0], DType: compiler.Int64, Shape: compiler.StaticShape(int64(len(valueInfo(g, y).Shape)))}
				repl[n] = r
			} else if nodes, ok := shapeFromInput(g, n); ok {
				many[n] = nodes
			}
		case "Slice":
			if keepsAll(ix, n) {
				repl[n] = &compiler.Node{Name: n.Name, Op: "Identity", Inputs: []string{n.Inputs[0]}, Outputs: []string{n.Outputs[0]}, Attrs: map[string]compiler.Attr{}}
			}
		case "Concat":
			if r, ok := withoutEmptyOperands(ix, n); ok {
				repl[n] = r
			}
		case "Gather":
			if r, ok := stackedOperand(g, ix, n); ok {
				repl[n] = r
			}
		case "Range":
			if nodes, ok := integerRange(g, ix, n); ok {
				many[n] = nodes
			}
		}
	}
	replaceNodes(g, repl)
	// Last: replaceByMany infers shapes, which needs repl's nodes (whose
	// values' shapes are set above) in place.
	if _, err := replaceByMany(g, many); err != nil {
		return false, err
	}
	return len(repl)+len(many) > 0, nil
}

// matchReshapedSwap matches the outer Reshape of Reshape(Transpose<0,2,1>(
// Reshape(x, ...)), ...) swapping x's last two axes, and returns x and the
// permutation that does it in one Transpose.
func matchReshapedSwap(ix *index, outer *compiler.Node) (string, []int64, bool) {
	tr := ix.producedBy(outer.Inputs[0], "Transpose")
	if tr == nil || !permIs(tr, []int64{0, 2, 1}) {
		return "", nil, false
	}
	inner := ix.producedBy(tr.Inputs[0], "Reshape")
	if inner == nil {
		return "", nil, false
	}
	x := inner.Inputs[0]
	xv, mid, out := valueInfo(ix.g, x), valueInfo(ix.g, inner.Outputs[0]), valueInfo(ix.g, outer.Outputs[0])
	if xv == nil || mid == nil || out == nil {
		return "", nil, false
	}
	r := len(xv.Shape)
	if r < 3 || len(mid.Shape) != 3 || len(out.Shape) != r {
		return "", nil, false
	}
	a, b := xv.Shape[r-2], xv.Shape[r-1]
	if !sameDim(mid.Shape[1], a) || !sameDim(mid.Shape[2], b) || !sameDim(out.Shape[r-2], b) || !sameDim(out.Shape[r-1], a) {
		return "", nil, false
	}
	for i := range r - 2 {
		if !sameDim(out.Shape[i], xv.Shape[i]) {
			return "", nil, false
		}
	}
	perm := make([]int64, r)
	for i := range perm {
		perm[i] = int64(i)
	}
	perm[r-2], perm[r-1] = perm[r-1], perm[r-2]
	return x, perm, true
}

// keepsAll reports whether Slice node n provably returns its input: every
// step is 1 and the output's shape is the input's, dim by dim.
func keepsAll(ix *index, n *compiler.Node) bool {
	if len(n.Inputs) < 3 || n.HasAttr("starts") { // opset-10+ form only
		return false
	}
	if len(n.Inputs) > 4 && n.Inputs[4] != "" {
		steps := n.Inputs[4]
		s, ok := ix.ints(steps)
		if !ok || slices.ContainsFunc(s, func(v int64) bool { return v != 1 }) {
			return false
		}
	}
	in, out := valueInfo(ix.g, n.Inputs[0]), valueInfo(ix.g, n.Outputs[0])
	if in == nil || out == nil || in.Shape == nil || len(in.Shape) != len(out.Shape) {
		return false
	}
	for i := range in.Shape {
		if !sameDim(in.Shape[i], out.Shape[i]) {
			return false
		}
	}
	return true
}

// shapeSourceInput returns the graph input that Shape node n can read
// instead of its input x: one whose dim at every position n's readers
// pick is x's dim there, the same symbol. x must not be a graph input, n
// must have no start or end, and its readers must all be Gathers along
// axis 0 with constant, non-negative positions (a negative one would
// count from the end of another rank).
func shapeSourceInput(ix *index, n *compiler.Node) (string, bool) {
	g := ix.g
	x := valueInfo(g, n.Inputs[0])
	if x == nil || x.Shape == nil || n.HasAttr("start") || n.HasAttr("end") || ix.isOutput[n.Outputs[0]] || len(ix.consumers[n.Outputs[0]]) == 0 {
		return "", false
	}
	var picked []int64
	for _, c := range ix.consumers[n.Outputs[0]] {
		pos, ok := ix.ints(c.Inputs[len(c.Inputs)-1])
		if c.Op != "Gather" || c.Inputs[0] != n.Outputs[0] || c.AttrInt("axis", 0) != 0 || !ok {
			return "", false
		}
		for _, p := range pos {
			if p < 0 || p >= int64(len(x.Shape)) || x.Shape[p].Param == "" {
				return "", false
			}
		}
		picked = append(picked, pos...)
	}
	for _, in := range g.Inputs {
		if in.Name == n.Inputs[0] {
			return "", false
		}
	}
	for _, in := range g.Inputs {
		fits := in.Shape != nil
		for _, p := range picked {
			fits = fits && p < int64(len(in.Shape)) && in.Shape[p].Param == x.Shape[p].Param
		}
		if fits {
			return in.Name, true
		}
	}
	return "", false
}

// withoutEmptyOperands returns Concat node n without its operands of
// static extent 0 on its axis (an Identity if one is left), and false when
// it has none such or nothing else.
func withoutEmptyOperands(ix *index, n *compiler.Node) (*compiler.Node, bool) {
	out := valueInfo(ix.g, n.Outputs[0])
	if out == nil || out.Shape == nil {
		return nil, false
	}
	axis := n.AttrInt("axis", 0)
	if axis < 0 {
		axis += int64(len(out.Shape))
	}
	var keep []string
	for _, in := range n.Inputs {
		v := valueInfo(ix.g, in)
		if v == nil || len(v.Shape) != len(out.Shape) || axis < 0 || axis >= int64(len(v.Shape)) {
			return nil, false
		}
		if d := v.Shape[axis]; !(d.Known() && d.Size == 0) {
			keep = append(keep, in)
		}
	}
	if len(keep) == len(n.Inputs) || len(keep) == 0 {
		return nil, false
	}
	if len(keep) == 1 {
		return &compiler.Node{Name: n.Name, Op: "Identity", Inputs: keep, Outputs: []string{n.Outputs[0]}, Attrs: map[string]compiler.Attr{}}, true
	}
	return &compiler.Node{Name: n.Name, Op: "Concat", Inputs: keep, Outputs: []string{n.Outputs[0]}, Attrs: n.Attrs}, true
}

// stackedOperand returns the replacement of Gather node n picking operand
// i of a Concat of extent-1 operands along the Concat's own axis (see
// SimplifyShapeOps), and false when n is not such a Gather.
func stackedOperand(g *compiler.Graph, ix *index, n *compiler.Node) (*compiler.Node, bool) {
	c := ix.producedBy(n.Inputs[0], "Concat")
	idx := ix.constant(n.Inputs[1])
	out := valueInfo(g, n.Inputs[0])
	if c == nil || idx == nil || len(idx.Shape) != 0 || out == nil || out.Shape == nil {
		return nil, false
	}
	r := int64(len(out.Shape))
	axis, gaxis := c.AttrInt("axis", 0), n.AttrInt("axis", 0)
	if axis < 0 {
		axis += r
	}
	if gaxis < 0 {
		gaxis += r
	}
	is, ok := ix.ints(n.Inputs[1])
	if axis != gaxis || axis < 0 || axis >= r || !ok || len(is) != 1 {
		return nil, false
	}
	for _, in := range c.Inputs {
		v := valueInfo(g, in)
		if v == nil || int64(len(v.Shape)) != r || !v.Shape[axis].Known() || v.Shape[axis].Size != 1 {
			return nil, false
		}
	}
	i := is[0]
	if i < 0 {
		i += int64(len(c.Inputs))
	}
	if i < 0 || i >= int64(len(c.Inputs)) {
		return nil, false
	}
	in := c.Inputs[i]
	if u := ix.producedBy(in, "Unsqueeze"); u != nil {
		if axes, ok := ix.axes(u); ok && len(axes) == 1 && (axes[0] == axis || axes[0] == axis-r) {
			return &compiler.Node{Name: n.Name, Op: "Identity", Inputs: []string{u.Inputs[0]}, Outputs: []string{n.Outputs[0]}, Attrs: map[string]compiler.Attr{}}, true
		}
	}
	nm := g.Namer()
	return squeezeNode(g, nm, n.Name, in, n.Outputs[0], axis), true
}

// integerRange returns the Range and Cast that compute float Range node n
// on int64 (see SimplifyShapeOps), and false when n is not of that form.
func integerRange(g *compiler.Graph, ix *index, n *compiler.Node) ([]*compiler.Node, bool) {
	out := valueInfo(g, n.Outputs[0])
	if out == nil || out.DType != compiler.Float32 && out.DType != compiler.Float64 {
		return nil, false
	}
	whole := func(name string) (int64, bool) {
		v, ok := ix.scalar(name)
		if !ok || v != math.Trunc(v) || math.Abs(v) >= 1<<24 {
			return 0, false
		}
		return int64(v), true
	}
	start, okS := whole(n.Inputs[0])
	delta, okD := whole(n.Inputs[2])
	cast := ix.producedBy(n.Inputs[1], "Cast")
	if !okS || !okD || delta == 0 || cast == nil {
		return nil, false
	}
	if v := valueInfo(g, cast.Inputs[0]); v == nil || v.DType != compiler.Int64 || len(v.Shape) != 0 {
		return nil, false
	}
	nm := g.Namer()
	scalar := func(stem string, v int64) string {
		name := nm.Fresh(stem)
		t := compiler.NewTensor(compiler.Int64)
		t.I64[0] = v
		g.Initializers[name] = t
		return name
	}
	r := &compiler.Node{Name: n.Name + "/int64", Op: "Range",
		Inputs:  []string{scalar(n.Name+"/start", start), cast.Inputs[0], scalar(n.Name+"/delta", delta)},
		Outputs: []string{nm.Fresh(n.Name + "/int64")}}
	c := &compiler.Node{Name: n.Name, Op: "Cast", Inputs: []string{r.Outputs[0]}, Outputs: []string{n.Outputs[0]},
		Attrs: map[string]compiler.Attr{"to": compiler.IntAttr(out.DType.ONNX())}}
	return []*compiler.Node{r, c}, true
}

// shapeFromInput returns Shape(input) and the Concat appending x's known
// trailing sizes that compute Shape node n of x (see SimplifyShapeOps),
// and false when no graph input has x's leading dims.
func shapeFromInput(g *compiler.Graph, n *compiler.Node) ([]*compiler.Node, bool) {
	x := valueInfo(g, n.Inputs[0])
	if x == nil || x.Shape == nil || n.HasAttr("start") || n.HasAttr("end") || isGraphInput(g, n.Inputs[0]) {
		return nil, false
	}
	for _, in := range g.Inputs {
		k := len(in.Shape)
		if k == 0 || k > len(x.Shape) {
			continue
		}
		fits := true
		for i, d := range x.Shape {
			if i < k {
				fits = fits && d.Param != "" && in.Shape[i].Param == d.Param
			} else {
				fits = fits && d.Known()
			}
		}
		if !fits {
			continue
		}
		if k == len(x.Shape) {
			return []*compiler.Node{{Name: n.Name, Op: "Shape", Inputs: []string{in.Name}, Outputs: []string{n.Outputs[0]}, Attrs: map[string]compiler.Attr{}}}, true
		}
		nm := g.Namer()
		lead := nm.Fresh(n.Outputs[0] + "/input")
		sh := &compiler.Node{Name: nm.Fresh(n.Name + "/input"), Op: "Shape", Inputs: []string{in.Name}, Outputs: []string{lead}, Attrs: map[string]compiler.Attr{}}
		rest := make([]int64, 0, len(x.Shape)-k)
		for _, d := range x.Shape[k:] {
			rest = append(rest, d.Size)
		}
		cat := &compiler.Node{Name: n.Name, Op: "Concat", Inputs: []string{lead, intsConst(g, nm, n.Name+"/known", rest...)}, Outputs: []string{n.Outputs[0]},
			Attrs: map[string]compiler.Attr{"axis": compiler.IntAttr(0)}}
		return []*compiler.Node{sh, cat}, true
	}
	return nil, false
}

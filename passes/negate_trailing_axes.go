package passes

import (
	"slices"

	"github.com/sqc-dev/sqc/compiler"
)

// NegateTrailingAxes writes the axes of a Squeeze or Slice that acts only
// past the [batch, sequence] of a value of rank >= 3 as negative numbers
// (axis 2 of a rank-3 value becomes -1). torch.onnx exports squeeze(-1)
// with the axis counted from the front; a negative axis names the same
// dimension of a packed batch's [tokens, ...] layout as of the padded
// [batch, seq, ...], which is what lets the engine run such a step (a
// question answerer's start and end columns squeezed to [batch, seq])
// padding-free (compiler/exec packed.go). The computation is unchanged;
// the axes go into a new initializer (or attribute) of their own, as
// another node may read the old one.
var NegateTrailingAxes = Pass{Name: "NegateTrailingAxes", Run: negateTrailingAxes}

func negateTrailingAxes(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	nm := g.Namer()
	changed := false
	for _, n := range g.Nodes {
		cur.n = n
		axesInput := -1 // where the axes are an input; -1: Squeeze's attribute
		switch {
		case n.Op == "Squeeze" && len(n.Inputs) == 2:
			axesInput = 1
		case n.Op == "Squeeze" && len(n.Inputs) == 1 && n.HasAttr("axes"):
		case n.Op == "Slice" && len(n.Inputs) >= 4 && n.Inputs[3] != "":
			axesInput = 3
		default:
			continue
		}
		in := valueInfo(g, n.Inputs[0])
		if in == nil || len(in.Shape) < 3 {
			continue
		}
		rank := int64(len(in.Shape))
		var axes []int64
		if axesInput < 0 {
			axes, _ = n.Attrs.Ints("axes")
		} else if t := g.Initializers[n.Inputs[axesInput]]; t != nil && t.DType == compiler.Int64 {
			axes = t.I64
		}
		if len(axes) == 0 || slices.ContainsFunc(axes, func(a int64) bool { return a < 2 || a >= rank }) {
			continue // none, or some not past [batch, seq] counted from the front
		}
		neg := make([]int64, len(axes))
		for i, a := range axes {
			neg[i] = a - rank
		}
		if axesInput < 0 {
			n.Attrs["axes"] = compiler.IntsAttr(neg...)
		} else {
			name := nm.Fresh(n.Inputs[axesInput] + "/negative")
			t := compiler.NewTensor(compiler.Int64, int64(len(neg)))
			copy(t.I64, neg)
			g.Initializers[name] = t
			n.Inputs[axesInput] = name
		}
		changed = true
	}
	if changed {
		removeDead(g)
	}
	return changed, nil
}

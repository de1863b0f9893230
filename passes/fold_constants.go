package passes

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
)

// FoldConstants evaluates, at compile time, every node whose result does
// not depend on the graph inputs, and stores the result as an initializer:
//
//   - nodes whose inputs are all initializers (Constant, ConstantOfShape,
//     Range, Cast, Gather, Unsqueeze, Concat, arithmetic on constants, ...),
//     evaluated by the FP32 interpreter's own kernels (compiler/interp), so
//     folding means exactly what running would;
//   - Shape(x) when x's shape is fully static;
//   - Gather and Slice that pick only static dims out of Shape(x) when x's
//     shape is partly symbolic: Shape(x)[2] of x [batch, sequence, 256] is
//     256, while Shape(x)[0] stays a run-time value.
//
// Symbolic dims (batch, sequence) are never replaced by a size. Nodes are
// visited in topological order, so a chain Shape -> Gather -> Unsqueeze ->
// Concat folds in one run as far as static dims allow. Random ops are left
// alone, and so are results much larger than their inputs (an Expand of a
// scalar into a big tensor is cheaper to run than to store).
var FoldConstants = Pass{Name: "FoldConstants", Run: foldConstants}

// foldGrowthLimit caps, in elements, how much larger than its inputs a
// folded result may be; below it folding is always allowed (64K float32
// elements = 256 KiB of initializer).
const foldGrowthLimit = 1 << 16

// nondeterministic ops must run every time.
var nondeterministic = []string{"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial", "Dropout"}

func foldConstants(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	if err := g.InferShapes(); err != nil {
		return false, fmt.Errorf("shape inference before folding: %w", err)
	}
	ix := newIndex(g)
	folded := map[*compiler.Node]*compiler.Node{}
	for _, n := range g.Nodes {
		cur.n = n
		outs, err := foldNode(g, ix, n)
		if err != nil {
			return false, err
		}
		if outs == nil {
			continue
		}
		for i, o := range n.Outputs {
			if o == "" {
				continue
			}
			g.Initializers[o] = outs[i]
			delete(g.Values, o)
		}
		folded[n] = nil
	}
	if len(folded) == 0 {
		return false, nil
	}
	replaceNodes(g, folded)
	removeDead(g)
	return true, nil
}

// foldNode returns n's outputs when they can be computed now, nil when not.
// An error means evaluation of all-constant inputs failed for a reason
// other than the kernel's absence, which is a bad graph.
func foldNode(g *compiler.Graph, ix *index, n *compiler.Node) ([]*compiler.Tensor, error) {
	if slices.Contains(nondeterministic, n.Op) {
		return nil, nil
	}
	for _, o := range n.Outputs {
		if g.IsOutput(o) {
			// A graph output must stay a node output.
			return nil, nil
		}
	}
	switch n.Op {
	case "Shape":
		return foldShape(g, n), nil
	case "Gather", "Slice":
		if src := ix.producedBy(n.Inputs[0], "Shape"); src != nil {
			return foldShapePick(g, ix, n, src), nil
		}
	}
	inputs := map[string]*compiler.Tensor{}
	size := int64(0)
	for _, in := range n.Inputs {
		if in == "" {
			continue
		}
		t := g.Initializers[in]
		if t == nil {
			return nil, nil
		}
		inputs[in] = t
		size += compiler.NumElements(t.Shape)
	}
	outs, err := evalNode(g, n, inputs)
	if errors.Is(err, compiler.ErrUnsupportedOp) {
		return nil, nil
	}
	if err != nil {
		return nil, compiler.BadInput("", nodeRef(n), fmt.Errorf("evaluating constant node: %w", err))
	}
	for _, t := range outs {
		if t != nil && compiler.NumElements(t.Shape) > max(size, foldGrowthLimit) {
			return nil, nil
		}
	}
	return outs, nil
}

// evalNode runs one node on constant inputs with the interpreter, as a
// one-node graph.
func evalNode(g *compiler.Graph, n *compiler.Node, inputs map[string]*compiler.Tensor) ([]*compiler.Tensor, error) {
	sub := compiler.NewGraph("fold")
	sub.Opset = g.Opset
	for name, t := range inputs {
		sub.Initializers[name] = t
	}
	sub.Nodes = []*compiler.Node{n}
	if err := sub.InferShapes(); err != nil {
		return nil, err
	}
	for _, o := range n.Outputs {
		if o == "" {
			continue
		}
		v, ok := sub.ValueInfo(o)
		if !ok || v.DType == compiler.Undefined {
			return nil, fmt.Errorf("%w: cannot type output %q", compiler.ErrUnsupportedOp, o)
		}
		sub.Outputs = append(sub.Outputs, &compiler.Value{Name: o, DType: v.DType, Shape: v.Shape})
	}
	it, err := interp.New(sub)
	if err != nil {
		return nil, err
	}
	res, err := it.Run(map[string]*compiler.Tensor{}, &interp.Options{Threads: 1})
	if err != nil {
		return nil, err
	}
	outs := make([]*compiler.Tensor, len(n.Outputs))
	for i, o := range n.Outputs {
		if o != "" {
			outs[i] = res[o]
		}
	}
	return outs, nil
}

// foldShape folds Shape(x) {start, end} when the selected dims are static.
func foldShape(g *compiler.Graph, n *compiler.Node) []*compiler.Tensor {
	v := valueInfo(g, n.Inputs[0])
	if v == nil || v.Shape == nil {
		return nil
	}
	dims := shapeRange(v.Shape, n)
	sizes, ok := dims.Static()
	if !ok {
		return nil
	}
	return []*compiler.Tensor{int64Vector(sizes)}
}

// shapeRange applies Shape's start/end attributes (opset 15).
func shapeRange(s compiler.Shape, n *compiler.Node) compiler.Shape {
	r := int64(len(s))
	clamp := func(v int64) int64 {
		if v < 0 {
			v += r
		}
		return min(max(v, 0), r)
	}
	start, end := clamp(n.AttrInt("start", 0)), clamp(n.AttrInt("end", r))
	if start >= end {
		return compiler.Shape{}
	}
	return s[start:end]
}

// foldShapePick folds Gather(Shape(x), idx) and Slice(Shape(x), ...) with
// constant indices when every dim they pick is static.
func foldShapePick(g *compiler.Graph, ix *index, n, shapeNode *compiler.Node) []*compiler.Tensor {
	v := valueInfo(g, shapeNode.Inputs[0])
	if v == nil || v.Shape == nil {
		return nil
	}
	dims := shapeRange(v.Shape, shapeNode)
	r := int64(len(dims))
	var picked []int64
	var outShape []int64
	switch n.Op {
	case "Gather":
		idx := ix.constant(n.Inputs[1])
		vals, ok := ix.ints(n.Inputs[1])
		if idx == nil || !ok || len(idx.Shape) > 1 || n.AttrInt("axis", 0) != 0 {
			return nil
		}
		for _, i := range vals {
			if i < 0 {
				i += r
			}
			if i < 0 || i >= r {
				return nil
			}
			picked = append(picked, i)
		}
		outShape = append([]int64(nil), idx.Shape...)
	case "Slice":
		if len(n.Inputs) < 3 {
			return nil // opset < 10 form with attributes: rare on shapes
		}
		starts, ok1 := ix.ints(n.Inputs[1])
		ends, ok2 := ix.ints(n.Inputs[2])
		if !ok1 || !ok2 || len(starts) != 1 || len(ends) != 1 {
			return nil
		}
		if len(n.Inputs) > 3 && n.Inputs[3] != "" {
			if axes, ok := ix.ints(n.Inputs[3]); !ok || len(axes) != 1 || (axes[0] != 0 && axes[0] != -1) {
				return nil
			}
		}
		step := int64(1)
		if len(n.Inputs) > 4 && n.Inputs[4] != "" {
			steps, ok := ix.ints(n.Inputs[4])
			if !ok || len(steps) != 1 || steps[0] == 0 {
				return nil
			}
			step = steps[0]
		}
		picked = sliceIndices(starts[0], ends[0], step, r)
		outShape = []int64{int64(len(picked))}
	default:
		return nil
	}
	out := make([]int64, len(picked))
	for i, p := range picked {
		if !dims[p].Known() {
			return nil
		}
		out[i] = dims[p].Size
	}
	t := int64Vector(out)
	t.Shape = outShape
	return []*compiler.Tensor{t}
}

// sliceIndices lists the indices ONNX Slice selects on an axis of size r.
func sliceIndices(start, end, step, r int64) []int64 {
	if start < 0 {
		start += r
	}
	if end < 0 {
		end += r
	}
	var idx []int64
	if step > 0 {
		start, end = min(max(start, 0), r), min(max(end, 0), r)
		for i := start; i < end; i += step {
			idx = append(idx, i)
		}
	} else {
		start, end = min(max(start, -1), r-1), min(max(end, -1), r-1)
		for i := start; i > end; i += step {
			idx = append(idx, i)
		}
	}
	return idx
}

func int64Vector(v []int64) *compiler.Tensor {
	t := compiler.NewTensor(compiler.Int64, int64(len(v)))
	copy(t.I64, v)
	return t
}

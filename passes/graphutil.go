package passes

import (
	"fmt"
	"math"

	"github.com/sqc-dev/sqc/compiler"
)

// index is a snapshot of who produces and who reads each value. Passes
// build one, match patterns against it and rebuild it after they rewrite;
// it is not kept up to date by the rewrites themselves.
type index struct {
	g         *compiler.Graph
	producer  map[string]*compiler.Node
	position  map[*compiler.Node]int
	consumers map[string][]*compiler.Node
	isOutput  map[string]bool
}

func newIndex(g *compiler.Graph) *index {
	ix := &index{
		g:         g,
		producer:  map[string]*compiler.Node{},
		position:  map[*compiler.Node]int{},
		consumers: map[string][]*compiler.Node{},
		isOutput:  map[string]bool{},
	}
	for i, n := range g.Nodes {
		ix.position[n] = i
		for _, o := range n.Outputs {
			if o != "" {
				ix.producer[o] = n
			}
		}
		for _, in := range n.Inputs {
			if in != "" {
				ix.consumers[in] = append(ix.consumers[in], n)
			}
		}
	}
	for _, o := range g.Outputs {
		ix.isOutput[o.Name] = true
	}
	return ix
}

// uses counts the readers of a value, a graph output counting as one.
func (ix *index) uses(name string) int {
	n := len(ix.consumers[name])
	if ix.isOutput[name] {
		n++
	}
	return n
}

// onlyConsumer returns the single node reading name, or nil if there are
// none, several, or the value is also a graph output.
func (ix *index) onlyConsumer(name string) *compiler.Node {
	if ix.uses(name) != 1 || len(ix.consumers[name]) != 1 {
		return nil
	}
	return ix.consumers[name][0]
}

// consumerAt returns the first node of the given op that reads name as
// its input number at.
func (ix *index) consumerAt(name, op string, at int) *compiler.Node {
	for _, n := range ix.consumers[name] {
		if n.Op == op && len(n.Inputs) > at && n.Inputs[at] == name {
			return n
		}
	}
	return nil
}

// producedBy returns the node producing name if its op is op.
func (ix *index) producedBy(name, op string) *compiler.Node {
	if n := ix.producer[name]; n != nil && n.Op == op {
		return n
	}
	return nil
}

// constant returns the tensor behind name if it is an initializer or the
// output of a Constant node with a tensor value.
func (ix *index) constant(name string) *compiler.Tensor {
	if t := ix.g.Initializers[name]; t != nil {
		return t
	}
	if n := ix.producedBy(name, "Constant"); n != nil {
		if a, ok := n.Attrs["value"]; ok && a.Kind == compiler.AttrTensor {
			return a.Tensor
		}
	}
	return nil
}

// scalar returns the single value of a one-element numeric constant.
func (ix *index) scalar(name string) (float64, bool) {
	t := ix.constant(name)
	if t == nil || compiler.NumElements(t.Shape) != 1 {
		return 0, false
	}
	return elementAsFloat(t, 0)
}

// scalarNear reports whether name is a one-element constant within tol of
// want (relative for large values).
func (ix *index) scalarNear(name string, want, tol float64) bool {
	v, ok := ix.scalar(name)
	return ok && math.Abs(v-want) <= tol*math.Max(1, math.Abs(want))
}

// ints returns the elements of an integer constant.
func (ix *index) ints(name string) ([]int64, bool) {
	t := ix.constant(name)
	if t == nil {
		return nil, false
	}
	switch t.DType {
	case compiler.Int64:
		return t.I64, true
	case compiler.Int32:
		out := make([]int64, len(t.I32))
		for i, v := range t.I32 {
			out[i] = int64(v)
		}
		return out, true
	}
	return nil, false
}

// axes returns the axes of an Unsqueeze, Squeeze or Reduce node: its
// attribute (older opsets) or its constant input 1 (newer ones).
func (ix *index) axes(n *compiler.Node) ([]int64, bool) {
	if axes, ok := n.AttrInts("axes"); ok {
		return axes, true
	}
	if len(n.Inputs) > 1 && n.Inputs[1] != "" {
		return ix.ints(n.Inputs[1])
	}
	return nil, false
}

// otherInput returns, for a binary node with one input equal to name, the
// other input.
func otherInput(n *compiler.Node, name string) (string, bool) {
	if len(n.Inputs) != 2 {
		return "", false
	}
	switch name {
	case n.Inputs[0]:
		return n.Inputs[1], true
	case n.Inputs[1]:
		return n.Inputs[0], true
	}
	return "", false
}

func elementAsFloat(t *compiler.Tensor, i int) (float64, bool) {
	switch t.DType {
	case compiler.Float32:
		return float64(t.F32[i]), true
	case compiler.Float64:
		return t.F64[i], true
	case compiler.Int64:
		return float64(t.I64[i]), true
	case compiler.Int32:
		return float64(t.I32[i]), true
	case compiler.Int8:
		return float64(t.I8[i]), true
	case compiler.Uint8:
		return float64(t.U8[i]), true
	}
	return 0, false
}

// valueInfo returns the declared type and shape of name, or nil.
func valueInfo(g *compiler.Graph, name string) *compiler.Value {
	v, _ := g.ValueInfo(name)
	return v
}

// replaceNodes swaps nodes in g.Nodes: each key is replaced in place by its
// value (nil deletes it). Replacing a fusion's last node (its sink) by the
// fused node keeps topological order, since every input of the fused node
// is computed before the sink.
func replaceNodes(g *compiler.Graph, repl map[*compiler.Node]*compiler.Node) {
	if len(repl) == 0 {
		return
	}
	out := g.Nodes[:0]
	for _, n := range g.Nodes {
		r, ok := repl[n]
		switch {
		case !ok:
			out = append(out, n)
		case r != nil:
			out = append(out, r)
		}
	}
	for i := len(out); i < len(g.Nodes); i++ {
		g.Nodes[i] = nil
	}
	g.Nodes = out
}

// renameInputs rewrites every read of from into a read of to (node inputs
// and graph outputs are not touched: callers keep output names stable).
func renameInputs(g *compiler.Graph, from, to string) {
	for _, n := range g.Nodes {
		for i, in := range n.Inputs {
			if in == from {
				n.Inputs[i] = to
			}
		}
	}
}

// isFloat32 reports whether name is known to be a float32 value.
func isFloat32(g *compiler.Graph, name string) bool {
	v := valueInfo(g, name)
	return v != nil && v.DType == compiler.Float32
}

// nodeRef names a node in errors the way the verifier does, and an
// unnamed one by its first output.
func nodeRef(n *compiler.Node) string {
	if n.Name == "" && len(n.Outputs) > 0 && n.Outputs[0] != "" {
		return fmt.Sprintf("the %s node producing %q", n.Op, n.Outputs[0])
	}
	return fmt.Sprintf("node %q (%s)", n.Name, n.Op)
}

// intsConst adds a 1-D int64 initializer holding v under a fresh name
// from stem and returns the name.
func intsConst(g *compiler.Graph, nm *compiler.Namer, stem string, v ...int64) string {
	name := nm.Fresh(stem)
	g.Initializers[name] = int64Vector(v)
	return name
}

// squeezeNode returns node name, Squeeze(in) of one axis into out, with
// the axes as the graph's opset takes them (an attribute before opset
// 13).
func squeezeNode(g *compiler.Graph, nm *compiler.Namer, name, in, out string, axis int64) *compiler.Node {
	n := &compiler.Node{Name: name, Op: "Squeeze", Inputs: []string{in}, Outputs: []string{out}, Attrs: map[string]compiler.Attr{}}
	if g.Opset > 0 && g.Opset < 13 {
		n.Attrs["axes"] = compiler.IntsAttr(axis)
	} else {
		n.Inputs = append(n.Inputs, intsConst(g, nm, name+"/axes", axis))
	}
	return n
}

// scalarConst adds a float32 scalar initializer holding v under a fresh
// name from stem and returns the name.
func scalarConst(g *compiler.Graph, nm *compiler.Namer, stem string, v float32) string {
	name := nm.Fresh(stem)
	t := compiler.NewTensor(compiler.Float32)
	t.F32[0] = v
	g.Initializers[name] = t
	return name
}

// replaceByMany replaces each key of repl in g.Nodes by its nodes, in
// their order and in its place (they compute its outputs from values
// computed before it), drops what that leaves unused and infers the new
// values' shapes: the end of a pass that rewrites one node into several.
// It reports whether it replaced any.
func replaceByMany(g *compiler.Graph, repl map[*compiler.Node][]*compiler.Node) (bool, error) {
	if len(repl) == 0 {
		return false, nil
	}
	out := make([]*compiler.Node, 0, len(g.Nodes)+len(repl))
	for _, n := range g.Nodes {
		if r, ok := repl[n]; ok {
			out = append(out, r...)
			continue
		}
		out = append(out, n)
	}
	g.Nodes = out
	removeDead(g)
	return true, g.InferShapes()
}

// oneAxisSlice reads a Slice (opset 10+: bounds as inputs) of one
// constant start and end on one constant axis with step 1 (the steps
// absent or 1), returning them as written; ok is false for any other.
func (ix *index) oneAxisSlice(s *compiler.Node) (start, end, axis int64, ok bool) {
	if s.Op != "Slice" || len(s.Inputs) < 4 {
		return 0, 0, 0, false
	}
	st, ok1 := ix.ints(s.Inputs[1])
	en, ok2 := ix.ints(s.Inputs[2])
	ax, ok3 := ix.ints(s.Inputs[3])
	if !ok1 || !ok2 || !ok3 || len(st) != 1 || len(en) != 1 || len(ax) != 1 {
		return 0, 0, 0, false
	}
	if len(s.Inputs) > 4 && s.Inputs[4] != "" {
		if step, ok := ix.ints(s.Inputs[4]); !ok || len(step) != 1 || step[0] != 1 {
			return 0, 0, 0, false
		}
	}
	return st[0], en[0], ax[0], true
}

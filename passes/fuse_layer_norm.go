package passes

import "github.com/sqc-dev/sqc/compiler"

// FuseLayerNorm replaces LayerNorm written out in elementwise ops, as
// torch.onnx exports it below opset 17:
//
//	m = ReduceMean(x, axes=[-1]); d = Sub(x, m); v = ReduceMean(Pow(d, 2), axes=[-1])
//	y = Add(Mul(Div(d, Sqrt(Add(v, eps))), gamma), beta)
//
// by LayerNormalization(x, gamma, beta) {axis: -1, epsilon: eps}. gamma and
// beta must be constants holding one value per normalised channel (shape
// [C], or [1, ..., C], which is flattened); Add operands may come in either
// order, as may Mul's. Without the trailing Mul/Add the chain is still fused,
// with gamma = 1 and beta = 0 initializers made up.
var FuseLayerNorm = Pass{Name: "FuseLayerNorm", Run: fuseLayerNorm}

// exponentTolerance bounds how far Pow's exponent may be from 2.
const exponentTolerance = 1e-6

func fuseLayerNorm(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	repl := map[*compiler.Node]*compiler.Node{}
	for _, n := range g.Nodes {
		cur.n = n
		if n.Op != "Sqrt" {
			continue
		}
		m, ok := matchLayerNorm(ix, n)
		if !ok || repl[m.sink] != nil {
			continue
		}
		gamma := channelVector(ix, nm, m.gamma, m.sink.Name+"/gamma", m.channels, 1)
		beta := channelVector(ix, nm, m.beta, m.sink.Name+"/beta", m.channels, 0)
		repl[m.sink] = &compiler.Node{
			Name:    nm.Fresh(m.sink.Name + "/LayerNormalization"),
			Op:      "LayerNormalization",
			Inputs:  []string{m.x, gamma, beta},
			Outputs: []string{m.sink.Outputs[0]},
			Attrs: map[string]compiler.Attr{
				"axis":    compiler.IntAttr(-1),
				"epsilon": compiler.FloatAttr(m.epsilon),
			},
		}
	}
	replaceNodes(g, repl)
	if len(repl) > 0 {
		removeDead(g)
	}
	return len(repl) > 0, nil
}

type layerNormMatch struct {
	x           string
	gamma, beta string // "" when absent
	epsilon     float32
	channels    int64
	sink        *compiler.Node // the node whose output the fused op takes over
}

// matchLayerNorm matches the chain around its Sqrt node.
func matchLayerNorm(ix *index, sqrt *compiler.Node) (layerNormMatch, bool) {
	var m layerNormMatch
	// Sqrt(Add(v, eps))
	addEps := ix.producedBy(sqrt.Inputs[0], "Add")
	if addEps == nil {
		return m, false
	}
	v, eps, ok := splitConstOperand(ix, addEps)
	if !ok {
		return m, false
	}
	meanSq := ix.producedBy(v, "ReduceMean")
	if meanSq == nil || !reducesLastAxis(ix, meanSq) {
		return m, false
	}
	pow := ix.producedBy(meanSq.Inputs[0], "Pow")
	if pow == nil || !ix.scalarNear(pow.Inputs[1], 2, exponentTolerance) {
		return m, false
	}
	d := pow.Inputs[0]
	sub := ix.producedBy(d, "Sub")
	if sub == nil {
		return m, false
	}
	x := sub.Inputs[0]
	mean := ix.producedBy(sub.Inputs[1], "ReduceMean")
	if mean == nil || mean.Inputs[0] != x || !reducesLastAxis(ix, mean) {
		return m, false
	}
	// The normalised value: Div(d, sqrt). d and the Sqrt must feed nothing
	// but the chain, or fusing would still have to compute them.
	div := ix.onlyConsumer(sqrt.Outputs[0])
	if div == nil || div.Op != "Div" || div.Inputs[0] != d || div.Inputs[1] != sqrt.Outputs[0] {
		return m, false
	}
	m.x, m.epsilon, m.sink = x, float32(eps), div
	m.channels = lastDim(ix.g, x)
	if m.channels <= 0 || !isFloat32(ix.g, x) {
		return m, false
	}
	// Optional affine tail.
	if mul := ix.onlyConsumer(div.Outputs[0]); mul != nil && mul.Op == "Mul" {
		if gamma, ok := otherInput(mul, div.Outputs[0]); ok && perChannel(ix, gamma, m.channels) {
			m.gamma, m.sink = gamma, mul
			if add := ix.onlyConsumer(mul.Outputs[0]); add != nil && add.Op == "Add" {
				if beta, ok := otherInput(add, mul.Outputs[0]); ok && perChannel(ix, beta, m.channels) {
					m.beta, m.sink = beta, add
				}
			}
		}
	}
	return m, true
}

// splitConstOperand splits a binary node into its non-constant operand and
// the value of its scalar-constant operand, in either order.
func splitConstOperand(ix *index, n *compiler.Node) (string, float64, bool) {
	if len(n.Inputs) != 2 {
		return "", 0, false
	}
	if c, ok := ix.scalar(n.Inputs[1]); ok {
		return n.Inputs[0], c, true
	}
	if c, ok := ix.scalar(n.Inputs[0]); ok {
		return n.Inputs[1], c, true
	}
	return "", 0, false
}

// reducesLastAxis reports whether a ReduceMean averages over exactly the
// last axis and keeps it (keepdims=1), with axes given as an attribute
// (opset < 18) or as a constant input (opset 18).
func reducesLastAxis(ix *index, n *compiler.Node) bool {
	if n.AttrInt("keepdims", 1) != 1 {
		return false
	}
	axes, ok := ix.axes(n)
	if !ok || len(axes) != 1 {
		return false
	}
	if axes[0] == -1 {
		return true
	}
	v := valueInfo(ix.g, n.Inputs[0])
	return v != nil && v.Shape != nil && axes[0] == int64(len(v.Shape)-1)
}

// lastDim returns the static size of name's last axis, or -1.
func lastDim(g *compiler.Graph, name string) int64 {
	v := valueInfo(g, name)
	if v == nil || len(v.Shape) == 0 || !v.Shape[len(v.Shape)-1].Known() {
		return -1
	}
	return v.Shape[len(v.Shape)-1].Size
}

// perChannel reports whether name is a float32 constant with one value per
// channel of the last axis: shape [C] or [1, ..., 1, C].
func perChannel(ix *index, name string, channels int64) bool {
	t := ix.constant(name)
	if t == nil || t.DType != compiler.Float32 || len(t.Shape) == 0 || t.Shape[len(t.Shape)-1] != channels {
		return false
	}
	return compiler.NumElements(t.Shape) == channels
}

// channelVector returns the name of a float32 [C] initializer for a
// LayerNormalization scale or bias: name itself when it already is one, a
// flattened copy when it is [1, ..., C] or a Constant node's output, and a
// new initializer filled with def when name is "".
func channelVector(ix *index, nm *compiler.Namer, name, base string, channels int64, def float32) string {
	if t := ix.g.Initializers[name]; t != nil && len(t.Shape) == 1 {
		return name
	}
	vec := compiler.NewTensor(compiler.Float32, channels)
	if name == "" {
		for i := range vec.F32 {
			vec.F32[i] = def
		}
	} else {
		copy(vec.F32, ix.constant(name).F32)
		base = name + "/flat"
	}
	out := nm.Fresh(base)
	ix.g.Initializers[out] = vec
	return out
}

package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// DequantizeIntegerOps rewrites a model ONNX Runtime's dynamic quantiser
// has quantised (quantize_dynamic: transformers.js' model_quantized.onnx,
// optimum's dynamic quantisation) into the float model it approximates,
// with the file's weights dequantised exactly, which sqc then calibrates
// and quantises itself (SmoothQuant, per-channel s8 weights, u8
// activations):
//
//   - y = Mul(Cast<f32>(MatMulInteger(qa, qb, za, zb)), Mul(sa, sb)), each
//     operand's (q, s, z) either the outputs of DynamicQuantizeLinear(x)
//     or constants (a scalar scale and zero point, or for B one per
//     column), becomes y = MatMul(a, b): a is x itself (the quantiser's
//     rounding of activations is dropped: sqc's own replaces it), a
//     constant is float32(q - z) * s, the values the file's weights stand
//     for.
//   - DequantizeLinear(Gather(q, ids), s, z) of a constant table with one
//     scale and zero point becomes Gather(float32(q - z) * s, ids), the
//     same values: the embedding tables the quantiser stores in 8 bits.
//   - DequantizeLinear(QuantizeLinear(x, s, z), s, z), the same constant
//     scale and zero point (the static QDQ format's pair on an
//     activation: quantize_static, optimum's static quantisation),
//     becomes x: the file's calibrated rounding of activations is dropped
//     as the dynamic one is.
//
// DequantizeLinear of constants (the QDQ format's weights) is
// FoldConstants', which runs first. The dequantised values are the
// interpreter's (runtime/ops), as FoldConstants' are.
//
// Graph.Meta["dequantized"] says how many of each it rewrote. Integer ops
// it does not match stay (the interpreter runs them; the INT8 engine only
// outside the encoder).
var DequantizeIntegerOps = Pass{Name: "DequantizeIntegerOps", Run: dequantizeIntegerOps}

func dequantizeIntegerOps(g *compiler.Graph) (bool, error) {
	ix := newIndex(g)
	repl := map[*compiler.Node]*compiler.Node{}
	var matmuls, gathers, pairs int
	for _, n := range g.Nodes {
		switch n.Op {
		case "Mul":
			if mm, ok := matchIntegerMatMul(ix, n); ok {
				repl[n] = mm
				matmuls++
			}
		case "DequantizeLinear":
			if x, ok := quantizedPair(ix, n); ok {
				repl[n] = &compiler.Node{Name: n.Name, Op: "Identity", Inputs: []string{x}, Outputs: []string{n.Outputs[0]}, Attrs: map[string]compiler.Attr{}}
				pairs++
				continue
			}
			gather := ix.producedBy(n.Inputs[0], "Gather")
			if gather == nil || gather.AttrInt("axis", 0) != 0 || ix.onlyConsumer(gather.Outputs[0]) != n {
				continue
			}
			table, err := dequantizedConstant(ix, append([]string{gather.Inputs[0]}, n.Inputs[1:]...), 0, false)
			if err != nil || table == nil {
				continue
			}
			name := g.UniqueName(gather.Inputs[0] + "_dequantized")
			g.Initializers[name] = table
			repl[n] = &compiler.Node{Name: gather.Name, Op: "Gather", Inputs: []string{name, gather.Inputs[1]}, Outputs: []string{n.Outputs[0]},
				Attrs: map[string]compiler.Attr{}}
			gathers++
		}
	}
	if len(repl) == 0 {
		return false, nil
	}
	replaceNodes(g, repl)
	var done []string
	for _, c := range []struct {
		n    int
		what string
	}{{matmuls, "MatMulInteger"}, {gathers, "Gather tables"}, {pairs, "QuantizeLinear pairs"}} {
		if c.n > 0 {
			done = append(done, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	g.Meta["dequantized"] = strings.Join(done, ", ")
	return true, nil
}

// matchIntegerMatMul matches the final Mul of ONNX Runtime's MatMulInteger
// chain and returns the MatMul that replaces it, or false. New
// initializers (dequantised weights) are added to the graph.
func matchIntegerMatMul(ix *index, mul *compiler.Node) (*compiler.Node, bool) {
	for side := range 2 {
		cast := ix.producedBy(mul.Inputs[side], "Cast")
		scales := ix.producedBy(mul.Inputs[1-side], "Mul")
		if cast == nil || scales == nil || cast.AttrInt("to", 0) != compiler.Float32.ONNX() {
			continue
		}
		mmi := ix.producedBy(cast.Inputs[0], "MatMulInteger")
		if mmi == nil {
			continue
		}
		in := func(i int) string {
			if i < len(mmi.Inputs) {
				return mmi.Inputs[i]
			}
			return ""
		}
		// Each operand is DynamicQuantizeLinear's (its scale one of the
		// scales multiplied) or a constant, whose scale is then the other
		// one; at most one constant (two fold to a constant anyway).
		a, aScale := dynamicOperand(ix, in(0), in(2))
		b, bScale := dynamicOperand(ix, in(1), in(3))
		s0, s1 := scales.Inputs[0], scales.Inputs[1]
		other := func(sc string) (string, bool) {
			switch sc {
			case s0:
				return s1, true
			case s1:
				return s0, true
			}
			return "", false
		}
		switch {
		case a != "" && b != "":
			if o, ok := other(aScale); !ok || o != bScale {
				continue
			}
		case a != "":
			bs, ok := other(aScale)
			w := ix.constant(in(1))
			if !ok || w == nil {
				continue
			}
			t, err := dequantizedConstant(ix, []string{in(1), bs, in(3)}, int64(len(w.Shape)-1), true)
			if err != nil || t == nil {
				continue
			}
			b = ix.g.UniqueName(in(1) + "_dequantized")
			ix.g.Initializers[b] = t
		case b != "":
			as, ok := other(bScale)
			if !ok {
				continue
			}
			t, err := dequantizedConstant(ix, []string{in(0), as, in(2)}, 0, false)
			if err != nil || t == nil {
				continue
			}
			a = ix.g.UniqueName(in(0) + "_dequantized")
			ix.g.Initializers[a] = t
		default:
			continue
		}
		return &compiler.Node{Name: mmi.Name, Op: "MatMul", Inputs: []string{a, b}, Outputs: []string{mul.Outputs[0]}, Attrs: map[string]compiler.Attr{}}, true
	}
	return nil, false
}

// quantizedPair returns x where DequantizeLinear node dq reads
// QuantizeLinear(x) with the same constant scale, zero point and axis:
// the static QDQ format's rounding of an activation, which sqc's own
// calibrated quantisation replaces.
func quantizedPair(ix *index, dq *compiler.Node) (string, bool) {
	q := ix.producedBy(dq.Inputs[0], "QuantizeLinear")
	if q == nil {
		return "", false
	}
	param := func(n *compiler.Node, i int) *compiler.Tensor {
		if i < len(n.Inputs) && n.Inputs[i] != "" {
			return ix.constant(n.Inputs[i])
		}
		return nil
	}
	for i := 1; i <= 2; i++ {
		a, b := param(q, i), param(dq, i)
		present := func(n *compiler.Node) bool { return i < len(n.Inputs) && n.Inputs[i] != "" }
		switch {
		case present(q) != present(dq):
			return "", false
		case !present(q):
		case a == nil || b == nil || !sameTensor(a, b):
			return "", false
		}
	}
	if s := param(q, 1); compiler.NumElements(s.Shape) > 1 && q.AttrInt("axis", 1) != dq.AttrInt("axis", 1) {
		return "", false
	}
	return q.Inputs[0], true
}

// sameTensor reports whether two constants have the same dtype, shape
// and values.
func sameTensor(a, b *compiler.Tensor) bool {
	if a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) {
		return false
	}
	for i := range int(compiler.NumElements(a.Shape)) {
		x, okx := elementAsFloat(a, i)
		y, oky := elementAsFloat(b, i)
		if !okx || !oky || x != y {
			return false
		}
	}
	return true
}

// dynamicOperand returns the float input and the scale of the
// DynamicQuantizeLinear whose outputs are MatMulInteger's operand q and
// zero point z, or "" when they are not.
func dynamicOperand(ix *index, q, z string) (x, scale string) {
	dql := ix.producedBy(q, "DynamicQuantizeLinear")
	if dql == nil || dql.Outputs[0] != q || z != dql.Outputs[2] {
		return "", ""
	}
	return dql.Inputs[0], dql.Outputs[1]
}

// dequantizedConstant returns DequantizeLinear(q, s[, z]) {axis} of
// constant inputs (in), as the interpreter computes it (runtime/ops:
// float32(q - z) * s), with s and z one value or, where perAxis allows,
// one per index of axis. It returns nil when they are not constants, and
// an error when they do not fit.
func dequantizedConstant(ix *index, in []string, axis int64, perAxis bool) (*compiler.Tensor, error) {
	inputs := map[string]*compiler.Tensor{}
	for _, name := range in {
		if name == "" {
			continue
		}
		t := ix.constant(name)
		if t == nil {
			return nil, nil
		}
		inputs[name] = t
	}
	if s := inputs[in[1]]; !perAxis && compiler.NumElements(s.Shape) != 1 {
		return nil, fmt.Errorf("scale %v, want one for the tensor", s.Shape)
	}
	n := &compiler.Node{Op: "DequantizeLinear", Inputs: in, Outputs: []string{in[0] + "/dequantized"},
		Attrs: map[string]compiler.Attr{"axis": compiler.IntAttr(axis)}}
	outs, err := evalNode(ix.g, n, inputs)
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

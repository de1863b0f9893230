package compiler

import (
	"math"
)

// checkQuantized is VerifyQuantized's part: what the INT8 engine
// (compiler/exec) and generated code take for granted in a quantised
// graph, which the op table's per-node rules cannot see because it is
// about initializers or about the graph around a node.
//
// For every sqc.QLinear (ops_sqc_quant.go), whose input edge x is the
// quantised one:
//   - the weight is an i8 [K, N] initializer (the GEMM packs it ahead of
//     time), its scales an f32 [N] initializer of finite values > 0, the
//     bias, if any, an f32 [N] initializer;
//   - static activations have both their scale and their zero point
//     (act_zero_point is not left to its default: Quantize always writes
//     it, and a missing one is a lost attribute, not a zero);
//   - x's last dimension, where its shape is recorded, is K.
//
// A QLinear reading u8 reads it in its own quantisation (checkQuantizedEdge).
//
// For every sqc.LayerNormDual (ops_sqc_layernorm.go), the twin output y_q
// is normalised with gamma/s and beta/s and so means something only to
// GEMMs whose weights absorbed s: it is read only as the activation of
// sqc.QLinear nodes (input 0), or the sqc.Quantize of one, and is no graph output; the INT8 engine
// writes it straight in the u8 form those QLinears read.
func (v *verifier) checkQuantized() {
	readers := map[string][]readAt{}
	for i, n := range v.g.Nodes {
		for k, in := range n.Inputs {
			if in != "" {
				readers[in] = append(readers[in], readAt{i, k})
			}
		}
	}
	producers := v.g.Producers()
	for i, n := range v.g.Nodes {
		switch n.Op {
		case "sqc.QLinear":
			v.checkQLinearOperands(i, n)
			v.checkQuantizedEdge(i, n, producers)
		case "sqc.LayerNormDual":
			v.checkTwinReaders(i, n, readers)
			v.checkInProducerEdge(i, n, producers, readers)
		case "sqc.LayerNorm":
			v.checkInProducerEdge(i, n, producers, readers)
		}
	}
}

// checkInProducerEdge checks the form a LayerNorm run inside its
// producer's GEMM needs (InProducer): x is the f32 output of an
// sqc.QLinear, read by this node alone and no graph output, and a dual
// LayerNorm writes y_q in u8 (else it is two steps, not one).
func (v *verifier) checkInProducerEdge(i int, n *Node, producers map[string]*Node, readers map[string][]readAt) {
	if !InProducer(n) || len(n.Inputs) == 0 {
		return
	}
	label, x := nodeLabel(i, n), n.Inputs[0]
	p := producers[x]
	_, _, dualU8 := U8Output(n)
	producerU8 := false
	if p != nil {
		_, _, producerU8 = U8Output(p)
	}
	switch {
	case p == nil || p.Op != "sqc.QLinear":
		v.failf(label, "%w: in_producer, but input %q is not an sqc.QLinear's output", ErrMalformed, x)
	case producerU8:
		v.failf(label, "%w: in_producer, but input %q is the u8 output of %q (the LayerNorm needs its f32 values)", ErrMalformed, x, p.Name)
	case len(readers[x]) != 1 || v.g.IsOutput(x):
		v.failf(label, "%w: in_producer, but input %q has other readers or is a graph output", ErrMalformed, x)
	case n.Op == "sqc.LayerNormDual" && !dualU8:
		v.failf(label, "%w: in_producer on a LayerNormDual whose y_q is f32 (it runs as two LayerNorms)", ErrMalformed)
	}
}

// checkQuantizedEdge checks the quantised form a QLinear reads, when its
// x is u8 (passes.MaterializeQuantize and after): the edge carries the
// QLinear's own quantisation. Static: x is a static sqc.Quantize's output
// of the same scale and zero point (bit for bit), or a producer's u8
// output (out_scale, out_zero_point) of those. Dynamic: x, row_scale and
// row_zero_point are the three outputs of one dynamic sqc.Quantize.
func (v *verifier) checkQuantizedEdge(i int, n *Node, producers map[string]*Node) {
	x, ok := v.g.ValueInfo(n.Inputs[0])
	if !ok || x.DType != Uint8 {
		return
	}
	label, p := nodeLabel(i, n), producers[n.Inputs[0]]
	if p == nil {
		v.failf(label, "%w: u8 input %q has no producer that says how it is quantised", ErrMalformed, n.Inputs[0])
		return
	}
	if QLinearMode(n) == QLinearDynamic {
		rs, rz := QLinearRowParams(n)
		if p.Op != "sqc.Quantize" || QuantizeMode(p) != QLinearDynamic || len(p.Outputs) != 3 ||
			p.Outputs[0] != n.Inputs[0] || p.Outputs[1] != rs || p.Outputs[2] != rz {
			v.failf(label, "%w: dynamic QLinear reads u8 %q, row scales %q and zero points %q that are not the outputs of one dynamic sqc.Quantize", ErrMalformed, n.Inputs[0], rs, rz)
		}
		return
	}
	var scale float32
	var zp int64
	switch {
	case p.Op == "sqc.Quantize" && QuantizeMode(p) == QLinearStatic:
		scale, zp = p.AttrFloat("scale", 0), p.AttrInt("zero_point", 0)
	default:
		s, z, ok := U8Output(p)
		if !ok {
			v.failf(label, "%w: u8 input %q comes from %s, which is no static quantisation", ErrMalformed, n.Inputs[0], p.Op)
			return
		}
		scale, zp = s, int64(z)
	}
	if math.Float32bits(scale) != math.Float32bits(n.AttrFloat("act_scale", 0)) || zp != n.AttrInt("act_zero_point", 0) {
		v.failf(label, "%w: u8 input %q is quantised with scale %v, zero point %d; the QLinear's act_scale %v, act_zero_point %d",
			ErrMalformed, n.Inputs[0], scale, zp, n.AttrFloat("act_scale", 0), n.AttrInt("act_zero_point", 0))
	}
}

// readAt is a read of a value: node index and input slot.
type readAt struct{ node, input int }

func (v *verifier) checkQLinearOperands(i int, n *Node) {
	label := nodeLabel(i, n)
	if len(n.Inputs) < 3 {
		return // arity, reported by checkNode
	}
	w := v.g.Initializers[n.Inputs[1]]
	switch {
	case w == nil:
		v.failf(label, "%w: weight %q is not an initializer (the INT8 GEMM packs its weight ahead of time)", ErrMissingTensor, n.Inputs[1])
		return
	case w.DType != Int8 || len(w.Shape) != 2:
		v.failf(label, "%w: weight %q is %s %v, want i8 [K, N]", ErrDTypeMismatch, n.Inputs[1], w.DType, w.Shape)
		return
	}
	k, cols := w.Shape[0], w.Shape[1]
	v.checkColumnVector(label, "weight scale", n.Inputs[2], cols, true)
	if len(n.Inputs) > 3 && n.Inputs[3] != "" {
		v.checkColumnVector(label, "bias", n.Inputs[3], cols, false)
	}
	if QLinearMode(n) == QLinearStatic && !n.HasAttr("act_zero_point") {
		v.failf(label, "%w: static activation quantisation of %q has act_scale but no act_zero_point", ErrMalformed, n.Inputs[0])
	}
	if x, ok := v.g.ValueInfo(n.Inputs[0]); ok && len(x.Shape) > 0 {
		if d := x.Shape[len(x.Shape)-1]; d.Known() && d.Size != k {
			v.failf(label, "%w: input %q has %d channels, weight %q has K = %d", ErrShapeMismatch, n.Inputs[0], d.Size, n.Inputs[1], k)
		}
	}
}

// checkColumnVector checks that name is an f32 [cols] initializer, of
// finite values > 0 if positive.
func (v *verifier) checkColumnVector(label, what, name string, cols int64, positive bool) {
	t := v.g.Initializers[name]
	switch {
	case t == nil:
		v.failf(label, "%w: %s %q is not an initializer", ErrMissingTensor, what, name)
		return
	case t.DType != Float32 || len(t.Shape) != 1:
		v.failf(label, "%w: %s %q is %s %v, want f32 [%d]", ErrDTypeMismatch, what, name, t.DType, t.Shape, cols)
		return
	case t.Shape[0] != cols:
		v.failf(label, "%w: %s %q has %d elements for a weight of %d columns", ErrShapeMismatch, what, name, t.Shape[0], cols)
		return
	}
	if !positive {
		return
	}
	for j, s := range t.F32 {
		if !(s > 0) || math.IsInf(float64(s), 0) {
			v.failf(label, "%w: %s %q[%d] is %v, want finite and > 0", ErrMalformed, what, name, j, s)
			return
		}
	}
}

func (v *verifier) checkTwinReaders(i int, n *Node, readers map[string][]readAt) {
	if len(n.Outputs) < 2 || n.Outputs[1] == "" {
		return
	}
	label, yq := nodeLabel(i, n), n.Outputs[1]
	if v.g.IsOutput(yq) {
		v.failf(label, "%w: smoothed output %q is a graph output; it is meant for quantised GEMMs only", ErrMalformed, yq)
	}
	for _, r := range readers[yq] {
		c := v.g.Nodes[r.node]
		if (c.Op != "sqc.QLinear" && c.Op != "sqc.Quantize") || r.input != 0 {
			v.failf(label, "%w: smoothed output %q is read by %s as input %d; only sqc.QLinear activations (input 0) and their sqc.Quantize may read it", ErrMalformed, yq, nodeLabel(r.node, c), r.input)
		}
	}
}

package passes

import (
	"github.com/sqc-dev/sqc/compiler"
)

// WriteU8Directly lets a producer write the quantised form of its output
// instead of the f32 values when that form is all its readers take: the
// output of an sqc.QLinear (f32, no u8 output yet) or of an INT8
// sqc.Attention (int8 = 1: its P·V epilogue quantises as a QLinear's
// does; FP32 attention has no u8 form), or the twin output y_q of an
// sqc.LayerNormDual, read by exactly one node, a static sqc.Quantize
// (after DeduplicateQuantize: every reader is a quantised GEMM and they
// share one scale and zero point), and no graph output. The producer gets
// that Quantize's scale and zero point as out_scale and out_zero_point and
// produces its u8 output itself; the Quantize and the f32 value go. For a
// LayerNormDual, y must have no quantised reader too: the engine's dual
// kernel writes y in f32 and y_q in u8 from one pass over the row.
//
// A LayerNormalization the INT8 engine runs (last axis, stash_type 1,
// constant f32 [N] scale and bias, only its first output used) whose
// output a static sqc.Quantize reads becomes an sqc.LayerNorm writing the
// form of the first such Quantize (in node order) as its u8 output, and
// its f32 output only if something else reads it.
//
// These are the conditions under which the INT8 engine wrote u8 directly
// when it decided this at lowering (its directU8), and the bits are the
// same: qgemm's u8 epilogue (of a QLinear, or of attention's P·V) and
// nn.LayerNormDual quantise the very values the f32 forms would hold, with
// qgemm.QuantizeU8, as sqc.Quantize does. For attention it saves a step
// per layer and the f32 context's write and read (3 MiB at BERT-base 8 x
// 128).
var WriteU8Directly = Pass{Name: "WriteU8Directly", Run: writeU8Directly, Level: compiler.VerifyQuantized}

func writeU8Directly(g *compiler.Graph) (bool, error) {
	var cur cursor
	defer cur.annotate()
	ix := newIndex(g)
	// soleStaticQuantize returns the one static sqc.Quantize reading v, if
	// that is v's only reader and v is no graph output.
	soleStaticQuantize := func(v string) *compiler.Node {
		c := ix.onlyConsumer(v)
		if c == nil || c.Op != "sqc.Quantize" || compiler.QuantizeMode(c) != compiler.QLinearStatic {
			return nil
		}
		return c
	}
	quantisedReader := func(v string) bool {
		for _, c := range ix.consumers[v] {
			if c.Op == "sqc.Quantize" {
				return true
			}
		}
		return false
	}
	repl := map[*compiler.Node]*compiler.Node{}
	for _, n := range g.Nodes {
		cur.n = n
		if _, _, ok := compiler.U8Output(n); ok {
			continue
		}
		if n.Op == "LayerNormalization" {
			if w, q := layerNormWritingU8(g, ix, n); w != nil {
				repl[n], repl[q] = w, nil
			}
			continue
		}
		out := -1
		switch {
		case n.Op == opQLinear, n.Op == "sqc.Attention" && compiler.AttentionInt8(n):
			out = 0
		case n.Op == "sqc.LayerNormDual":
			if !quantisedReader(n.Outputs[0]) {
				out = 1
			}
		}
		if out < 0 || !isFloat32(g, n.Outputs[out]) {
			continue
		}
		q := soleStaticQuantize(n.Outputs[out])
		if q == nil {
			continue
		}
		w := n.Clone()
		compiler.SetU8Output(w, q.AttrFloat("scale", 0), int32(q.AttrInt("zero_point", 0)))
		w.Outputs[out] = q.Outputs[0]
		repl[n], repl[q] = w, nil
	}
	if len(repl) == 0 {
		return false, nil
	}
	replaceNodes(g, repl)
	removeDead(g)
	return true, g.InferShapes()
}

// layerNormWritingU8 returns the sqc.LayerNorm that replaces
// LayerNormalization n and the sqc.Quantize it absorbs, or nil.
func layerNormWritingU8(g *compiler.Graph, ix *index, n *compiler.Node) (*compiler.Node, *compiler.Node) {
	x := valueInfo(g, n.Inputs[0])
	if x == nil || x.DType != compiler.Float32 || len(x.Shape) == 0 || !x.Shape[len(x.Shape)-1].Known() {
		return nil, nil
	}
	size := int(x.Shape[len(x.Shape)-1].Size)
	if n.AttrInt("stash_type", 1) != 1 {
		return nil, nil
	}
	if axis := n.AttrInt("axis", -1); axis != -1 && axis != int64(len(x.Shape)-1) {
		return nil, nil
	}
	for _, o := range n.Outputs[1:] {
		if o != "" && ix.uses(o) > 0 {
			return nil, nil
		}
	}
	for j, in := range n.Inputs[1:] {
		t := g.Initializers[in]
		if in == "" && j == 1 {
			continue
		}
		if t == nil || t.DType != compiler.Float32 || t.Len() != size {
			return nil, nil
		}
	}
	y := n.Outputs[0]
	var q *compiler.Node
	for _, c := range ix.consumers[y] {
		if c.Op == "sqc.Quantize" && compiler.QuantizeMode(c) == compiler.QLinearStatic &&
			(q == nil || ix.position[c] < ix.position[q]) {
			q = c
		}
	}
	if q == nil {
		return nil, nil
	}
	inputs := n.Inputs[:2]
	if len(n.Inputs) > 2 && n.Inputs[2] != "" {
		inputs = n.Inputs[:3]
	}
	w := &compiler.Node{Op: "sqc.LayerNorm", Name: n.Name, Inputs: append([]string(nil), inputs...), Attrs: compiler.Attrs{}}
	if e, ok := n.Attrs["epsilon"]; ok {
		w.Attrs["epsilon"] = e
	}
	compiler.SetU8Output(w, q.AttrFloat("scale", 0), int32(q.AttrInt("zero_point", 0)))
	w.Outputs = []string{q.Outputs[0]}
	if ix.onlyConsumer(y) != q { // the f32 form is read by something else too
		w.Outputs = append(w.Outputs, y)
	}
	return w, q
}

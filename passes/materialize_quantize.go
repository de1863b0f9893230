package passes

import (
	"github.com/sqc-dev/sqc/compiler"
)

// MaterializeQuantize makes the quantisation of every sqc.QLinear's f32
// input an sqc.Quantize node of its own (compiler/ops_sqc_quantize.go),
// placed just before the QLinear and with the QLinear's parameters: static
// (act_scale, act_zero_point) or dynamic per token, whose row scales and
// zero points the QLinear then reads as inputs 5 and 6. The QLinear reads
// the u8 output instead of x; the op's definition makes that the same
// computation, bit for bit. Each QLinear gets its own node here;
// DeduplicateQuantize then keeps one per value and parameters.
//
// Quantised values are named as the INT8 engine named its buffers when it
// made these decisions itself: x#u8 (static), x#u8dyn, x#rowscale, x#rowzp
// (dynamic), made unique with the graph's Namer.
var MaterializeQuantize = Pass{Name: "MaterializeQuantize", Run: materializeQuantize, Level: compiler.VerifyQuantized}

func materializeQuantize(g *compiler.Graph) (bool, error) {
	var cur cursor
	defer cur.annotate()
	names := g.Namer()
	var out []*compiler.Node
	changed := false
	for _, n := range g.Nodes {
		cur.n = n
		if n.Op != opQLinear || !isFloat32(g, n.Inputs[0]) {
			out = append(out, n)
			continue
		}
		x := n.Inputs[0]
		q := &compiler.Node{Op: "sqc.Quantize", Name: names.Fresh(n.Name + "/quantize"), Inputs: []string{x}, Attrs: compiler.Attrs{}}
		ql := n.Clone()
		if compiler.QLinearMode(n) == compiler.QLinearDynamic {
			q.Attrs["mode"] = compiler.StringAttr(compiler.QLinearDynamic)
			q.Outputs = []string{names.Fresh(x + "#u8dyn"), names.Fresh(x + "#rowscale"), names.Fresh(x + "#rowzp")}
			for len(ql.Inputs) < 5 {
				ql.Inputs = append(ql.Inputs, "")
			}
			ql.Inputs = append(ql.Inputs[:5], q.Outputs[1], q.Outputs[2])
		} else {
			q.Attrs["scale"] = n.Attrs["act_scale"]
			q.Attrs["zero_point"] = n.Attrs["act_zero_point"]
			q.Outputs = []string{names.Fresh(x + "#u8")}
		}
		ql.Inputs[0] = q.Outputs[0]
		out = append(out, q, ql)
		changed = true
	}
	if !changed {
		return false, nil
	}
	g.Nodes = out
	return true, g.InferShapes()
}

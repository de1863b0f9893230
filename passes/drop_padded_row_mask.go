package passes

import (
	"github.com/sqc-dev/sqc/compiler"
)

// DropPaddedRowMask drops the product of a hidden state and the attention
// mask that zeroes padded tokens' rows before the encoder reads them, as
// transformers' DeBERTa does to its embeddings (embeddings * mask, a
// Cast<f32> of the mask unsqueezed to [batch, seq, 1]):
//
//	Mul(x [batch, seq, hidden], [Cast<f32>](Unsqueeze<2 or -1>(mask)))
//
// with mask the rank-2 [batch, seq] value, becomes x. A real token's row
// is x times 1.0, x exactly; only padded rows change, and those are no
// output sqc promises (a packed batch never computes them) and no real
// token reads them past the attention's key mask. The product must be
// read by MatMuls and Adds only (the projections and the residual; Shape
// too, which the product does not change), so a
// masked sum over the tokens (mean pooling's Mul before its ReduceSum,
// FuseMaskedSum's) is never touched, and must not be a graph output.
var DropPaddedRowMask = Pass{Name: "DropPaddedRowMask", Run: dropPaddedRowMask}

func dropPaddedRowMask(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	repl := map[*compiler.Node]*compiler.Node{}
	for _, n := range g.Nodes {
		cur.n = n
		if n.Op != "Mul" || len(n.Inputs) != 2 || ix.isOutput[n.Outputs[0]] || len(ix.consumers[n.Outputs[0]]) == 0 {
			continue
		}
		readersOK := true
		for _, r := range ix.consumers[n.Outputs[0]] {
			readersOK = readersOK && (r.Op == "MatMul" || r.Op == "Add" || r.Op == "Shape")
		}
		if !readersOK {
			continue
		}
		for k := range 2 {
			if x, m := n.Inputs[k], n.Inputs[1-k]; isRowMask(ix, m, x) {
				repl[n] = &compiler.Node{Name: n.Name, Op: "Identity", Inputs: []string{x}, Outputs: []string{n.Outputs[0]}, Attrs: map[string]compiler.Attr{}}
				break
			}
		}
	}
	replaceNodes(g, repl)
	return len(repl) > 0, nil
}

// isRowMask reports whether m is a rank-2 mask unsqueezed to [batch, seq,
// 1] (and cast to float32) for the float32 x [batch, seq, hidden].
func isRowMask(ix *index, m, x string) bool {
	xv, mv := valueInfo(ix.g, x), valueInfo(ix.g, m)
	if xv == nil || mv == nil || xv.DType != compiler.Float32 || len(xv.Shape) != 3 || len(mv.Shape) != 3 ||
		!sameDim(mv.Shape[0], xv.Shape[0]) || !sameDim(mv.Shape[1], xv.Shape[1]) || mv.Shape[2] != (compiler.Dim{Size: 1}) {
		return false
	}
	if c := ix.producedBy(m, "Cast"); c != nil && c.AttrInt("to", 0) == onnxFloat {
		m = c.Inputs[0]
	}
	u := ix.producedBy(m, "Unsqueeze")
	if u == nil {
		return false
	}
	axes, ok := ix.axes(u)
	src := valueInfo(ix.g, u.Inputs[0])
	return ok && len(axes) == 1 && (axes[0] == 2 || axes[0] == -1) && src != nil && len(src.Shape) == 2 && isGraphInput(ix.g, u.Inputs[0])
}

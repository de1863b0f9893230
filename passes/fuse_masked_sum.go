package passes

import (
	"slices"

	"github.com/sqc-dev/sqc/compiler"
)

// FuseMaskedSum replaces the masked sum over the tokens that mean pooling
// in a graph starts with (ModernBERT's classifier_pooling mean; the
// Pooling module of a sentence-transformers model that optimum exports
// with its sentence_embedding),
//
//	ReduceSum(Mul(x, M), axes=[1])       x f32 [batch, seq, hidden]
//	M = [Expand] Cast<f32>([Expand] Unsqueeze(mask, -1)) | Unsqueeze(Cast<f32>(mask), -1)   (mask: an i64 [batch, seq] graph input)
//
// (the Mul's operands in either order, keepdims either way), by
// sqc.MaskedSum(x, mask) {keepdims}: the same float32 products summed in
// float64 in token order. The division by the token count stays as it
// is, on [batch, ...] values. Its point is the packed batch: the sum reads
// each sequence's real tokens, where the Mul by the mask read every
// padded position (compiler/exec packed.go).
var FuseMaskedSum = Pass{Name: "FuseMaskedSum", Run: fuseMaskedSum}

const opMaskedSum = "sqc.MaskedSum"

func fuseMaskedSum(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	repl := map[*compiler.Node]*compiler.Node{}
	for _, r := range g.Nodes {
		cur.n = r
		if r.Op != "ReduceSum" || r.AttrInt("noop_with_empty_axes", 0) != 0 {
			continue
		}
		if axes, ok := ix.axes(r); !ok || len(axes) != 1 || axes[0] != 1 {
			continue
		}
		mul := ix.producedBy(r.Inputs[0], "Mul")
		if mul == nil || ix.onlyConsumer(mul.Outputs[0]) != r {
			continue
		}
		for k := range 2 {
			x, mask := mul.Inputs[k], maskOfTokens(ix, mul.Inputs[1-k])
			xv, mv := valueInfo(g, x), valueInfo(g, mask)
			if mask == "" || xv == nil || mv == nil || xv.DType != compiler.Float32 || len(xv.Shape) != 3 || len(mv.Shape) != 2 ||
				!sameDim(xv.Shape[0], mv.Shape[0]) || !sameDim(xv.Shape[1], mv.Shape[1]) {
				continue
			}
			keep := r.AttrInt("keepdims", 1)
			repl[r] = &compiler.Node{Name: nm.Fresh(r.Name + "/MaskedSum"), Op: opMaskedSum, Inputs: []string{x, mask}, Outputs: []string{r.Outputs[0]},
				Attrs: map[string]compiler.Attr{"keepdims": compiler.IntAttr(keep)}}
			break
		}
	}
	replaceNodes(g, repl)
	if len(repl) > 0 {
		removeDead(g)
	}
	return len(repl) > 0, nil
}

// maskOfTokens returns the i64 [batch, seq] graph input that m is, cast to
// float32 and given a last axis of 1 (then perhaps expanded along it):
// one Cast to float32 and one Unsqueeze at axis -1 or 2, in either order,
// and Expands. "" for anything else.
func maskOfTokens(ix *index, m string) string {
	cast, unsqueeze := false, false
	for range 8 {
		if i := slices.IndexFunc(ix.g.Inputs, func(v *compiler.Value) bool { return v.Name == m }); i >= 0 {
			if cast && unsqueeze && ix.g.Inputs[i].DType == compiler.Int64 {
				return m
			}
			return ""
		}
		n := ix.producer[m]
		if n == nil {
			return ""
		}
		switch n.Op {
		case "Expand":
		case "Cast":
			if cast || n.AttrInt("to", 0) != int64(compiler.Float32.ONNX()) {
				return ""
			}
			cast = true
		case "Unsqueeze":
			axes, ok := ix.axes(n)
			if unsqueeze || !ok || len(axes) != 1 || (axes[0] != -1 && axes[0] != 2) {
				return ""
			}
			unsqueeze = true
		default:
			return ""
		}
		m = n.Inputs[0]
	}
	return ""
}

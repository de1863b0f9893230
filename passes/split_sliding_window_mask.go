package passes

import (
	"math"

	"github.com/sqc-dev/sqc/compiler"
)

// SplitSlidingWindowMask separates a sliding window from the padding mask
// it is folded into, as ModernBERT's local attention layers have it
// (transformers' _update_attention_mask: the padding mask, expanded to
// [batch, 1, seq, seq], with float32's lowest written where |i - j|
// exceeds half the window):
//
//	Add(scores, Where(outside, lowest, Expand(M)))    M = sqc.AttentionMask(mask) {fill: lowest}
//
// becomes the form FuseAttention takes a bias and a mask in, MPNet's,
//
//	Add(Add(scores, Where(outside, lowest, 0)), M)
//
// so the window is the attention's bias, which MarkPositionOnlyBias can
// prove a function of positions only (then batches run padding-free), and
// M its mask. The attention adds bias and mask saturating
// (nn.AddSaturating): a key outside the window and padded gets lowest +
// lowest = lowest, so every score gets exactly the addend Where chose,
// rows whose every key is masked included. Both fills must be float32's
// lowest (-math.MaxFloat32), which is what makes that exact; the operands
// of the Add may be in either order, and the Expand may be absent.
var SplitSlidingWindowMask = Pass{Name: "SplitSlidingWindowMask", Run: splitSlidingWindowMask}

func splitSlidingWindowMask(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	bias := map[string]string{} // a Where's output -> the bias made of it
	var changed bool
	var extra []*compiler.Node
	for _, n := range g.Nodes {
		cur.n = n
		if n.Op != "Add" || len(n.Inputs) != 2 {
			continue
		}
		for k := range 2 {
			scores, w := n.Inputs[k], n.Inputs[1-k]
			s, _ := peelScale(ix, scores)
			if ix.producedBy(s, "MatMul") == nil {
				continue
			}
			outside, mask, ok := windowOfMask(ix, w)
			if !ok {
				continue
			}
			b, done := bias[w]
			if !done {
				b = nm.Fresh(w + "/window_bias")
				extra = append(extra, &compiler.Node{Name: b, Op: "Where",
					Inputs:  []string{outside, ix.producer[w].Inputs[1], scalarConst(g, nm, w+"/zero", 0)},
					Outputs: []string{b}})
				bias[w] = b
			}
			inner := nm.Fresh(n.Name + "/window")
			extra = append(extra, &compiler.Node{Name: inner, Op: "Add", Inputs: []string{scores, b}, Outputs: []string{inner}})
			n.Inputs = []string{inner, mask}
			changed = true
			break
		}
	}
	if !changed {
		return false, nil
	}
	g.Nodes = append(g.Nodes, extra...)
	if err := g.SortTopological(); err != nil {
		return false, err
	}
	removeDead(g)
	return true, g.InferShapes()
}

// windowOfMask matches w = Where(outside, lowest, Expand(M)) or
// Where(outside, lowest, M), M an sqc.AttentionMask of fill lowest, and
// returns outside and M.
func windowOfMask(ix *index, w string) (outside, mask string, ok bool) {
	where := ix.producedBy(w, "Where")
	if where == nil || len(where.Inputs) != 3 {
		return "", "", false
	}
	if v, ok := ix.scalar(where.Inputs[1]); !ok || v != -math.MaxFloat32 {
		return "", "", false
	}
	m := where.Inputs[2]
	if e := ix.producedBy(m, "Expand"); e != nil {
		m = e.Inputs[0]
	}
	am := ix.producedBy(m, opAttentionMask)
	if am == nil || am.AttrFloat("fill", compiler.AttentionMaskDefaultFill) != -math.MaxFloat32 {
		return "", "", false
	}
	return where.Inputs[0], m, true
}

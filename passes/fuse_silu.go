package passes

import "github.com/sqc-dev/sqc/compiler"

// FuseSilu replaces SiLU written out in elementwise ops by sqc.Silu: x *
// sigmoid(x), as torch.onnx exports F.silu and nn.SiLU,
//
//	Mul(x, Sigmoid(x))
//
// with the Mul's operands in either order, becomes sqc.Silu(x), which a
// QLinear's epilogue absorbs (compiler.EpilogueAct). The Sigmoid may have
// other readers; it then stays for them.
var FuseSilu = Pass{Name: "FuseSilu", Run: fuseSilu}

func fuseSilu(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	repl := map[*compiler.Node]*compiler.Node{}
	for _, n := range g.Nodes {
		cur.n = n
		if n.Op != "Mul" || len(n.Inputs) != 2 {
			continue
		}
		for _, x := range n.Inputs {
			sig, ok := otherInput(n, x)
			if !ok || sig == x {
				continue
			}
			s := ix.producedBy(sig, "Sigmoid")
			if s == nil || s.Inputs[0] != x || !isFloat32(g, x) {
				continue
			}
			repl[n] = &compiler.Node{
				Name:    nm.Fresh(n.Name + "/Silu"),
				Op:      "sqc.Silu",
				Inputs:  []string{x},
				Outputs: []string{n.Outputs[0]},
			}
			break
		}
	}
	replaceNodes(g, repl)
	if len(repl) > 0 {
		removeDead(g)
	}
	return len(repl) > 0, nil
}

package passes

import "github.com/sqc-dev/sqc/compiler"

// EliminateDeadNodes removes Identity nodes (readers are pointed at the
// Identity's input), then every node none of whose outputs reaches a graph
// output, then initializers and value records nothing refers to any more.
// Graph input and output names never change.
var EliminateDeadNodes = Pass{Name: "EliminateDeadNodes", Run: eliminateDeadNodes}

func eliminateDeadNodes(g *compiler.Graph) (bool, error) {
	changed := eliminateIdentities(g)
	if removeDead(g) {
		changed = true
	}
	return changed, nil
}

// eliminateIdentities bypasses Identity nodes. An Identity whose output is
// a graph output keeps that name: its input's producer is renamed to
// produce the output directly, unless the input is a graph input or an
// initializer (or another output), in which case the Identity stays as the
// only way to give that value a second name.
func eliminateIdentities(g *compiler.Graph) bool {
	changed := false
	for {
		ix := newIndex(g)
		var victim *compiler.Node
		for _, n := range g.Nodes {
			if n.Op == "Identity" && len(n.Inputs) == 1 && len(n.Outputs) == 1 && n.Inputs[0] != "" && canBypass(ix, n) {
				victim = n
				break
			}
		}
		if victim == nil {
			return changed
		}
		in, out := victim.Inputs[0], victim.Outputs[0]
		if ix.isOutput[out] {
			// Rename the producer's output to the graph output's name.
			p := ix.producer[in]
			for i, o := range p.Outputs {
				if o == in {
					p.Outputs[i] = out
				}
			}
			renameInputs(g, in, out)
			if v := g.Values[in]; v != nil && g.Values[out] == nil {
				g.Values[out] = &compiler.Value{Name: out, DType: v.DType, Shape: v.Shape}
			}
			delete(g.Values, in)
		} else {
			renameInputs(g, out, in)
			delete(g.Values, out)
		}
		replaceNodes(g, map[*compiler.Node]*compiler.Node{victim: nil})
		changed = true
	}
}

func canBypass(ix *index, id *compiler.Node) bool {
	in, out := id.Inputs[0], id.Outputs[0]
	if !ix.isOutput[out] {
		return true
	}
	// The output name must survive; only a node-produced, non-output input
	// can take it over.
	p := ix.producer[in]
	return p != nil && !ix.isOutput[in]
}

// removeDead deletes nodes that do not contribute to a graph output, then
// initializers and g.Values entries nothing refers to, and reports whether
// a node or initializer went (value records are descriptive only).
func removeDead(g *compiler.Graph) bool {
	inits := len(g.Initializers)
	return g.RemoveUnused() > 0 || len(g.Initializers) != inits
}

package passes

import (
	"github.com/sqc-dev/sqc/compiler"
)

// DropNoOpCasts turns a Cast to the dtype its input already has into an
// Identity, which EliminateDeadNodes then bypasses. Such Casts are what a
// float16 model's converter Casts become once the ONNX frontend widens
// the model to float32 (compiler/onnx/float16.go): convert_float_to_float16
// casts each float graph output back to float32 from the float16 graph,
// and wraps every op it keeps in float32 in a Cast to float32 and one
// back. Left in place they would sit inside the chains the fusion passes
// follow producer to consumer. A Cast whose input dtype inference left
// unknown stays.
var DropNoOpCasts = Pass{Name: "DropNoOpCasts", Run: dropNoOpCasts}

func dropNoOpCasts(g *compiler.Graph) (bool, error) {
	repl := map[*compiler.Node]*compiler.Node{}
	for _, n := range g.Nodes {
		if n.Op != "Cast" || len(n.Inputs) != 1 || len(n.Outputs) != 1 {
			continue
		}
		to, ok := compiler.DTypeFromONNX(n.AttrInt("to", 0))
		in := valueInfo(g, n.Inputs[0])
		if !ok || in == nil || in.DType != to {
			continue
		}
		repl[n] = &compiler.Node{Name: n.Name, Op: "Identity", Inputs: []string{n.Inputs[0]}, Outputs: []string{n.Outputs[0]}, Attrs: map[string]compiler.Attr{}}
	}
	replaceNodes(g, repl)
	return len(repl) > 0, nil
}

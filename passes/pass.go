// Package passes holds sqc's graph-to-graph rewrites and the driver that runs
// them in one fixed order (see Pipeline). Each pass lives in its own file and
// is a plain value: a verb for a name (FoldConstants, FuseLayerNorm, ...) and
// a function that rewrites a *compiler.Graph in place and reports whether it
// changed anything.
//
// The cleaning and canonicalisation passes at the front of the pipeline turn
// what exporters emit (torch.onnx's decomposed LayerNorm, erf GELU, dynamic
// shape chains, mask arithmetic, unfused attention) into a handful of
// canonical ops — Linear, LayerNormalization, Gelu, AttentionMask and
// Attention — so later passes (SmoothQuant, quantisation, fusion, memory
// planning) and code generation see one form per model family, whichever
// frontend built the graph.
package passes

import "github.com/sqc-dev/sqc/compiler"

// Pass is one rewrite of the graph. Run mutates g in place and reports
// whether it changed anything; it must leave a graph that verifies whenever
// it was given one that does. Name is a verb in CamelCase; it names the pass
// in logs, in dump files and on the command line (`sqc inspect --after`).
type Pass struct {
	Name string
	Run  func(g *compiler.Graph) (changed bool, err error)
	// Level is the verifier level of the graphs this pass leaves: from the
	// first pass of a list with compiler.VerifyQuantized on (Quantize and
	// the fusions after it), Options.CheckIR verifies at that level.
	Level compiler.VerifyLevel
}

// maxFixpointRounds bounds ToFixpoint: every pass in this package shrinks
// or canonicalises the graph, so a pass still changing things after this
// many rounds is looping, which is a bug worth an error rather than a hang.
const maxFixpointRounds = 64

// ToFixpoint wraps p so that it reruns until a round reports no change. Use
// it for passes whose rewrites enable more of the same rewrite (folding a
// Shape makes its Gather foldable, and so on) and that do not already loop
// internally.
func ToFixpoint(p Pass) Pass {
	return Pass{Name: p.Name, Level: p.Level, Run: func(g *compiler.Graph) (bool, error) {
		any := false
		for round := 0; round < maxFixpointRounds; round++ {
			changed, err := p.Run(g)
			if err != nil {
				return any, err
			}
			if !changed {
				return any, nil
			}
			any = true
		}
		return any, errNoFixpoint(p.Name, maxFixpointRounds)
	}}
}

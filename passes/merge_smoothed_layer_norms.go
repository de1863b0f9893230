package passes

import (
	"math"

	"github.com/sqc-dev/sqc/compiler"
)

// MergeSmoothedLayerNorms merges the two LayerNormalizations of one input
// that SmoothQuant leaves in every post-LN block (smoothquant.go): the
// original, whose output is the residual stream, and its twin with
// gamma/s and beta/s, whose output only sqc.QLinears read. The pair
// becomes one sqc.LayerNormDual (compiler/ops_sqc_layernorm.go):
//
//	y  = LayerNormalization(x, gamma, beta)
//	ys = LayerNormalization(x, gamma/s, beta/s)   (read by QLinears only)
//
// becomes
//
//	y, ys = sqc.LayerNormDual(x, gamma, gamma/s, beta, beta/s)
//
// so the row statistics are computed once and x is read once: compiler/exec
// and generated code run it as nn.LayerNormDual, which writes y in f32 and
// ys straight in the u8 form its static QLinears read. Each output is
// exactly the LayerNormalization it replaces (same statistics, same
// per-element float64 arithmetic), so the bits do not change.
//
// A pair is merged when both nodes normalise the same f32 value over its
// last axis (stash_type 1) with one epsilon, have constant f32 [N] gamma
// and betas (both with a beta or neither), use only their first output,
// and exactly one of the two outputs is read by sqc.QLinear inputs (as x)
// and nothing else. The merged node takes the place of the earlier of the
// two (x is computed before both, and every reader of either output comes
// after it) and the name of the one that is not the twin.
var MergeSmoothedLayerNorms = Pass{Name: "MergeSmoothedLayerNorms", Run: mergeSmoothedLayerNorms, Level: compiler.VerifyQuantized}

// opLayerNormDual is the merged LayerNorm pair.
const opLayerNormDual = "sqc.LayerNormDual"

func mergeSmoothedLayerNorms(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	byInput := map[string][]*compiler.Node{}
	var inputs []string // in order of first LayerNorm, for a deterministic result
	for _, n := range g.Nodes {
		cur.n = n
		if n.Op != "LayerNormalization" || !mergeableLayerNorm(g, ix, n) {
			continue
		}
		x := n.Inputs[0]
		if len(byInput[x]) == 0 {
			inputs = append(inputs, x)
		}
		byInput[x] = append(byInput[x], n)
	}
	repl := map[*compiler.Node]*compiler.Node{}
	for _, x := range inputs {
		lns := byInput[x]
		if len(lns) != 2 {
			continue // one LayerNorm, or more than the SmoothQuant pair
		}
		a, b := lns[0], lns[1]
		if !sameNormalisation(a, b) {
			continue
		}
		qa, qb := readByQLinearsOnly(ix, a.Outputs[0]), readByQLinearsOnly(ix, b.Outputs[0])
		if qa == qb {
			continue // no twin, or two quantised readers' LayerNorms
		}
		orig, twin := a, b
		if qa {
			orig, twin = b, a
		}
		ins := []string{x, orig.Inputs[1], twin.Inputs[1]}
		if hasBeta(orig) {
			ins = append(ins, orig.Inputs[2], twin.Inputs[2])
		}
		merged := &compiler.Node{
			Name:    orig.Name,
			Op:      opLayerNormDual,
			Inputs:  ins,
			Outputs: []string{orig.Outputs[0], twin.Outputs[0]},
		}
		if e, ok := a.Attrs["epsilon"]; ok {
			merged.Attrs = map[string]compiler.Attr{"epsilon": e}
		}
		// a comes first in g.Nodes: the merged node takes its place.
		repl[a], repl[b] = merged, nil
	}
	if len(repl) == 0 {
		return false, nil
	}
	replaceNodes(g, repl)
	removeDead(g) // the records of the unused Mean/InvStdDev outputs, if any
	return true, nil
}

// mergeableLayerNorm reports whether ln is a last-axis LayerNorm of an f32
// value with constant f32 [N] parameters (lastAxisAffine), stash_type 1
// and no reader of its optional outputs.
func mergeableLayerNorm(g *compiler.Graph, ix *index, ln *compiler.Node) bool {
	if !isFloat32(g, ln.Inputs[0]) || !lastAxisAffine(g, ln) || ln.AttrInt("stash_type", 1) != 1 {
		return false
	}
	if ix.uses(ln.Outputs[0]) == 0 {
		return false
	}
	for _, out := range ln.Outputs[1:] {
		if out != "" && ix.uses(out) > 0 {
			return false
		}
	}
	return true
}

// sameNormalisation reports whether two mergeable LayerNorms compute the
// same statistics (one epsilon, bit for bit, of a value sqc.LayerNormDual
// accepts) and agree on having a beta.
func sameNormalisation(a, b *compiler.Node) bool {
	ea, eb := a.AttrFloat("epsilon", 1e-5), b.AttrFloat("epsilon", 1e-5)
	return math.Float32bits(ea) == math.Float32bits(eb) && ea >= 0 && !math.IsInf(float64(ea), 0) && hasBeta(a) == hasBeta(b)
}

func hasBeta(ln *compiler.Node) bool { return len(ln.Inputs) > 2 && ln.Inputs[2] != "" }

// readByQLinearsOnly reports whether v's only readers are sqc.QLinears
// reading it as their activation (input 0) and v is no graph output.
func readByQLinearsOnly(ix *index, v string) bool {
	if ix.isOutput[v] || len(ix.consumers[v]) == 0 {
		return false
	}
	for _, c := range ix.consumers[v] {
		if c.Op != opQLinear {
			return false
		}
		for i, in := range c.Inputs {
			if in == v && i != 0 {
				return false
			}
		}
	}
	return true
}

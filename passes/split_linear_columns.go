package passes

import (
	"github.com/sqc-dev/sqc/compiler"
)

// SplitLinearColumns gives each column range of a projection that is read
// only in slices its own projection: an sqc.Linear(x, W[, b]) whose every
// reader is a Slice of a constant [start, end) of its last axis (step 1)
// is replaced by one sqc.Linear(x, W[:, start:end][, b[start:end]]) per
// Slice, computing exactly that Slice (each output column is its own dot
// product). ModernBERT's Wqkv and its GLU's Wi are such projections, read
// as three head groups and as an input and a gate half (UnpackQKVHeads
// turns the head split into column Slices): split, Q, K and V become the
// projections FuseQKV packs for the attention, and the GLU's halves
// Linears the quantiser and the GELU epilogue take. The weights are
// copied into new initializers; the old ones go when nothing reads them.
var SplitLinearColumns = Pass{Name: "SplitLinearColumns", Run: splitLinearColumns}

func splitLinearColumns(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	repl := map[*compiler.Node]*compiler.Node{}
	for _, n := range g.Nodes {
		cur.n = n
		if n.Op != opLinear {
			continue
		}
		w := g.Initializers[n.Inputs[1]]
		if w == nil || w.DType != compiler.Float32 || len(w.Shape) != 2 {
			continue
		}
		var bias *compiler.Tensor
		if len(n.Inputs) > 2 && n.Inputs[2] != "" {
			if bias = g.Initializers[n.Inputs[2]]; bias == nil || bias.DType != compiler.Float32 || len(bias.Shape) != 1 {
				continue
			}
		}
		slices, ok := columnSlices(ix, n.Outputs[0], w.Shape[1])
		if !ok {
			continue
		}
		for _, s := range slices {
			inputs := []string{n.Inputs[0], nm.Fresh(n.Inputs[1] + "/columns")}
			g.Initializers[inputs[1]] = columns(w, s.start, s.end)
			if bias != nil {
				inputs = append(inputs, nm.Fresh(n.Inputs[2]+"/columns"))
				g.Initializers[inputs[2]] = columns(bias, s.start, s.end)
			}
			repl[s.node] = &compiler.Node{Name: nm.Fresh(n.Name + "/columns"), Op: opLinear, Inputs: inputs, Outputs: []string{s.node.Outputs[0]}}
		}
	}
	replaceNodes(g, repl)
	if len(repl) > 0 {
		removeDead(g)
	}
	return len(repl) > 0, nil
}

type columnSlice struct {
	node       *compiler.Node
	start, end int64
}

// columnSlices returns the readers of y, a [..., width] value, when every
// one is a Slice of a constant non-empty [start, end) of its last axis
// with step 1 (ends past width read to the end); false otherwise.
func columnSlices(ix *index, y string, width int64) ([]columnSlice, bool) {
	v := valueInfo(ix.g, y)
	readers := ix.consumers[y]
	if ix.isOutput[y] || len(readers) == 0 || v == nil || len(v.Shape) == 0 {
		return nil, false
	}
	last := int64(len(v.Shape) - 1)
	var out []columnSlice
	for _, s := range readers {
		start, end, axis, ok := ix.oneAxisSlice(s)
		if !ok || s.Inputs[0] != y || (axis != -1 && axis != last) {
			return nil, false
		}
		a, b := start, min(end, width)
		if a < 0 || a >= b {
			return nil, false
		}
		out = append(out, columnSlice{s, a, b})
	}
	return out, true
}

// columns copies columns [start, end) of a [K, N] matrix, or elements of
// a vector.
func columns(t *compiler.Tensor, start, end int64) *compiler.Tensor {
	if len(t.Shape) == 1 {
		out := compiler.NewTensor(compiler.Float32, end-start)
		copy(out.F32, t.F32[start:end])
		return out
	}
	rows, n := t.Shape[0], t.Shape[1]
	out := compiler.NewTensor(compiler.Float32, rows, end-start)
	for r := range rows {
		copy(out.F32[r*(end-start):(r+1)*(end-start)], t.F32[r*n+start:r*n+end])
	}
	return out
}

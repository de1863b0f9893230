package passes

import (
	"github.com/sqc-dev/sqc/compiler"
)

// FuseEmbeddings replaces the input-embedding sum of BERT-family graphs by
// one sqc.Embeddings op, so neither the runtime nor generated code needs
// the Shape/Gather/Unsqueeze/Slice plumbing torch exports for position ids:
//
//	LayerNormalization(Add(W, P), gamma, beta)   ->   LayerNormalization(sqc.Embeddings(...), gamma, beta)
//	W = Gather(word, ids) | Add(Gather(word, ids), Gather(type, type_ids))
//	P = Gather(pos, Slice(arange_const [1, maxPos], 0, seq, axis 1))   (torch.onnx: position_ids buffer)
//	  | Slice(pos, 0, seq, axis 0)                                     (the HF frontend)
//
// where seq must be the sequence length of ids: the pass checks that the
// inferred shape of P has ids' second dimension (the same symbol, or the
// same static size), and that the position ids are 0, 1, 2, ... — so the
// fused op's "positions 0..seq-1" is what the graph computed. Only sums
// that feed a LayerNormalization are matched (that is what marks them as
// the embeddings); the LayerNormalization itself stays, for SmoothQuant to
// fold into. The dead plumbing is left to EliminateDeadNodes.
var FuseEmbeddings = Pass{Name: "FuseEmbeddings", Run: fuseEmbeddings}

func fuseEmbeddings(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	repl := map[*compiler.Node]*compiler.Node{}
	nm := g.Namer()
	for _, ln := range g.Nodes {
		cur.n = ln
		if ln.Op != "LayerNormalization" {
			continue
		}
		sum := ix.producedBy(ln.Inputs[0], "Add")
		if sum == nil || ix.onlyConsumer(sum.Outputs[0]) != ln {
			continue
		}
		var m embedMatch
		ok := false
		for k := range 2 {
			if m, ok = matchEmbedTerms(g, ix, sum.Inputs[k], sum.Inputs[1-k]); ok {
				break
			}
		}
		if !ok {
			continue
		}
		inputs := []string{m.ids, m.word, m.pos}
		if m.typ != "" {
			inputs = append(inputs, m.typeIDs, m.typ)
		}
		repl[sum] = &compiler.Node{
			Name:    nm.Fresh(sum.Name + "/Embeddings"),
			Op:      "sqc.Embeddings",
			Inputs:  inputs,
			Outputs: []string{sum.Outputs[0]},
		}
	}
	replaceNodes(g, repl)
	return len(repl) > 0, nil
}

type embedMatch struct {
	ids, typeIDs, word, pos, typ string
}

// matchEmbedTerms matches w as the word (+ type) term and p as the
// position term.
func matchEmbedTerms(g *compiler.Graph, ix *index, w, p string) (embedMatch, bool) {
	var m embedMatch
	gather := func(name string) (table, indices string, ok bool) {
		n := ix.producedBy(name, "Gather")
		if n == nil || n.AttrInt("axis", 0) != 0 || ix.onlyConsumer(name) == nil {
			return "", "", false
		}
		t := ix.constant(n.Inputs[0])
		if t == nil || t.DType != compiler.Float32 || len(t.Shape) != 2 || !isGraphInput(g, n.Inputs[1]) {
			return "", "", false
		}
		return n.Inputs[0], n.Inputs[1], true
	}
	if table, ids, ok := gather(w); ok {
		m.word, m.ids = table, ids
	} else if add := ix.producedBy(w, "Add"); add != nil && ix.onlyConsumer(w) != nil {
		wt, wi, ok1 := gather(add.Inputs[0])
		tt, ti, ok2 := gather(add.Inputs[1])
		if !ok1 || !ok2 {
			return m, false
		}
		m.word, m.ids, m.typ, m.typeIDs = wt, wi, tt, ti
	} else {
		return m, false
	}
	pos, ok := matchPositions(g, ix, p, m.ids)
	if !ok {
		return m, false
	}
	m.pos = pos
	return m, true
}

// matchPositions matches p as rows 0..seq-1 of a constant position table,
// seq being dimension 1 of ids, and returns the table's name.
func matchPositions(g *compiler.Graph, ix *index, p, ids string) (string, bool) {
	idsInfo, pInfo := valueInfo(g, ids), valueInfo(g, p)
	if idsInfo == nil || pInfo == nil || len(idsInfo.Shape) != 2 || len(pInfo.Shape) < 2 {
		return "", false
	}
	seq := idsInfo.Shape[1]
	sameDim := func(d compiler.Dim) bool {
		if seq.Param != "" {
			return d.Param == seq.Param
		}
		return seq.Known() && d.Known() && d.Size == seq.Size
	}
	// HF frontend form: Slice(pos, [0], seq, [0]) -> [seq, H].
	if sl := ix.producedBy(p, "Slice"); sl != nil {
		table := ix.constant(sl.Inputs[0])
		if table != nil && table.DType == compiler.Float32 && len(table.Shape) == 2 &&
			len(pInfo.Shape) == 2 && sameDim(pInfo.Shape[0]) && slicesFromZero(ix, sl, 0) {
			return sl.Inputs[0], true
		}
		return "", false
	}
	// torch.onnx form: Gather(pos, Slice(arange [1, maxPos], [0], seq, [1])) -> [1, seq, H].
	ga := ix.producedBy(p, "Gather")
	if ga == nil || ga.AttrInt("axis", 0) != 0 || len(pInfo.Shape) != 3 || !pInfo.Shape[0].Known() || pInfo.Shape[0].Size != 1 || !sameDim(pInfo.Shape[1]) {
		return "", false
	}
	table := ix.constant(ga.Inputs[0])
	sl := ix.producedBy(ga.Inputs[1], "Slice")
	if table == nil || table.DType != compiler.Float32 || len(table.Shape) != 2 || sl == nil || !slicesFromZero(ix, sl, 1) {
		return "", false
	}
	posIDs := ix.constant(sl.Inputs[0])
	if posIDs == nil || posIDs.DType != compiler.Int64 || len(posIDs.Shape) != 2 || posIDs.Shape[0] != 1 {
		return "", false
	}
	for i, v := range posIDs.I64 {
		if v != int64(i) {
			return "", false
		}
	}
	return ga.Inputs[0], true
}

// slicesFromZero reports whether Slice node sl (opset >= 10 form) slices
// only axis from 0 with step 1.
func slicesFromZero(ix *index, sl *compiler.Node, axis int64) bool {
	if len(sl.Inputs) < 3 {
		return false
	}
	starts, ok := ix.ints(sl.Inputs[1])
	if !ok || len(starts) != 1 || starts[0] != 0 {
		return false
	}
	if len(sl.Inputs) > 3 && sl.Inputs[3] != "" {
		axes, ok := ix.ints(sl.Inputs[3])
		if !ok || len(axes) != 1 || axes[0] != axis {
			return false
		}
	} else if axis != 0 {
		return false
	}
	if len(sl.Inputs) > 4 && sl.Inputs[4] != "" {
		steps, ok := ix.ints(sl.Inputs[4])
		if !ok || len(steps) != 1 || steps[0] != 1 {
			return false
		}
	}
	return true
}

func isGraphInput(g *compiler.Graph, name string) bool {
	for _, in := range g.Inputs {
		if in.Name == name {
			return true
		}
	}
	return false
}

package passes

import (
	"github.com/sqc-dev/sqc/compiler"
)

// FuseEmbeddings replaces the input-embedding sum of BERT-family graphs by
// one sqc.Embeddings op, so neither the runtime nor generated code needs
// the Shape/Gather/Unsqueeze/Slice plumbing torch exports for position ids:
//
//	LayerNormalization(Add(W, P), gamma, beta)   ->   LayerNormalization(sqc.Embeddings(...), gamma, beta)
//	  | LayerNormalization(Add(Add(word, P), T), gamma, beta)            (older transformers, ONNX Runtime's
//	                                                                     EmbedLayerNormalization: positions_first)
//	W = Gather(word, ids) | Add(Gather(word, ids), T)
//	T = Gather(type, type_ids)                                         (BERT)
//	  | Gather(type, Expand|Slice(...(all-zero i64 constant)))          (torch.onnx RoBERTa: buffered type ids)
//	  | one f32 row [H] or [1, H]                                      (the HF frontend's RoBERTa: Gather(type, 0), folded)
//	P = Gather(pos, Slice(arange_const [1, maxPos], 0, seq, axis 1))   (torch.onnx: position_ids buffer)
//	  | Gather(pos, Unsqueeze(Range(0, seq, 1)))                       (torch.onnx: arange(seq)[None])
//	  | Slice(pos, 0, seq, axis 0)                                     (the HF frontend)
//	  | Gather(pos, Add([Cast](Mul(CumSum(m, 1), m)), pad))              (RoBERTa, XLM-R: padding_idx = pad)
//	m = Cast(Not(Equal(ids, pad)), to=int32|int64)
//
// where seq must be the sequence length of ids: the pass checks that the
// inferred shape of P has ids' second dimension (the same symbol, or the
// same static size), and that the position ids are 0, 1, 2, ... — so the
// fused op's "positions 0..seq-1" is what the graph computed — or the
// padding-offset count of transformers' create_position_ids_from_input_ids
// (the op's padding_idx). A type row without type ids becomes row 0 of a
// [types, H] table with input 3 empty (the all-zero type ids). A word
// lookup W = Gather(word, ids) that feeds the LayerNormalization itself,
// with no sum (ModernBERT, whose positions are rotary), or summed with a
// type term alone (JinaBERT, whose positions are ALiBi), becomes
// sqc.Embeddings without a position table. Only sums
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
		if table, ids, ok := embedGather(g, ix, ln.Inputs[0]); ok {
			// The word embedding alone (ModernBERT: no position or type
			// term): sqc.Embeddings without a position table.
			repl[ix.producer[ln.Inputs[0]]] = &compiler.Node{Name: nm.Fresh(ln.Inputs[0] + "/Embeddings"), Op: "sqc.Embeddings",
				Inputs: []string{ids, table, ""}, Outputs: []string{ln.Inputs[0]}, Attrs: map[string]compiler.Attr{}}
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
			m, ok = matchPositionsFirst(g, ix, sum)
		}
		if !ok {
			if m, ok = matchWordAndType(g, ix, sum); !ok {
				continue
			}
		}
		if m.typeRow != nil { // a [1, H] table for the row
			m.typ = nm.Fresh(m.typ + "/table")
			g.Initializers[m.typ] = m.typeRow
		}
		inputs := []string{m.ids, m.word, m.pos}
		if m.typ != "" {
			inputs = append(inputs, m.typeIDs, m.typ)
		}
		fused := &compiler.Node{
			Name:    nm.Fresh(sum.Name + "/Embeddings"),
			Op:      "sqc.Embeddings",
			Inputs:  inputs,
			Outputs: []string{sum.Outputs[0]},
		}
		fused.Attrs = map[string]compiler.Attr{}
		if m.padPositions {
			fused.Attrs["padding_idx"] = compiler.IntAttr(m.paddingIdx)
		}
		if m.positionsFirst {
			fused.Attrs["positions_first"] = compiler.IntAttr(1)
		}
		repl[sum] = fused
	}
	replaceNodes(g, repl)
	return len(repl) > 0, nil
}

type embedMatch struct {
	ids, typeIDs, word, pos, typ string // typeIDs "": type 0 for every token
	// typeRow, when set, is the [1, H] table to add for a type row that is
	// not one yet (then typ names the row it copies).
	typeRow      *compiler.Tensor
	padPositions bool // RoBERTa's position ids, offset by paddingIdx
	paddingIdx   int64
	// positionsFirst: the sum is (word + position) + type, as older
	// transformers and ONNX Runtime's EmbedLayerNormalization add them.
	positionsFirst bool
}

// matchPositionsFirst matches sum as (W + P) + T: W the word Gather, P the
// position term (as matchEmbedTerms takes it) and T the type term (a type
// Gather at type ids, or one type row as matchTypeRow takes it).
func matchPositionsFirst(g *compiler.Graph, ix *index, sum *compiler.Node) (embedMatch, bool) {
	for k := range 2 {
		inner := ix.producedBy(sum.Inputs[k], "Add")
		if inner == nil || ix.onlyConsumer(sum.Inputs[k]) != sum {
			continue
		}
		for j := range 2 {
			m, ok := matchEmbedTerms(g, ix, inner.Inputs[j], inner.Inputs[1-j])
			if !ok || m.typ != "" {
				continue
			}
			// The type term, added to the word + position sum.
			if tt, ti, ok := embedGather(g, ix, sum.Inputs[1-k]); ok {
				m.typ, m.typeIDs = tt, ti
			} else if !matchTypeRow(g, ix, &m, sum.Inputs[k], sum.Inputs[1-k], sum.Outputs[0]) {
				continue
			}
			m.positionsFirst = true
			return m, true
		}
	}
	return embedMatch{}, false
}

// matchWordAndType matches sum as W + T with no position term
// (JinaBERT, whose positions are ALiBi, in the attention): W the word
// Gather, T a type Gather at type ids or one type row (matchTypeRow).
// m.pos stays empty: sqc.Embeddings without a position table. Of two
// Gathers the first operand is the word term, as torch and the HF
// frontend write the sum (either way it adds the same two rows).
func matchWordAndType(g *compiler.Graph, ix *index, sum *compiler.Node) (embedMatch, bool) {
	var m embedMatch
	for k := range 2 {
		wt, wi, ok := embedGather(g, ix, sum.Inputs[k])
		if !ok {
			continue
		}
		m.word, m.ids = wt, wi
		if tt, ti, ok := embedGather(g, ix, sum.Inputs[1-k]); ok && k == 0 {
			m.typ, m.typeIDs = tt, ti
			return m, true
		}
		if matchTypeRow(g, ix, &m, sum.Inputs[k], sum.Inputs[1-k], sum.Outputs[0]) {
			return m, true
		}
	}
	return embedMatch{}, false
}

// matchEmbedTerms matches w as the word (+ type) term and p as the
// position term.
func matchEmbedTerms(g *compiler.Graph, ix *index, w, p string) (embedMatch, bool) {
	var m embedMatch
	gather := func(name string) (table, indices string, ok bool) { return embedGather(g, ix, name) }
	if table, ids, ok := gather(w); ok {
		m.word, m.ids = table, ids
	} else if add := ix.producedBy(w, "Add"); add != nil && ix.onlyConsumer(w) != nil {
		wt, wi, ok := gather(add.Inputs[0])
		if !ok {
			return m, false
		}
		m.word, m.ids = wt, wi
		if tt, ti, ok := gather(add.Inputs[1]); ok {
			m.typ, m.typeIDs = tt, ti
		} else if !matchTypeRow(g, ix, &m, add.Inputs[0], add.Inputs[1], add.Outputs[0]) {
			return m, false
		}
	} else {
		return m, false
	}
	if pos, ok := matchPositions(g, ix, p, m.ids); ok {
		m.pos = pos
		return m, true
	}
	pos, pad, ok := matchPadPositions(g, ix, p, m.ids)
	m.pos, m.padPositions, m.paddingIdx = pos, true, pad
	return m, ok
}

// embedGather matches name as a row lookup of a graph input's ids in a
// constant f32 table: Gather(table [rows, H], ids, axis 0), read once.
func embedGather(g *compiler.Graph, ix *index, name string) (table, indices string, ok bool) {
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

// matchTypeRow matches name as one type row added to every token by the
// sum words + name = sum (words the word term, or word + position): a
// constant [H] or [1, H] (the HF frontend's folded Gather(type, 0)), or a Gather of a [types, H] table at indices that are
// all zero (torch.onnx's Expand of a Slice of the buffered all-zero
// token_type_ids). The sum must keep the word term's shape, so the row
// only broadcasts. It sets m.typ (and m.typeRow, for a row that is not a
// [1, H] table yet).
func matchTypeRow(g *compiler.Graph, ix *index, m *embedMatch, wordsName, name, sumName string) bool {
	words, sum := valueInfo(g, wordsName), valueInfo(g, sumName)
	if words == nil || sum == nil || len(words.Shape) != 3 || !sameShape(words.Shape, sum.Shape) {
		return false
	}
	if ix.onlyConsumer(name) == nil {
		return false
	}
	h := words.Shape[2]
	if t := ix.constant(name); t != nil {
		if t.DType != compiler.Float32 || !h.Known() || int64(len(t.F32)) != h.Size || len(t.Shape) > 2 {
			return false
		}
		m.typ = name
		if len(t.Shape) != 2 {
			m.typeRow = compiler.NewTensor(compiler.Float32, 1, h.Size)
			copy(m.typeRow.F32, t.F32)
		}
		return true
	}
	ga := ix.producedBy(name, "Gather")
	if ga == nil || ga.AttrInt("axis", 0) != 0 {
		return false
	}
	table := ix.constant(ga.Inputs[0])
	if table == nil || table.DType != compiler.Float32 || len(table.Shape) != 2 || !allZeroIndices(ix, ga.Inputs[1]) {
		return false
	}
	m.typ = ga.Inputs[0]
	return true
}

// allZeroIndices reports whether every element of name is 0: an integer
// constant of zeros, or a Slice, Expand or gather (Gather, GatherElements:
// transformers 4.57's buffered type ids gathered at the position ids) of
// one, whatever their shapes and indices.
func allZeroIndices(ix *index, name string) bool {
	for range 8 {
		if vals, ok := ix.ints(name); ok {
			for _, v := range vals {
				if v != 0 {
					return false
				}
			}
			return len(vals) > 0
		}
		n := ix.producer[name]
		if n == nil || (n.Op != "Slice" && n.Op != "Expand" && n.Op != "Gather" && n.Op != "GatherElements") {
			return false
		}
		name = n.Inputs[0]
	}
	return false
}

// sameShape reports whether two inferred shapes have the same rank and
// dimensions (the same symbol, or the same static size).
func sameShape(a, b compiler.Shape) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Param != b[i].Param || a[i].Known() != b[i].Known() || (a[i].Known() && a[i].Size != b[i].Size) || (!a[i].Known() && a[i].Param == "") {
			return false
		}
	}
	return true
}

// matchPadPositions matches p as Gather(pos, ids') with ids' RoBERTa's
// position ids computed from ids (transformers'
// create_position_ids_from_input_ids, as the HF frontend and torch.onnx
// write it):
//
//	m = Cast(Not(Equal(ids, pad)), to=int32|int64)
//	ids' = Add([Cast to int64](Mul(CumSum(m, axis 1), m)), pad)
//
// and returns the table's name and pad (padding_idx).
func matchPadPositions(g *compiler.Graph, ix *index, p, ids string) (string, int64, bool) {
	idsInfo, pInfo := valueInfo(g, ids), valueInfo(g, p)
	ga := ix.producedBy(p, "Gather")
	if idsInfo == nil || pInfo == nil || ga == nil || ga.AttrInt("axis", 0) != 0 || len(pInfo.Shape) != 3 ||
		!sameShape(idsInfo.Shape, pInfo.Shape[:2]) {
		return "", 0, false
	}
	table := ix.constant(ga.Inputs[0])
	if table == nil || table.DType != compiler.Float32 || len(table.Shape) != 2 {
		return "", 0, false
	}
	intScalar := func(name string) (int64, bool) {
		v, ok := ix.ints(name)
		if !ok || len(v) != 1 || compiler.NumElements(ix.constant(name).Shape) != 1 {
			return 0, false
		}
		return v[0], true
	}
	add := ix.producedBy(ga.Inputs[1], "Add")
	if add == nil {
		return "", 0, false
	}
	for k := range 2 {
		pad, ok := intScalar(add.Inputs[k])
		if !ok || pad < 0 {
			continue
		}
		masked := add.Inputs[1-k]
		if c := ix.producedBy(masked, "Cast"); c != nil && c.AttrInt("to", 0) == onnxInt64 {
			masked = c.Inputs[0]
		}
		mul := ix.producedBy(masked, "Mul")
		if mul == nil {
			continue
		}
		for j := range 2 {
			cs, mask := ix.producedBy(mul.Inputs[j], "CumSum"), mul.Inputs[1-j]
			if cs != nil && cs.Inputs[0] == mask && cs.AttrInt("exclusive", 0) == 0 && cs.AttrInt("reverse", 0) == 0 &&
				cumSumsSequence(ix, cs) && isNotPadMask(ix, mask, ids, pad, intScalar) {
				return ga.Inputs[0], pad, true
			}
		}
	}
	return "", 0, false
}

// onnxInt32 and onnxInt64 are TensorProto.INT32 and INT64, Cast's "to"
// codes.
const (
	onnxInt32 = 6
	onnxInt64 = 7
)

// cumSumsSequence reports whether CumSum node cs sums along axis 1 (or
// -1) of its [batch, seq] input.
func cumSumsSequence(ix *index, cs *compiler.Node) bool {
	axis, ok := ix.ints(cs.Inputs[1])
	return ok && len(axis) == 1 && (axis[0] == 1 || axis[0] == -1)
}

// isNotPadMask reports whether mask is Cast(Not(Equal(ids, pad)), to an
// integer type): 1 where the id is not pad, else 0.
func isNotPadMask(ix *index, mask, ids string, pad int64, intScalar func(string) (int64, bool)) bool {
	c := ix.producedBy(mask, "Cast")
	if c == nil || (c.AttrInt("to", 0) != onnxInt32 && c.AttrInt("to", 0) != onnxInt64) {
		return false
	}
	not := ix.producedBy(c.Inputs[0], "Not")
	if not == nil {
		return false
	}
	eq := ix.producedBy(not.Inputs[0], "Equal")
	if eq == nil {
		return false
	}
	for k := range 2 {
		if v, ok := intScalar(eq.Inputs[k]); ok && v == pad && eq.Inputs[1-k] == ids {
			return true
		}
	}
	return false
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
	if table == nil || table.DType != compiler.Float32 || len(table.Shape) != 2 {
		return "", false
	}
	// Gather(pos, Unsqueeze(Range(0, seq, 1))): torch.arange(seq)[None]
	// (DeBERTa's and custom modules' position ids), whose length the
	// shape check above proves.
	if start, delta, ok := unsqueezedRange(ix, ga.Inputs[1]); ok && start == 0 && delta == 1 {
		return ga.Inputs[0], true
	}
	sl := ix.producedBy(ga.Inputs[1], "Slice")
	if sl == nil || !slicesFromZero(ix, sl, 1) {
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

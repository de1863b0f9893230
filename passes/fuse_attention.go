package passes

import "github.com/sqc-dev/sqc/compiler"

// FuseAttention replaces multi-head self-attention written out as torch
// exports it by one sqc.Attention(q, k, v[, mask]) {heads, scale}:
//
//	Q = Transpose<0,2,1,3>(Reshape(q, [batch, seq, heads, d]))      (V likewise)
//	Kt = Transpose<0,2,3,1>(Reshape(k, [batch, seq, heads, d]))     (or 0,2,1,3 then 0,1,3,2)
//	S = MatMul(Q, Kt), scaled by Div/Mul with a constant before (on Q) or after
//	P = Softmax(S [+ bias] [+ mask], axis=-1)
//	y = Reshape(Transpose<0,2,1,3>(MatMul(P, V)), [batch, seq, heads*d])
//
// q, k and v are the [batch, seq, heads*d] projections. The head split is
// accepted only when shape inference proves it: each split output must be
// [B, S, heads, d] with B and S the same (possibly symbolic) dims as its
// input's and heads*d its input's width, and the merge output [B, S,
// heads*d]; a Reshape whose -1 or dynamic dims could regroup rows across the
// batch is left alone. The mask, if any, is whatever is added to the scores
// (CanonicalizeAttentionMask makes it an sqc.AttentionMask) and must
// broadcast to [batch, heads, seq, seq] without widening the scores.
//
// MPNet adds a relative position bias before the mask, (S + bias) + mask,
// and JinaBERT its ALiBi bias after it, (S + mask) + bias, or as SDPA's
// attn_mask, S + (mask + bias), with the mask an sqc.AttentionMask: the bias (less an Expand over the batch, which the
// sum broadcasts anyway) becomes the attention's input 4, which it adds to
// the mask first, S + (bias + mask). That sums
// to the same bits for every key the mask keeps (mask 0 there) and leaves
// the others a softmax weight of exactly zero either way, which the mask's
// fill guarantees (compiler.MaxZeroingMaskFill; a higher fill, or a mask
// of any other kind, leaves the attention unfused).
//
// onnxscript writes SDPA with a boolean mask with a guard after the
// Softmax, Where(IsNaN(P), 0, P), which FuseAttention drops: P is NaN only
// in a row whose every key is masked (a sequence with no token at all) or
// from NaN scores. For such an empty sequence sqc's attention attends to
// every key instead of returning zeros; any sequence with a token, as
// tokenizers make them, computes the same.
var FuseAttention = Pass{Name: "FuseAttention", Run: fuseAttention}

const opAttention = "sqc.Attention"

func fuseAttention(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	repl := map[*compiler.Node]*compiler.Node{}
	for _, n := range g.Nodes {
		cur.n = n
		if n.Op != "Softmax" {
			continue
		}
		m, ok := matchAttention(ix, n)
		if !ok {
			continue
		}
		inputs := []string{m.q, m.k, m.v}
		if m.mask != "" {
			inputs = append(inputs, m.mask)
		}
		if m.bias != "" { // splitBiasAndMask found a mask too
			inputs = append(inputs, m.bias)
		}
		repl[m.sink] = &compiler.Node{
			Name:    nm.Fresh(m.sink.Name + "/Attention"),
			Op:      opAttention,
			Inputs:  inputs,
			Outputs: []string{m.sink.Outputs[0]},
			Attrs: map[string]compiler.Attr{
				"heads": compiler.IntAttr(m.heads),
				"scale": compiler.FloatAttr(float32(m.scale)),
			},
		}
	}
	replaceNodes(g, repl)
	if len(repl) > 0 {
		removeDead(g)
	}
	return len(repl) > 0, nil
}

type attentionMatch struct {
	// bias is an addend of the scores besides the mask (MPNet's position
	// bias); "" when there is none.
	q, k, v, mask, bias string
	heads               int64
	scale               float64
	sink                *compiler.Node
}

var (
	permSplit    = []int64{0, 2, 1, 3} // [B, S, H, D] <-> [B, H, S, D]
	permKeyT     = []int64{0, 2, 3, 1} // [B, S, H, D] -> [B, H, D, S]
	permSwapLast = []int64{0, 1, 3, 2}
)

// matchAttention matches the pattern around its Softmax.
func matchAttention(ix *index, softmax *compiler.Node) (attentionMatch, bool) {
	var m attentionMatch
	if !softmaxOverLastOf4(ix, softmax) {
		return m, false
	}
	// Scores, with an optional additive mask, and a bias added before it.
	scores := softmax.Inputs[0]
	if add := ix.producedBy(scores, "Add"); add != nil && ix.uses(scores) == 1 {
		s, mask, ok := splitMaskAdd(ix, add)
		if ok {
			// SDPA's attn_mask = mask + bias (JinaBERT's torch
			// attention): the mask and the bias apart.
			if b, am, split := splitMaskPlusBias(ix, mask); split {
				m.bias, mask = b, am
			}
		} else {
			s, m.bias, mask, ok = splitBiasAndMask(ix, add)
		}
		if !ok {
			return m, false
		}
		scores, m.mask = s, mask
	}
	unmasked := scores
	m.scale = 1
	scores, post := peelScale(ix, scores)
	m.scale *= post
	qk := ix.producedBy(scores, "MatMul")
	if qk == nil {
		return m, false
	}
	// torch.onnx writes F.scaled_dot_product_attention with √scale on
	// both sides: Mul(Q, √s)·Mul(Kᵀ, √s).
	qSplit, pre := peelScale(ix, qk.Inputs[0])
	kT, preK := peelScale(ix, qk.Inputs[1])
	m.scale *= pre * preK
	var qW, kW, vW int64 // widths of q, k, v
	var ok bool
	var qShape, kShape compiler.Shape
	m.q, m.heads, qW, qShape, ok = splitHeads(ix, qSplit, permSplit)
	if !ok {
		return m, false
	}
	var kHeads int64
	m.k, kHeads, kW, kShape, ok = keyTranspose(ix, kT)
	if !ok || kHeads != m.heads || kW != qW {
		return m, false
	}
	// Context.
	probs := softmax.Outputs[0]
	if guarded, ok := nanGuard(ix, probs); ok {
		probs = guarded
	}
	pv := ix.onlyConsumer(probs)
	if pv == nil || pv.Op != "MatMul" || pv.Inputs[0] != probs {
		return m, false
	}
	var vHeads int64
	var vShape compiler.Shape
	m.v, vHeads, vW, vShape, ok = splitHeads(ix, pv.Inputs[1], permSplit)
	if !ok || vHeads != m.heads || vW != qW || !sameDim(kShape[0], vShape[0]) || !sameDim(kShape[1], vShape[1]) || !sameDim(qShape[0], kShape[0]) {
		return m, false
	}
	// The merge: other readers of the transposed context are the Shape
	// nodes computing the merge's target, which die with it.
	tr := ix.onlyConsumer(pv.Outputs[0])
	if tr == nil || tr.Op != "Transpose" || !permIs(tr, permSplit) {
		return m, false
	}
	merge := ix.consumerAt(tr.Outputs[0], "Reshape", 0)
	if merge == nil {
		return m, false
	}
	out := valueInfo(ix.g, merge.Outputs[0])
	if out == nil || len(out.Shape) != 3 || !sameDim(out.Shape[0], qShape[0]) || !sameDim(out.Shape[1], qShape[1]) ||
		!out.Shape[2].Known() || out.Shape[2].Size != qW {
		return m, false
	}
	if m.mask != "" && !maskFits(ix, m.mask, unmasked) || m.bias != "" && !maskFits(ix, m.bias, unmasked) {
		return m, false
	}
	// transformers expands MPNet's bias to the batch, which the scores'
	// Add broadcasts anyway: take what it expands when that fits too.
	if e := ix.producedBy(m.bias, "Expand"); e != nil && maskFits(ix, e.Inputs[0], unmasked) {
		m.bias = e.Inputs[0]
	}
	// Likewise a padding mask expanded over the query rows (ModernBERT's
	// _prepare_4d_attention_mask): its rows are one row repeated, which
	// broadcasting repeats the same; the attention then reads the graph's
	// one padding mask, which packing needs.
	if e := ix.producedBy(m.mask, "Expand"); e != nil && ix.producedBy(e.Inputs[0], opAttentionMask) != nil && maskFits(ix, e.Inputs[0], unmasked) {
		m.mask = e.Inputs[0]
	}
	m.sink = merge
	return m, true
}

// nanGuard matches Where(IsNaN(p), 0, p) as p's only readers and returns
// the Where's output.
func nanGuard(ix *index, p string) (string, bool) {
	readers := ix.consumers[p]
	if len(readers) != 2 || ix.isOutput[p] {
		return "", false
	}
	isNaN, where := readers[0], readers[1]
	if isNaN.Op != "IsNaN" {
		isNaN, where = where, isNaN
	}
	if isNaN.Op != "IsNaN" || where.Op != "Where" || len(where.Inputs) != 3 || ix.uses(isNaN.Outputs[0]) != 1 ||
		where.Inputs[0] != isNaN.Outputs[0] || where.Inputs[2] != p || !ix.scalarNear(where.Inputs[1], 0, 0) {
		return "", false
	}
	return where.Outputs[0], true
}

// softmaxOverLastOf4 checks Softmax normalises the last axis of a rank-4
// float32 tensor. Before opset 13 axis (default 1) flattens the trailing
// dims, which for axis 3 of rank 4 is the same thing.
func softmaxOverLastOf4(ix *index, sm *compiler.Node) bool {
	v := valueInfo(ix.g, sm.Inputs[0])
	if v == nil || len(v.Shape) != 4 || v.DType != compiler.Float32 {
		return false
	}
	def := int64(-1)
	if ix.g.Opset > 0 && ix.g.Opset < 13 {
		def = 1
	}
	axis := sm.AttrInt("axis", def)
	return axis == -1 || axis == 3
}

// splitMaskAdd splits Add(scores, mask) / Add(mask, scores): the scores
// operand is the one produced by the Q·K MatMul (possibly scaled).
func splitMaskAdd(ix *index, add *compiler.Node) (scores, mask string, ok bool) {
	for k := range 2 {
		s, _ := peelScale(ix, add.Inputs[k])
		if ix.producedBy(s, "MatMul") != nil {
			return add.Inputs[k], add.Inputs[1-k], true
		}
	}
	return "", "", false
}

// splitBiasAndMask splits a sum of the scores, a bias and a mask in
// either nesting: Add(Add(scores, bias), mask) (MPNet) or Add(Add(scores,
// mask), bias) (JinaBERT's ALiBi, added after the mask), either operand
// order in both, where mask is an sqc.AttentionMask whose fill zeroes the
// weights of the keys it masks.
func splitBiasAndMask(ix *index, add *compiler.Node) (scores, bias, mask string, ok bool) {
	for k := range 2 {
		inner := ix.producedBy(add.Inputs[k], "Add")
		if inner == nil || ix.uses(add.Inputs[k]) != 1 {
			continue
		}
		s, addend, ok := splitMaskAdd(ix, inner)
		if !ok {
			continue
		}
		outer := add.Inputs[1-k]
		switch {
		case zeroingMask(ix, outer):
			return s, addend, outer, true
		case zeroingMask(ix, addend):
			return s, outer, addend, true
		}
	}
	return "", "", "", false
}

// splitMaskPlusBias splits an addend Add(mask, bias) (either order), mask
// an sqc.AttentionMask whose fill zeroes the keys it masks: the sum the
// kernels form themselves, bias + mask.
func splitMaskPlusBias(ix *index, addend string) (bias, mask string, ok bool) {
	a := ix.producedBy(addend, "Add")
	if a == nil {
		return "", "", false
	}
	for k := range 2 {
		if zeroingMask(ix, a.Inputs[k]) && !zeroingMask(ix, a.Inputs[1-k]) {
			return a.Inputs[1-k], a.Inputs[k], true
		}
	}
	return "", "", false
}

// zeroingMask reports whether name is an sqc.AttentionMask whose fill
// gives the keys it masks a softmax weight of exactly zero.
func zeroingMask(ix *index, name string) bool {
	am := ix.producedBy(name, opAttentionMask)
	return am != nil && am.AttrFloat("fill", compiler.AttentionMaskDefaultFill) <= compiler.MaxZeroingMaskFill
}

// peelScale strips one Div or Mul by a scalar constant and returns the
// inner value and the factor it multiplied by (1 when there was none). The
// scaled value must feed only the attention chain.
func peelScale(ix *index, name string) (string, float64) {
	p := ix.producer[name]
	if p == nil || ix.uses(name) != 1 || len(p.Inputs) != 2 {
		return name, 1
	}
	switch p.Op {
	case "Div":
		if c, ok := ix.scalar(p.Inputs[1]); ok && c != 0 {
			return p.Inputs[0], 1 / c
		}
	case "Mul":
		if x, c, ok := splitConstOperand(ix, p); ok {
			return x, c
		}
	}
	return name, 1
}

// splitHeads matches Transpose<perm>(Reshape(x, ...)) and proves the
// Reshape splits x [B, S, W] into [B, S, H, W/H]. It returns x, H, W and
// x's shape.
func splitHeads(ix *index, name string, perm []int64) (x string, heads, width int64, shape compiler.Shape, ok bool) {
	tr := ix.producedBy(name, "Transpose")
	if tr == nil || !permIs(tr, perm) {
		return "", 0, 0, nil, false
	}
	return headReshape(ix, tr.Inputs[0])
}

// headReshape matches name = Reshape(x, [B, S, H, D]) of a float32 x [B,
// S, W] with W = H*D known (the head split before its transpose).
func headReshape(ix *index, name string) (x string, heads, width int64, shape compiler.Shape, ok bool) {
	r := ix.producedBy(name, "Reshape")
	if r == nil {
		return "", 0, 0, nil, false
	}
	x = r.Inputs[0]
	in, out := valueInfo(ix.g, x), valueInfo(ix.g, r.Outputs[0])
	if in == nil || out == nil || len(in.Shape) != 3 || len(out.Shape) != 4 || in.DType != compiler.Float32 {
		return "", 0, 0, nil, false
	}
	w, h, d := in.Shape[2], out.Shape[2], out.Shape[3]
	if !w.Known() || !h.Known() || !d.Known() || h.Size <= 0 || h.Size*d.Size != w.Size ||
		!sameDim(in.Shape[0], out.Shape[0]) || !sameDim(in.Shape[1], out.Shape[1]) {
		return "", 0, 0, nil, false
	}
	return x, h.Size, w.Size, in.Shape, true
}

// keyTranspose matches K^T: Transpose<0,2,3,1>(split) or
// Transpose<0,1,3,2>(Transpose<0,2,1,3>(split)).
func keyTranspose(ix *index, name string) (x string, heads, width int64, shape compiler.Shape, ok bool) {
	if x, heads, width, shape, ok = splitHeads(ix, name, permKeyT); ok {
		return
	}
	tr := ix.producedBy(name, "Transpose")
	if tr == nil || !permIs(tr, permSwapLast) {
		return "", 0, 0, nil, false
	}
	return splitHeads(ix, tr.Inputs[0], permSplit)
}

func permIs(tr *compiler.Node, want []int64) bool {
	perm, ok := tr.AttrInts("perm")
	if !ok || len(perm) != len(want) {
		return false
	}
	for i := range perm {
		if perm[i] != want[i] {
			return false
		}
	}
	return true
}

// sameDim reports whether two dims are provably equal: the same known
// size or the same symbol.
func sameDim(a, b compiler.Dim) bool {
	if a.Param != "" || b.Param != "" {
		return a.Param == b.Param
	}
	return a.Known() && b.Known() && a.Size == b.Size
}

// maskFits checks that adding mask to the scores does not change their
// shape: mask's rank is at most 4 and each of its dims is 1 or the
// scores' dim.
func maskFits(ix *index, mask, scores string) bool {
	mv, sv := valueInfo(ix.g, mask), valueInfo(ix.g, scores)
	if mv == nil || sv == nil || mv.Shape == nil || len(mv.Shape) > 4 || len(sv.Shape) != 4 || mv.DType != compiler.Float32 {
		return false
	}
	off := 4 - len(mv.Shape)
	for i, d := range mv.Shape {
		if !(d.Known() && d.Size == 1) && !sameDim(d, sv.Shape[off+i]) {
			return false
		}
	}
	return true
}

package passes

import (
	"math"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
)

// CanonicalizeAttentionMask replaces the attention-mask arithmetic that
// exporters emit by one sqc.AttentionMask(mask) {fill} node, whose output is
// the additive mask f32 [batch, 1, 1, seq]: 0 where mask != 0 (attend) and
// fill where mask == 0 (padding).
//
// These forms are recognised; in each, mask is any rank-2 [batch, seq]
// value (normally the attention_mask graph input):
//
//   - BERT's get_extended_attention_mask: Mul(Sub(1, Cast<f32>(m4)), fill),
//     m4 being mask unsqueezed to [batch, 1, 1, seq] (one or two Unsqueeze
//     nodes, the Cast on either side of them). This equals AttentionMask for
//     0/1 masks, which is what tokenizers produce; other values would be
//     scaled by (1 - mask) in the original and are not supported.
//   - DistilBERT's masked_fill: Where(c, fill, scores) with c =
//     [Cast<bool>] [Expand] Reshape<[batch,1,1,seq]>(Equal(mask, 0)), or
//     Where(c, scores, fill) with c the mask cast to bool. The Where becomes
//     Add(scores, AttentionMask(mask) {fill}). After the Softmax that
//     follows, the two agree exactly: scores + fill rounds to fill for
//     fill = float32 min (or -Inf) and any |score| < 1e31.
//   - transformers' mask for SDPA attention: Where(Cast<bool>(inv), fill,
//     inv) with inv = Sub(1, Cast<f32>(Expand(unsqueezed mask)))
//     (matchInvertedMask), [batch, 1, tgt, seq], which becomes
//     AttentionMask(mask) {fill} as the first form does.
//   - DeBERTa's masked_fill over query and key pairs, Where(Not(c),
//     fill, scores) with c the product of the mask laid out as keys and
//     as queries (queryKeyMask), becomes the scores plus the key mask,
//     as DistilBERT's does: the rows of padded queries differ (see
//     queryKeyMask), real tokens' do not.
//   - A boolean mask (true: attend) turned into the additive one,
//     Where(c, 0, fill), as onnxscript writes SDPA with a boolean mask and
//     ONNX's Attention defines it: c as DistilBERT's masked_fill takes it,
//     or as transformers 5's sdpa_mask builds it (gatheredMask).
//
// One AttentionMask is made per (mask, fill) pair and shared by all layers.
var CanonicalizeAttentionMask = Pass{Name: "CanonicalizeAttentionMask", Run: canonicalizeAttentionMask}

const opAttentionMask = "sqc.AttentionMask"

func canonicalizeAttentionMask(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	c := &maskCanon{g: g, ix: ix, nm: nm, made: map[maskKey]string{}}
	repl := map[*compiler.Node]*compiler.Node{}
	for _, n := range g.Nodes {
		cur.n = n
		switch n.Op {
		case "Mul":
			if src, fill, ok := matchExtendedMask(ix, n); ok {
				// The Mul's output is the additive mask already: the
				// AttentionMask node takes over its name and place.
				am := c.newMaskNode(src, fill, n.Outputs[0])
				am.Name = nm.Fresh(n.Name + "/AttentionMask")
				repl[n] = am
			}
		case "Where":
			if src, fill, ok := matchInvertedMask(ix, n); ok {
				am := c.newMaskNode(src, fill, n.Outputs[0])
				am.Name = nm.Fresh(n.Name + "/AttentionMask")
				repl[n] = am
			} else if src, fill, ok := matchBoolMaskBias(ix, n); ok {
				am := c.newMaskNode(src, fill, n.Outputs[0])
				am.Name = nm.Fresh(n.Name + "/AttentionMask")
				repl[n] = am
			} else if src, fill, scores, ok := matchMaskedFill(ix, n); ok {
				repl[n] = &compiler.Node{
					Name:    nm.Fresh(n.Name + "/Add"),
					Op:      "Add",
					Inputs:  []string{scores, c.maskFor(src, fill)},
					Outputs: []string{n.Outputs[0]},
				}
			}
		}
	}
	if len(repl) == 0 {
		return false, nil
	}
	replaceNodes(g, repl)
	c.insertMade()
	dedupeAttentionMasks(g)
	removeDead(g)
	return true, nil
}

type maskKey struct {
	src  string
	fill uint32 // float32 bits
}

type maskCanon struct {
	g       *compiler.Graph
	ix      *index
	nm      *compiler.Namer
	made    map[maskKey]string // output of a new AttentionMask node
	pending []*compiler.Node
}

func (c *maskCanon) newMaskNode(src string, fill float32, out string) *compiler.Node {
	n := &compiler.Node{
		Op:      opAttentionMask,
		Inputs:  []string{src},
		Outputs: []string{out},
		Attrs:   map[string]compiler.Attr{"fill": compiler.FloatAttr(fill)},
	}
	shape := compiler.Shape(nil)
	if v := valueInfo(c.g, src); v != nil && len(v.Shape) == 2 {
		shape = compiler.Shape{v.Shape[0], {Size: 1}, {Size: 1}, v.Shape[1]}
	}
	c.g.Values[out] = &compiler.Value{Name: out, DType: compiler.Float32, Shape: shape}
	return n
}

// maskFor returns the output of an AttentionMask(src) {fill}, making one
// (to be inserted by insertMade) if this pass has not yet.
func (c *maskCanon) maskFor(src string, fill float32) string {
	key := maskKey{src, math.Float32bits(fill)}
	if out, ok := c.made[key]; ok {
		return out
	}
	out := c.nm.Fresh(src + "/additive")
	n := c.newMaskNode(src, fill, out)
	n.Name = c.nm.Fresh(src + "/AttentionMask")
	c.made[key] = out
	c.pending = append(c.pending, n)
	return out
}

// insertMade puts each new AttentionMask right after the producer of its
// mask (at the front for a graph input), which precedes every reader.
func (c *maskCanon) insertMade() {
	for _, n := range c.pending {
		at := 0
		for i, m := range c.g.Nodes {
			if slices.Contains(m.Outputs, n.Inputs[0]) {
				at = i + 1
				break
			}
		}
		c.g.Nodes = slices.Insert(c.g.Nodes, at, n)
	}
}

// dedupeAttentionMasks keeps one AttentionMask per (mask, fill), pointing
// readers of the others at it.
func dedupeAttentionMasks(g *compiler.Graph) {
	ix := newIndex(g)
	first := map[maskKey]string{}
	for _, n := range g.Nodes {
		if n.Op != opAttentionMask || ix.isOutput[n.Outputs[0]] {
			continue
		}
		key := maskKey{n.Inputs[0], math.Float32bits(n.AttrFloat("fill", 0))}
		if out, ok := first[key]; ok {
			renameInputs(g, n.Outputs[0], out)
			continue
		}
		first[key] = n.Outputs[0]
	}
}

// matchExtendedMask matches Mul(Sub(1, Cast<f32>(unsqueeze(mask))), fill).
func matchExtendedMask(ix *index, mul *compiler.Node) (string, float32, bool) {
	diff, fill, ok := splitConstOperand(ix, mul)
	if !ok {
		return "", 0, false
	}
	sub := ix.producedBy(diff, "Sub")
	if sub == nil || !ix.scalarNear(sub.Inputs[0], 1, 0) {
		return "", 0, false
	}
	src, ok := unsqueezedMask(ix, sub.Inputs[1])
	if !ok {
		return "", 0, false
	}
	return src, float32(fill), true
}

// unsqueezedMask follows Unsqueeze nodes and at most one Cast to float32
// from a float32 [batch, 1, 1, seq] value back to its rank-2 source.
func unsqueezedMask(ix *index, name string) (string, bool) {
	src, casts, ok := followUnsqueezes(ix, name, onnxFloat)
	if !ok || casts > 1 || (casts == 0 && !isFloat32(ix.g, src)) {
		return "", false
	}
	return src, true
}

// followUnsqueezes walks from a [d0, 1, 1, d1] value back through Unsqueeze
// nodes (and Casts to castTo, counted; castTo < 0 allows none) to a rank-2
// source, checking that the unsqueezed axes are exactly the middle two.
func followUnsqueezes(ix *index, name string, castTo int64) (src string, casts int, ok bool) {
	var axesChain [][]int64 // outermost first
	for {
		p := ix.producer[name]
		if p == nil {
			break
		}
		if castTo >= 0 && p.Op == "Cast" && p.AttrInt("to", 0) == castTo {
			casts++
			name = p.Inputs[0]
			continue
		}
		if p.Op != "Unsqueeze" {
			break
		}
		axes, ok := ix.axes(p)
		if !ok {
			return "", 0, false
		}
		axesChain = append(axesChain, axes)
		name = p.Inputs[0]
	}
	if rank(ix.g, name) != 2 {
		return "", 0, false
	}
	// Replay the unsqueezes on labels: 0 = d0, 1 = d1, -1 = an inserted 1.
	dims := []int{0, 1}
	for i := len(axesChain) - 1; i >= 0; i-- {
		axes := axesChain[i]
		r := len(dims) + len(axes)
		norm := make([]int, len(axes))
		for j, a := range axes {
			if a < 0 {
				a += int64(r)
			}
			if a < 0 || a >= int64(r) {
				return "", 0, false
			}
			norm[j] = int(a)
		}
		slices.Sort(norm)
		for _, a := range norm {
			if a > len(dims) {
				return "", 0, false
			}
			dims = slices.Insert(dims, a, -1)
		}
	}
	return name, casts, slices.Equal(dims, []int{0, -1, -1, 1})
}

// onnxFloat is TensorProto.FLOAT, the Cast "to" code for float32;
// onnxBool is TensorProto.BOOL, onnxUint8 TensorProto.UINT8.
const (
	onnxFloat = 1
	onnxBool  = 9
	onnxUint8 = 2
)

// matchInvertedMask matches the mask transformers builds for SDPA
// attention (AttentionMaskConverter._expand_mask):
//
//	inv = 1 - mask[:, None, None, :].expand(batch, 1, tgt, src).to(f32)
//	inv.masked_fill(inv.to(bool), fill)
//	= Where(Cast<bool>(inv), fill, inv), inv = Sub(1, Cast<f32>(Expand(unsqueeze(mask))))
//
// (the Cast to float and the Expand in either order; torch's masked_fill
// casts its condition to bool once more, so one or more Casts to bool). For 0/1 masks it is
// AttentionMask(mask) {fill}: inv is 0, so false, where mask is 1, and 1
// where it is 0; the Expand over query positions only repeats rows, which
// the scores' Add broadcasts anyway.
func matchInvertedMask(ix *index, where *compiler.Node) (string, float32, bool) {
	if len(where.Inputs) != 3 || !isFloat32(ix.g, where.Outputs[0]) {
		return "", 0, false
	}
	fill, ok := ix.scalar(where.Inputs[1])
	inv := where.Inputs[2]
	// .to(bool), and masked_fill's own Cast to bool of its condition.
	cond := where.Inputs[0]
	for c := ix.producedBy(cond, "Cast"); c != nil && c.AttrInt("to", 0) == onnxBool && cond != inv; c = ix.producedBy(cond, "Cast") {
		cond = c.Inputs[0]
	}
	sub := ix.producedBy(inv, "Sub")
	if !ok || cond != inv || cond == where.Inputs[0] || sub == nil || !ix.scalarNear(sub.Inputs[0], 1, 0) {
		return "", 0, false
	}
	name, casts := sub.Inputs[1], 0
	for {
		if p := ix.producedBy(name, "Cast"); p != nil && p.AttrInt("to", 0) == onnxFloat {
			casts, name = casts+1, p.Inputs[0]
		} else if p := ix.producedBy(name, "Expand"); p != nil {
			name = p.Inputs[0]
		} else {
			break
		}
	}
	src, more, ok := followUnsqueezes(ix, name, onnxFloat)
	if !ok || casts+more > 1 || (casts+more == 0 && !isFloat32(ix.g, src)) {
		return "", 0, false
	}
	return src, float32(fill), true
}

// matchMaskedFill matches Where(cond, fill, scores) / Where(cond, scores,
// fill) built from a rank-2 mask.
func matchMaskedFill(ix *index, where *compiler.Node) (src string, fill float32, scores string, ok bool) {
	if len(where.Inputs) != 3 || !isFloat32(ix.g, where.Outputs[0]) {
		return "", 0, "", false
	}
	cond := where.Inputs[0]
	if f, isConst := ix.scalar(where.Inputs[1]); isConst {
		// cond marks padding.
		src, ok = maskCondition(ix, cond, true)
		return src, float32(f), where.Inputs[2], ok
	}
	if f, isConst := ix.scalar(where.Inputs[2]); isConst {
		// cond marks tokens to keep.
		src, ok = maskCondition(ix, cond, false)
		return src, float32(f), where.Inputs[1], ok
	}
	return "", 0, "", false
}

// maskCondition follows a boolean [batch, 1, 1, seq] (or broadcast of it)
// back to the rank-2 mask. padding says whether true marks padding
// (Equal(mask, 0)) or tokens to attend (the mask cast to bool).
func maskCondition(ix *index, name string, padding bool) (string, bool) {
	// Not(c) marks padding where c marks tokens to attend, and the
	// reverse.
	if p := ix.producedBy(name, "Not"); p != nil {
		return maskCondition(ix, p.Inputs[0], !padding)
	}
	if !padding {
		if src, ok := queryKeyMask(ix, name); ok {
			return src, true
		}
	}
	// Peel bool-to-bool Casts, Expands and Ands with a value that is true
	// everywhere: each only broadcasts the condition, which the Where and
	// the scores' Add broadcast anyway.
	for peeled := true; peeled; {
		peeled = false
		if p := ix.producedBy(name, "Cast"); p != nil && p.AttrInt("to", 0) == onnxBool && boolValue(ix.g, p.Inputs[0]) {
			name, peeled = p.Inputs[0], true
		} else if p := ix.producedBy(name, "Expand"); p != nil {
			name, peeled = p.Inputs[0], true
		} else if and := ix.producedBy(name, "And"); and != nil {
			for k := range 2 {
				if allTrue(ix, and.Inputs[k]) {
					name, peeled = and.Inputs[1-k], true
					break
				}
			}
		}
	}
	// [batch, seq] -> [batch, 1, 1, seq], by Reshape, Unsqueeze or
	// transformers 5's gather.
	var inner string
	if p := ix.producedBy(name, "Reshape"); p != nil && isMaskLayout(ix, p) {
		inner = p.Inputs[0]
	} else if src, ok := unsqueezedBool(ix, name); ok {
		inner = src
	} else if src, ok := gatheredMask(ix, name); ok && !padding {
		inner = src
	} else {
		return "", false
	}
	if padding {
		eq := ix.producedBy(inner, "Equal")
		if eq == nil {
			return "", false
		}
		src, zero, ok := splitConstOperand(ix, eq)
		if !ok || zero != 0 || rank(ix.g, src) != 2 {
			return "", false
		}
		return src, true
	}
	cast := ix.producedBy(inner, "Cast")
	if cast == nil || cast.AttrInt("to", 0) != onnxBool || rank(ix.g, cast.Inputs[0]) != 2 {
		return "", false
	}
	return cast.Inputs[0], true
}

// queryKeyMask matches DeBERTa's mask of query and key pairs,
// Cast<bool>(Cast<u8>(Mul(k, q))) (either Cast optional, the Mul's
// operands in either order), true where both tokens are real: k is the
// mask laid out [batch, 1, 1, seq] and q the same mask [batch, 1, seq,
// 1], each by Unsqueeze and Squeeze nodes alone (which add and drop unit
// axes and keep the elements' order). It returns the mask. Read as the
// key mask, the condition differs only in the rows of padded queries,
// which transformers fills with the mask's fill (a uniform softmax) and
// sqc computes as a real token's: a padded position's output is no
// model output sqc promises (a packed batch never computes one), and no
// real token reads it past the key mask.
func queryKeyMask(ix *index, name string) (string, bool) {
	if c := ix.producedBy(name, "Cast"); c != nil && c.AttrInt("to", 0) == onnxBool {
		name = c.Inputs[0]
	}
	if c := ix.producedBy(name, "Cast"); c != nil && c.AttrInt("to", 0) == onnxUint8 {
		name = c.Inputs[0]
	}
	mul := ix.producedBy(name, "Mul")
	if mul == nil || len(mul.Inputs) != 2 {
		return "", false
	}
	for k := range 2 {
		key, okK := unitAxesSource(ix, mul.Inputs[k])
		query, okQ := unitAxesSource(ix, mul.Inputs[1-k])
		if !okK || !okQ || key != query {
			continue
		}
		kv, qv, m := valueInfo(ix.g, mul.Inputs[k]), valueInfo(ix.g, mul.Inputs[1-k]), valueInfo(ix.g, key)
		one := compiler.Dim{Size: 1}
		if kv == nil || qv == nil || m == nil || len(kv.Shape) != 4 || len(qv.Shape) != 4 || len(m.Shape) != 2 {
			continue
		}
		if sameDim(kv.Shape[0], m.Shape[0]) && kv.Shape[1] == one && kv.Shape[2] == one && sameDim(kv.Shape[3], m.Shape[1]) &&
			sameDim(qv.Shape[0], m.Shape[0]) && qv.Shape[1] == one && sameDim(qv.Shape[2], m.Shape[1]) && qv.Shape[3] == one {
			return key, true
		}
	}
	return "", false
}

// unitAxesSource follows Unsqueeze and Squeeze nodes from name back to
// the rank-2 value they start from.
func unitAxesSource(ix *index, name string) (string, bool) {
	for {
		p := ix.producedBy(name, "Unsqueeze")
		if p == nil {
			p = ix.producedBy(name, "Squeeze")
		}
		if p == nil {
			break
		}
		name = p.Inputs[0]
	}
	return name, rank(ix.g, name) == 2
}

// isMaskLayout reports whether a Reshape of a rank-2 value produces
// [d0, 1, 1, d1]: by the inferred output shape, or by a target shape whose
// middle entries are the constant 1 (an initializer, or a Concat of four
// one-element pieces as torch emits for view(bs, 1, 1, k_length)). Either
// way, since the result is broadcast against [batch, heads, q, k] scores,
// the only valid d0, d1 are batch and seq.
func isMaskLayout(ix *index, r *compiler.Node) bool {
	if rank(ix.g, r.Inputs[0]) != 2 {
		return false
	}
	if v := valueInfo(ix.g, r.Outputs[0]); v != nil && len(v.Shape) == 4 {
		one := compiler.Dim{Size: 1}
		if v.Shape[1] == one && v.Shape[2] == one {
			return true
		}
	}
	if target, ok := ix.ints(r.Inputs[1]); ok {
		return len(target) == 4 && target[1] == 1 && target[2] == 1
	}
	cat := ix.producedBy(r.Inputs[1], "Concat")
	if cat == nil || len(cat.Inputs) != 4 {
		return false
	}
	for _, i := range []int{1, 2} {
		if v, ok := ix.ints(cat.Inputs[i]); !ok || len(v) != 1 || v[0] != 1 {
			return false
		}
	}
	return true
}

// unsqueezedBool follows Unsqueeze nodes from a [batch, 1, 1, seq] value
// back to its rank-2 source.
func unsqueezedBool(ix *index, name string) (string, bool) {
	if ix.producedBy(name, "Unsqueeze") == nil {
		return "", false
	}
	src, _, ok := followUnsqueezes(ix, name, -1)
	return src, ok
}

func boolValue(g *compiler.Graph, name string) bool {
	v := valueInfo(g, name)
	return v != nil && v.DType == compiler.Bool
}

func rank(g *compiler.Graph, name string) int {
	v := valueInfo(g, name)
	if v == nil {
		return -1
	}
	return v.Shape.Rank()
}

// matchBoolMaskBias matches Where(c, 0, fill), the additive mask of a
// boolean one, c true where keys are attended (maskCondition), read only
// as the addend of 4-D scores: it is AttentionMask(mask) {fill}, of shape
// [batch, 1, 1, seq] where c may be broadcast over query positions, which
// the scores' Add broadcasts to the same sum.
func matchBoolMaskBias(ix *index, where *compiler.Node) (string, float32, bool) {
	if len(where.Inputs) != 3 || !isFloat32(ix.g, where.Outputs[0]) || ix.isOutput[where.Outputs[0]] || !ix.scalarNear(where.Inputs[1], 0, 0) {
		return "", 0, false
	}
	fill, ok := ix.scalar(where.Inputs[2])
	if !ok {
		return "", 0, false
	}
	for _, r := range ix.consumers[where.Outputs[0]] {
		other, ok := otherInput(r, where.Outputs[0])
		if r.Op != "Add" || !ok || rank(ix.g, other) != 4 {
			return "", 0, false
		}
	}
	src, ok := maskCondition(ix, where.Inputs[0], false)
	return src, float32(fill), ok
}

// allTrue reports whether bool value name is true everywhere: a constant
// of trues, GreaterOrEqual(positions, c) with c <= 0 where positions are
// Range(s, n, d) with s >= 0 and d > 0 (unsqueezed or not; transformers
// 5's bidirectional mask function, q_idx >= 0), or an And of such.
func allTrue(ix *index, name string) bool {
	if t := ix.constant(name); t != nil {
		return t.DType == compiler.Bool && !slices.Contains(t.Bool, false)
	}
	if p := ix.producedBy(name, "And"); p != nil {
		return allTrue(ix, p.Inputs[0]) && allTrue(ix, p.Inputs[1])
	}
	ge := ix.producedBy(name, "GreaterOrEqual")
	if ge == nil {
		return false
	}
	if c, ok := ix.scalar(ge.Inputs[1]); !ok || c > 0 {
		return false
	}
	start, delta, ok := unsqueezedRange(ix, ge.Inputs[0])
	return ok && start >= 0 && delta > 0
}

// unsqueezedRange matches name as Range(start, n, delta), with constant
// start and delta, behind any Unsqueeze nodes (which add unit axes and
// keep its values), and returns start and delta.
func unsqueezedRange(ix *index, name string) (start, delta float64, ok bool) {
	for p := ix.producedBy(name, "Unsqueeze"); p != nil; p = ix.producedBy(name, "Unsqueeze") {
		name = p.Inputs[0]
	}
	r := ix.producedBy(name, "Range")
	if r == nil {
		return 0, 0, false
	}
	start, ok1 := ix.scalar(r.Inputs[0])
	delta, ok2 := ix.scalar(r.Inputs[2])
	return start, delta, ok1 && ok2
}

// gatheredMask matches transformers 5's padding_mask[batch_idx, kv_idx]
// as onnxscript writes the advanced indexing:
//
//	GatherND(mask, Concat(Unsqueeze(Expand(batch_idx, s), -1), Unsqueeze(Expand(kv_idx, s), -1), axis=-1))
//
// with batch_idx = arange(batch)[:, None, None, None] and kv_idx =
// arange(keys)[None, None, None, :] (Unsqueezed Ranges from 0 by 1) over
// mask [batch, keys] exactly. Element [b, i, j, k] of the result is then
// mask[b, k] whatever s broadcasts to: a broadcast of mask unsqueezed to
// [batch, 1, 1, keys]. It returns mask.
func gatheredMask(ix *index, name string) (string, bool) {
	g := ix.producedBy(name, "GatherND")
	if g == nil || g.AttrInt("batch_dims", 0) != 0 {
		return "", false
	}
	mask := valueInfo(ix.g, g.Inputs[0])
	cat := ix.producedBy(g.Inputs[1], "Concat")
	if mask == nil || len(mask.Shape) != 2 || cat == nil || len(cat.Inputs) != 2 {
		return "", false
	}
	if axis := cat.AttrInt("axis", 0); axis != -1 && axis != 4 {
		return "", false
	}
	for j, want := range []struct {
		axis int
		dim  compiler.Dim
	}{{0, mask.Shape[0]}, {3, mask.Shape[1]}} {
		u := ix.producedBy(cat.Inputs[j], "Unsqueeze")
		if u == nil {
			return "", false
		}
		axes, ok := ix.axes(u)
		if !ok || len(axes) != 1 || (axes[0] != -1 && axes[0] != 4) {
			return "", false
		}
		idx := u.Inputs[0]
		if e := ix.producedBy(idx, "Expand"); e != nil {
			idx = e.Inputs[0]
		}
		if !isArangeAlong(ix, idx, want.axis, want.dim) {
			return "", false
		}
	}
	return g.Inputs[0], true
}

// isArangeAlong reports whether name is 0, 1, ..., n-1 laid along axis of
// a rank-4 value of unit dims elsewhere, n being dim: Range(0, n, 1) with
// unit axes inserted.
func isArangeAlong(ix *index, name string, axis int, dim compiler.Dim) bool {
	v := valueInfo(ix.g, name)
	if v == nil || len(v.Shape) != 4 || !sameDim(v.Shape[axis], dim) {
		return false
	}
	for i, d := range v.Shape {
		if i != axis && !(d.Known() && d.Size == 1) {
			return false
		}
	}
	start, delta, ok := unsqueezedRange(ix, name)
	return ok && start == 0 && delta == 1
}

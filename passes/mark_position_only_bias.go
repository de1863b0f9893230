package passes

import (
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// MarkPositionOnlyBias sets bias_by_position = 1 on every sqc.Attention
// whose bias (input 4, MPNet's relative position bias) it proves to depend
// on the head and the query and key positions only, not on the sequence
// length nor on any input's contents: for sequence lengths S1 <= S2 the
// bias computed at S1 is the top-left S1 x S1 corner of the one computed
// at S2. A packed batch (compiler/exec packed.go) then computes the bias
// once at the batch's padded length and gives each sequence its corner,
// the bits the sequence alone computes.
//
// The proof follows the bias back to its sources. A value is proved when
// its dims are static or the attention's sequence symbol (so no batch dim
// or unknown size) and it is
//
//   - a constant;
//
//   - Range(start, limit, delta) with start and delta constants: element
//     k is start + k*delta whatever the limit, so a shorter range is a
//     prefix of a longer one;
//
//   - ConstantOfShape (every element the same constant);
//
//   - an elementwise op (compiler.OpDef.Elementwise) of proved inputs,
//     each broadcast to the output with its dims static 1 or the output's
//     own (so the broadcast maps positions the same way at every length);
//
//   - Unsqueeze (constant axes) or Transpose of a proved value: positions
//     moved independently of the length;
//
//   - Gather of a constant table at proved indices.
//
//   - MatMul of proved values over a static contracted dim (RoPE's
//     inverse frequencies times the positions), or Concat of proved values
//     on a static axis.
//
//   - Expand of a proved value to a constant shape, its dims broadcast as
//     an elementwise op's input;
//
//   - Slice of a proved value from a constant non-negative start with
//     step 1 on every axis it slices (JinaBERT's ALiBi tensor, a constant
//     [1, heads, N, N] cut to the sequence length): the shorter slice is
//     the longer one's corner.
//
//   - Einsum's outer product of proved vectors (torch.outer of positions
//     and inverse frequencies: NomicBERT's rotary cache): out[i][j] reads
//     a[i] and b[j] only.
//
//   - Reshape of a proved value that keeps every dim up to and including
//     the last sequence dim (the same dims, by inferred shape) and
//     regroups only static dims after it (einops' repeat of NomicBERT's
//     tables: [seq, 1, 2, d/2] to [seq, 1, d]): each leading index keeps
//     its block of elements, in order.
//
// Anything else (any other Reshape or Slice, a reduction, a graph input)
// proves nothing, and the attention stays unmarked: such a schedule runs
// its batches padded, and sqc inspect says why.
//
// It likewise sets tables_by_position = 1 on every sqc.Rotary whose cos
// and sin tables, [1, seq, d], it proves position-only: a packed batch
// then gives each sequence the tables' first rows, computed at the
// batch's padded length.
var MarkPositionOnlyBias = Pass{Name: "MarkPositionOnlyBias", Run: markPositionOnlyBias}

func markPositionOnlyBias(g *compiler.Graph) (bool, error) {
	ix := newIndex(g)
	changed := false
	for _, n := range g.Nodes {
		if n.Op != "sqc.Attention" || len(n.Inputs) < 5 || n.Inputs[4] == "" || compiler.AttentionBiasByPosition(n) {
			continue
		}
		q := valueInfo(g, n.Inputs[0])
		if q == nil || len(q.Shape) != 3 || q.Shape[1].Param == "" {
			continue
		}
		p := positionProof{ix: ix, seq: q.Shape[1].Param, proved: map[string]bool{}}
		if p.biasShaped(n.Inputs[4]) && p.value(n.Inputs[4]) {
			n.Attrs["bias_by_position"] = compiler.IntAttr(1)
			changed = true
		}
	}
	for _, n := range g.Nodes {
		if n.Op != opRotary || compiler.RotaryTablesByPosition(n) {
			continue
		}
		x := valueInfo(g, n.Inputs[0])
		if x == nil || len(x.Shape) != 3 || x.Shape[1].Param == "" {
			continue
		}
		p := positionProof{ix: ix, seq: x.Shape[1].Param, proved: map[string]bool{}}
		if p.tableShaped(n.Inputs[1]) && p.tableShaped(n.Inputs[2]) && p.value(n.Inputs[1]) && p.value(n.Inputs[2]) {
			n.Attrs["tables_by_position"] = compiler.IntAttr(1)
			changed = true
		}
	}
	return changed, nil
}

// tableShaped reports whether a rotary table is [1, seq, d] with d
// static: one row per position, shared by the batch.
func (p *positionProof) tableShaped(name string) bool {
	v := valueInfo(p.ix.g, name)
	return v != nil && len(v.Shape) == 3 && v.Shape[0].Known() && v.Shape[0].Size == 1 && v.Shape[1].Param == p.seq && v.Shape[2].Known()
}

// positionProof proves values position-only (see MarkPositionOnlyBias)
// for one sequence symbol, remembering the values it has decided.
type positionProof struct {
	ix     *index
	seq    string
	proved map[string]bool
}

// biasShaped reports whether the bias has the form the packed kernels
// read a corner of: rank 2 to 4, the last two dims the sequence, the rest
// static, and any batch dim (rank 4) 1.
func (p *positionProof) biasShaped(name string) bool {
	v := valueInfo(p.ix.g, name)
	if v == nil || v.Shape == nil || len(v.Shape) < 2 || len(v.Shape) > 4 {
		return false
	}
	r := len(v.Shape)
	for i, d := range v.Shape {
		switch {
		case i >= r-2:
			if d.Param != p.seq {
				return false
			}
		case !d.Known(), i == 0 && r == 4 && d.Size != 1:
			return false
		}
	}
	return true
}

// value reports whether name is proved position-only.
func (p *positionProof) value(name string) bool {
	if ok, seen := p.proved[name]; seen {
		return ok
	}
	p.proved[name] = false // a cycle proves nothing
	ok := p.prove(name)
	p.proved[name] = ok
	return ok
}

func (p *positionProof) prove(name string) bool {
	ix := p.ix
	if ix.constant(name) != nil {
		return true
	}
	n := ix.producer[name]
	out := valueInfo(ix.g, name)
	if n == nil || out == nil || !p.dimsOK(out.Shape) {
		return false
	}
	if def, ok := compiler.LookupOp(n.Op); ok && def.Elementwise {
		for _, in := range n.Inputs {
			if in == "" {
				continue
			}
			if !p.value(in) || !broadcastsSame(valueInfo(ix.g, in), out.Shape) {
				return false
			}
		}
		return true
	}
	switch n.Op {
	case "Range":
		return ix.constant(n.Inputs[0]) != nil && ix.constant(n.Inputs[2]) != nil
	case "ConstantOfShape":
		return true
	case "Transpose":
		return n.HasAttr("perm") && p.value(n.Inputs[0])
	case "Unsqueeze":
		axesConst := n.HasAttr("axes") || (len(n.Inputs) > 1 && ix.constant(n.Inputs[1]) != nil)
		return axesConst && p.value(n.Inputs[0])
	case "Gather":
		return ix.constant(n.Inputs[0]) != nil && p.value(n.Inputs[1])
	case "MatMul":
		return p.matMul(n, out.Shape)
	case "Concat":
		return p.concat(n, out.Shape)
	case "Expand":
		return ix.constant(n.Inputs[1]) != nil && p.value(n.Inputs[0]) && broadcastsSame(valueInfo(ix.g, n.Inputs[0]), out.Shape)
	case "Slice":
		return fixedStartSlice(ix, n) && p.value(n.Inputs[0])
	case "Einsum":
		return ops.EinsumOuter(n.AttrString("equation", "")) && p.value(n.Inputs[0]) && p.value(n.Inputs[1])
	case "Reshape":
		return p.keepsLeadingDims(valueInfo(ix.g, n.Inputs[0]), out.Shape) && p.value(n.Inputs[0])
	}
	return false
}

// keepsLeadingDims reports whether a Reshape of in to out keeps in's dims
// up to and including its last sequence dim (out has them, the same, in
// the same places) and regroups only static dims after them, the same
// number of elements.
func (p *positionProof) keepsLeadingDims(in *compiler.Value, out compiler.Shape) bool {
	if in == nil || !p.dimsOK(in.Shape) {
		return false
	}
	last := -1
	for i, d := range in.Shape {
		if d.Param == p.seq {
			last = i
		}
	}
	if last < 0 || len(out) <= last {
		return false
	}
	for i := range last + 1 {
		if !sameDim(in.Shape[i], out[i]) {
			return false
		}
	}
	tail := func(s compiler.Shape) (int64, bool) {
		n := int64(1)
		for _, d := range s[last+1:] {
			if !d.Known() {
				return 0, false
			}
			n *= d.Size
		}
		return n, true
	}
	a, okA := tail(in.Shape)
	b, okB := tail(out)
	return okA && okB && a == b
}

// fixedStartSlice reports whether a Slice starts every axis it slices at
// a constant non-negative index with step 1 (absent or constant), the
// ends whatever they are: element i of the output is then element
// start + i of the input on every axis whatever the length, so a shorter
// slice is the corner of a longer one. (A negative start counts from the
// end of the axis, which may be the length.)
func fixedStartSlice(ix *index, n *compiler.Node) bool {
	negative := func(v int64) bool { return v < 0 }
	if starts, ok := n.AttrInts("starts"); ok { // opset 1-9: no steps
		return !slices.ContainsFunc(starts, negative)
	}
	if len(n.Inputs) < 3 {
		return false
	}
	starts, ok := ix.ints(n.Inputs[1])
	if !ok || slices.ContainsFunc(starts, negative) {
		return false
	}
	if len(n.Inputs) > 4 && n.Inputs[4] != "" {
		steps, ok := ix.ints(n.Inputs[4])
		if !ok || slices.ContainsFunc(steps, func(v int64) bool { return v != 1 }) {
			return false
		}
	}
	return true
}

// matMul proves Y = A·B (rank >= 2 each, Y's rank) when A and B are proved
// and the contracted dim (A's last, B's next to last) is static: Y[..., i,
// j] is then a sum over the same k of A's row i and B's column j at every
// length. The batch dims must broadcast as elementwise ops' do.
func (p *positionProof) matMul(n *compiler.Node, out compiler.Shape) bool {
	a, b := valueInfo(p.ix.g, n.Inputs[0]), valueInfo(p.ix.g, n.Inputs[1])
	r := len(out)
	if a == nil || b == nil || r < 2 || len(a.Shape) != r || len(b.Shape) != r || !a.Shape[r-1].Known() || !p.value(n.Inputs[0]) || !p.value(n.Inputs[1]) {
		return false
	}
	for i := range r - 2 {
		for _, d := range []compiler.Dim{a.Shape[i], b.Shape[i]} {
			if !(d.Known() && d.Size == 1) && !sameDim(d, out[i]) {
				return false
			}
		}
	}
	return true
}

// concat proves Concat of proved values along a static axis, the other
// dims the output's: positions on every other axis stay where they are.
func (p *positionProof) concat(n *compiler.Node, out compiler.Shape) bool {
	axis := n.AttrInt("axis", 0)
	if axis < 0 {
		axis += int64(len(out))
	}
	if axis < 0 || axis >= int64(len(out)) || !out[axis].Known() {
		return false
	}
	for _, in := range n.Inputs {
		v := valueInfo(p.ix.g, in)
		if v == nil || len(v.Shape) != len(out) || !v.Shape[axis].Known() || !p.value(in) {
			return false
		}
		for i, d := range v.Shape {
			if int64(i) != axis && !sameDim(d, out[i]) {
				return false
			}
		}
	}
	return true
}

// dimsOK reports whether every dim of s is static or the sequence.
func (p *positionProof) dimsOK(s compiler.Shape) bool {
	if s == nil {
		return false
	}
	for _, d := range s {
		if !d.Known() && d.Param != p.seq {
			return false
		}
	}
	return true
}

// broadcastsSame reports whether in broadcasts to out with each of its
// dims (aligned from the right) static 1 or out's dim itself.
func broadcastsSame(in *compiler.Value, out compiler.Shape) bool {
	if in == nil || in.Shape == nil || len(in.Shape) > len(out) {
		return false
	}
	off := len(out) - len(in.Shape)
	for i, d := range in.Shape {
		if !(d.Known() && d.Size == 1) && !sameDim(d, out[off+i]) {
			return false
		}
	}
	return true
}

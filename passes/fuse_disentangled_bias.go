package passes

import (
	"github.com/sqc-dev/sqc/compiler"
)

// FuseDisentangledBias replaces DeBERTa's relative attention terms
// (transformers' DisentangledSelfAttention.disentangled_attention_bias, as
// the HF frontend writes it) by sqc.DisentangledBias:
//
//	c2p = Div(GatherElements<axis 3>(MatMul(split(q), PK), Expand(I, [B, H, S, S])), s)
//	p2c = Div(Transpose<0,1,3,2>(GatherElements<axis 3>(MatMul(split(k), PQ), Expand(J, [B, H, S, S]))), s)
//
// summed (Add, either order) or alone, where split is the head split
// FuseAttention proves (Transpose<0,2,1,3>(Reshape(x, [B, S, H, D]))), PK
// and PQ are constants [H, D, R] (the relative embeddings through the
// projections, folded; or Transpose<0,2,1> of such [H, R, D], as
// UnmergeBatchHeads leaves DeBERTa's export) and I and J are i64 [S, S] tables. The op reads the
// embeddings as [R, H·D] (rows of the projection's output, the layout a
// key block has), so the pass re-lays them out once, dividing them by s
// there (float32(PK / s)) and giving the op divisor 1: dot(Q, PK / s)
// stands for dot(Q, PK) / s, which saves a division per score (a third
// of the kernel's time) and moves each value by float32 rounding, as
// the dot's summation order, which differs from MatMul's, does anyway.
var FuseDisentangledBias = Pass{Name: "FuseDisentangledBias", Run: fuseDisentangledBias}

const opDisentangledBias = "sqc.DisentangledBias"

// disentangledTerm is one matched term.
type disentangledTerm struct {
	rows, emb, index string // q or k, the re-laid embeddings, I or J
	heads            int64
	divisor          float32
	transposed       bool // p2c
	embRows          bool // emb is [H, R, D], not [H, D, R]
}

func fuseDisentangledBias(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	repl := map[*compiler.Node][]*compiler.Node{}
	taken := map[string]bool{} // terms already part of a fused sum
	fuse := func(n *compiler.Node, terms ...disentangledTerm) {
		inputs := []string{"", "", "", "", "", ""}
		for _, t := range terms {
			at := 0
			if t.transposed {
				at = 3
			}
			inputs[at], inputs[at+1], inputs[at+2] = t.rows, relayEmbeddings(g, ix, nm, n.Name, t), t.index // divided by t.divisor
		}
		for len(inputs) > 3 && inputs[len(inputs)-1] == "" {
			inputs = inputs[:len(inputs)-1]
		}
		repl[n] = []*compiler.Node{{Name: nm.Fresh(n.Name + "/DisentangledBias"), Op: opDisentangledBias, Inputs: inputs,
			Outputs: []string{n.Outputs[0]}, Attrs: map[string]compiler.Attr{
				"heads": compiler.IntAttr(terms[0].heads), "divisor": compiler.FloatAttr(1)}}}
	}
	for _, n := range g.Nodes {
		cur.n = n
		if n.Op != "Add" || len(n.Inputs) != 2 {
			continue
		}
		a, okA := matchDisentangledTerm(ix, n.Inputs[0])
		b, okB := matchDisentangledTerm(ix, n.Inputs[1])
		if !okA || !okB || a.transposed == b.transposed || a.heads != b.heads || a.divisor != b.divisor {
			continue
		}
		fuse(n, a, b)
		taken[n.Inputs[0]], taken[n.Inputs[1]] = true, true
	}
	for _, n := range g.Nodes {
		cur.n = n
		if n.Op != "Div" || taken[n.Outputs[0]] {
			continue
		}
		if t, ok := matchDisentangledTerm(ix, n.Outputs[0]); ok {
			fuse(n, t)
		}
	}
	return replaceByMany(g, repl)
}

// matchDisentangledTerm matches name as a c2p or p2c term (see
// FuseDisentangledBias).
func matchDisentangledTerm(ix *index, name string) (disentangledTerm, bool) {
	var t disentangledTerm
	div := ix.producedBy(name, "Div")
	if div == nil {
		return t, false
	}
	s, ok := ix.scalar(div.Inputs[1])
	if !ok || !(s > 0) || !isFloat32(ix.g, name) {
		return t, false
	}
	gathered := div.Inputs[0]
	if tr := ix.producedBy(gathered, "Transpose"); tr != nil && permIs(tr, []int64{0, 1, 3, 2}) {
		t.transposed, gathered = true, tr.Inputs[0]
	}
	ge := ix.producedBy(gathered, "GatherElements")
	if ge == nil || (ge.AttrInt("axis", 0) != 3 && ge.AttrInt("axis", 0) != -1) {
		return t, false
	}
	mm := ix.producedBy(ge.Inputs[0], "MatMul")
	exp := ix.producedBy(ge.Inputs[1], "Expand")
	if mm == nil || exp == nil {
		return t, false
	}
	rows, heads, width, rowsShape, ok := splitHeads(ix, mm.Inputs[0], permSplit)
	t.emb = mm.Inputs[1]
	emb := ix.constant(t.emb)
	if tr := ix.producedBy(t.emb, "Transpose"); emb == nil && tr != nil && permIs(tr, []int64{0, 2, 1}) {
		// DeBERTa's export: the [H, R, D] table transposed (after
		// UnmergeBatchHeads, before constants are folded again).
		t.emb, t.embRows = tr.Inputs[0], true
		emb = ix.constant(t.emb)
	}
	d := int64(1)
	if emb != nil && len(emb.Shape) == 3 {
		d = emb.Shape[1]
		if t.embRows {
			d = emb.Shape[2]
		}
	}
	if !ok || emb == nil || emb.DType != compiler.Float32 || len(emb.Shape) != 3 || emb.Shape[0] != heads || d*heads != width {
		return t, false
	}
	// The index: an i64 [S, S] table expanded to the gathered [B, H, S, S].
	idx, out := valueInfo(ix.g, exp.Inputs[0]), valueInfo(ix.g, ge.Outputs[0])
	if idx == nil || out == nil || idx.DType != compiler.Int64 || len(idx.Shape) != 2 || len(out.Shape) != 4 ||
		!sameDim(idx.Shape[0], rowsShape[1]) || !sameDim(idx.Shape[1], rowsShape[1]) ||
		!sameDim(out.Shape[0], rowsShape[0]) || !out.Shape[1].Known() || out.Shape[1].Size != heads ||
		!sameDim(out.Shape[2], rowsShape[1]) || !sameDim(out.Shape[3], rowsShape[1]) {
		return t, false
	}
	t.rows, t.index, t.heads, t.divisor = rows, exp.Inputs[0], heads, float32(s)
	return t, true
}

// relayEmbeddings adds the term's embeddings [H, D, R] divided by its
// divisor as an initializer [R, H·D] (row r holding every head's column r)
// and returns its name.
func relayEmbeddings(g *compiler.Graph, ix *index, nm *compiler.Namer, stem string, t disentangledTerm) string {
	src := ix.constant(t.emb) // matchDisentangledTerm checked it is [H, D, R] (or [H, R, D]) float32
	h, d, r := src.Shape[0], src.Shape[1], src.Shape[2]
	at := func(hi, di, ri int64) float32 { return src.F32[(hi*d+di)*r+ri] }
	if t.embRows {
		r, d = d, r
		at = func(hi, di, ri int64) float32 { return src.F32[(hi*r+ri)*d+di] }
	}
	out := compiler.NewTensor(compiler.Float32, r, h*d)
	for hi := range h {
		for di := range d {
			for ri := range r {
				out.F32[ri*h*d+hi*d+di] = at(hi, di, ri) / t.divisor
			}
		}
	}
	name := nm.Fresh(stem + "/relative_embeddings")
	g.Initializers[name] = out
	return name
}

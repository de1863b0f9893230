package passes

import (
	"maps"
	"math"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// FuseQKV merges the query, key and value projections of an attention
// block into one sqc.QLinear of three times the width, read by the
// sqc.Attention in its packed form (qkv_packed = 1,
// compiler/ops_sqc_attention.go):
//
//	q = QLinear(x, Wq, sq, bq); k = QLinear(x, Wk, sk, bk); v = QLinear(x, Wv, sv, bv)
//	y = sqc.Attention(q, k, v, mask)
//
// becomes
//
//	qkv = QLinear(x, [Wq Wk Wv], [sq sk sv], [bq bk bv])
//	y   = sqc.Attention(qkv, _, _, mask) {qkv_packed=1}
//
// when the three QLinears read the same x with identical activation
// quantisation (one act_mode; in static mode the same act_scale, bit for
// bit, and act_zero_point), have no activation or residual, all or none
// have a bias, have constant weights of one K and one width W, and each
// output is read by the Attention alone, in its own slot. x is then
// quantised once either way, and every output column of sqc.QLinear is a
// function of x's row and that column's weights, scale and bias alone, so
// concatenating the columns changes no bit; the one GEMM reads x's u8
// rows once instead of three times and runs N = 3W, which fills wide GEMM
// kernels better at small hidden sizes.
//
// The fused QLinear takes the place of the last of the three (x is
// computed before each of them), and the Attention reads Q, K and V from
// its rows at column offsets 0, W and 2W with row stride 3W.
var FuseQKV = Pass{Name: "FuseQKV", Run: fuseQKV, Level: compiler.VerifyQuantized}

func fuseQKV(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	repl := map[*compiler.Node]*compiler.Node{}
	for _, a := range g.Nodes {
		cur.n = a
		if a.Op != "sqc.Attention" || compiler.AttentionPacked(a) || len(a.Inputs) < 3 {
			continue
		}
		proj, ok := qkvProjections(ix, a)
		if !ok {
			continue
		}
		fused, out := concatQLinears(g, nm, proj)
		last := proj[0]
		for _, p := range proj[1:] {
			if ix.position[p] > ix.position[last] {
				last = p
			}
		}
		for _, p := range proj {
			repl[p] = nil
		}
		repl[last] = fused
		packed := a.Clone()
		packed.Attrs["qkv_packed"] = compiler.IntAttr(1)
		packed.Inputs = append([]string{out, "", ""}, a.Inputs[3:]...)
		repl[a] = packed
		if q := valueInfo(g, a.Inputs[0]); q != nil && q.Shape != nil {
			shape := q.Shape.Clone()
			shape[len(shape)-1] = compiler.Dim{Size: g.Initializers[fused.Inputs[1]].Shape[1]}
			g.Values[out] = &compiler.Value{Name: out, DType: compiler.Float32, Shape: shape}
		}
	}
	if len(repl) == 0 {
		return false, nil
	}
	replaceNodes(g, repl)
	removeDead(g) // the separate weights and the Q, K and V records
	return true, nil
}

// qkvProjections returns the QLinears computing an unpacked Attention's
// Q, K and V if FuseQKV may merge them (see there).
func qkvProjections(ix *index, a *compiler.Node) ([3]*compiler.Node, bool) {
	var proj [3]*compiler.Node
	for i := range proj {
		v := a.Inputs[i]
		p := ix.producedBy(v, opQLinear)
		if p == nil || ix.onlyConsumer(v) != a || !plainQLinear(ix.g, p) {
			return proj, false
		}
		proj[i] = p
	}
	if proj[0] == proj[1] || proj[1] == proj[2] || proj[0] == proj[2] {
		return proj, false
	}
	q := proj[0]
	wq := ix.g.Initializers[q.Inputs[1]]
	for _, p := range proj[1:] {
		w := ix.g.Initializers[p.Inputs[1]]
		if p.Inputs[0] != q.Inputs[0] || !sameActQuant(p, q) || w.Shape[0] != wq.Shape[0] || w.Shape[1] != wq.Shape[1] || hasBias(p) != hasBias(q) {
			return proj, false
		}
	}
	heads := a.AttrInt("heads", 0)
	return proj, heads > 0 && wq.Shape[1]%heads == 0
}

// plainQLinear: constant i8 [K, N] weight, f32 [N] scale and bias (if
// any), no activation and no residual.
func plainQLinear(g *compiler.Graph, n *compiler.Node) bool {
	if act, err := compiler.QLinearAct(n); err != nil || act != qgemm.ActNone || qlinearResidual(n) != "" {
		return false
	}
	w, s := g.Initializers[n.Inputs[1]], g.Initializers[n.Inputs[2]]
	if w == nil || w.DType != compiler.Int8 || len(w.Shape) != 2 || s == nil || s.DType != compiler.Float32 || int64(s.Len()) != w.Shape[1] {
		return false
	}
	if hasBias(n) {
		b := g.Initializers[n.Inputs[3]]
		if b == nil || b.DType != compiler.Float32 || int64(b.Len()) != w.Shape[1] {
			return false
		}
	}
	return true
}

func hasBias(n *compiler.Node) bool { return len(n.Inputs) > 3 && n.Inputs[3] != "" }

// sameActQuant reports whether two QLinears quantise their input the same
// way, so they read one u8 copy of it.
func sameActQuant(a, b *compiler.Node) bool {
	mode := compiler.QLinearMode(a)
	if mode != compiler.QLinearMode(b) {
		return false
	}
	if mode == compiler.QLinearDynamic {
		return true
	}
	return math.Float32bits(a.AttrFloat("act_scale", 0)) == math.Float32bits(b.AttrFloat("act_scale", 0)) &&
		a.AttrInt("act_zero_point", 0) == b.AttrInt("act_zero_point", 0)
}

// concatQLinears builds the QLinear whose weight, scale and bias are those
// of proj side by side, and returns it with its output's name.
func concatQLinears(g *compiler.Graph, nm *compiler.Namer, proj [3]*compiler.Node) (*compiler.Node, string) {
	q := proj[0]
	concat := func(input int, suffix string) string {
		parts := make([]*compiler.Tensor, len(proj))
		for i, p := range proj {
			parts[i] = g.Initializers[p.Inputs[input]]
		}
		name := nm.Fresh(q.Inputs[input] + suffix)
		g.Initializers[name] = concatColumns(parts)
		return name
	}
	inputs := []string{q.Inputs[0], concat(1, "/qkv"), concat(2, "/qkv")}
	if hasBias(q) {
		inputs = append(inputs, concat(3, "/qkv"))
	}
	out := nm.Fresh(q.Outputs[0] + "/qkv")
	fused := &compiler.Node{
		Name:    nm.Fresh(q.Name + "/QKV"),
		Op:      opQLinear,
		Inputs:  inputs,
		Outputs: []string{out},
		Attrs:   maps.Clone(q.Attrs),
	}
	return fused, out
}

// concatColumns joins tensors of one dtype along their last axis: [K, N_i]
// matrices into [K, sum N_i], or vectors into one.
func concatColumns(parts []*compiler.Tensor) *compiler.Tensor {
	first := parts[0]
	rows := int64(1)
	if len(first.Shape) == 2 {
		rows = first.Shape[0]
	}
	var width int64
	for _, p := range parts {
		width += p.Shape[len(p.Shape)-1]
	}
	shape := []int64{width}
	if len(first.Shape) == 2 {
		shape = []int64{rows, width}
	}
	out := compiler.NewTensor(first.DType, shape...)
	col := int64(0)
	for _, p := range parts {
		n := p.Shape[len(p.Shape)-1]
		for r := range rows {
			dst, src := r*width+col, r*n
			switch first.DType {
			case compiler.Int8:
				copy(out.I8[dst:dst+n], p.I8[src:src+n])
			case compiler.Float32:
				copy(out.F32[dst:dst+n], p.F32[src:src+n])
			}
		}
		col += n
	}
	return out
}

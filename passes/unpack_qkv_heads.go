package passes

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
)

// UnpackQKVHeads rewrites the head split of a fused QKV projection, as
// ModernBERT (and NomicBERT's permute) write it, into one standard head
// split per part:
//
//	t = Transpose<0,3,2,1,4>(Reshape(y, [B, S, 3, H, D]))   ([B, H, 3, S, D]; or <2,0,3,1,4>, [3, B, H, S, D])
//	part i = Squeeze(Slice(t, i, i+1, axis a), a)            (a: where the 3 went; or Gather(t, i, axis a))
//
// becomes, with W = H*D,
//
//	part i = Transpose<0,2,1,3>(Reshape(Slice(y, i*W, (i+1)*W, axis -1), [0, 0, H, D]))
//
// the same [B, H, S, D] values (both move data only), in the form
// FuseAttention reads Q, K and V in, with y's columns sliced where
// SplitLinearColumns can turn them into separate projections. NomicBERT's
// hub code reads the parts of the reshape itself, qkv[:, :, i] (t =
// Reshape(y, [B, S, 3, H, D]), the 3 at axis 2): each part i, [B, S, H,
// D], becomes Reshape(Slice(y, i*W, (i+1)*W, axis -1), [0, 0, H, D]), the
// head split FuseRotary and FuseAttention read before their transposes.
// The split is taken only when shape inference proves it: y [B, S, 3*W]
// and the reshape's output [B, S, 3, H, D] with the same B and S; every
// reader of t must be such a part.
var UnpackQKVHeads = Pass{Name: "UnpackQKVHeads", Run: unpackQKVHeads}

// qkvHeadPerms are the transposes of [B, S, 3, H, D] UnpackQKVHeads
// reads, each with the axis the 3 goes to; removing it leaves [B, H, S, D].
var qkvHeadPerms = []struct {
	perm []int64
	axis int64
}{{[]int64{0, 3, 2, 1, 4}, 2}, {[]int64{2, 0, 3, 1, 4}, 0}}

func unpackQKVHeads(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	insert := map[*compiler.Node][]*compiler.Node{} // a part's last node -> its replacement
	for _, n := range g.Nodes {
		cur.n = n
		var (
			y              string
			heads, d, axis int64
			ok, transposed bool
		)
		switch n.Op {
		case "Transpose":
			y, heads, d, axis, ok = matchQKVHeads(ix, n)
			transposed = true
		case "Reshape":
			y, heads, d, ok = matchQKVReshape(ix, n)
			axis = 2
		}
		if !ok {
			continue
		}
		parts, ok := qkvParts(ix, n, axis)
		if !ok {
			continue
		}
		width := heads * d
		for i, sink := range parts {
			if sink == nil {
				continue
			}
			stem := nm.Fresh(fmt.Sprintf("%s/part%d", n.Name, i))
			slice := &compiler.Node{Name: stem + "/Slice", Op: "Slice",
				Inputs: []string{y, intsConst(g, nm, stem+"/start", int64(i)*width), intsConst(g, nm, stem+"/end", int64(i+1)*width),
					intsConst(g, nm, stem+"/axis", -1)},
				Outputs: []string{nm.Fresh(stem + "/columns")}}
			shape := intsConst(g, nm, stem+"/heads_shape", 0, 0, heads, d)
			reshape := &compiler.Node{Name: stem + "/Reshape", Op: "Reshape", Inputs: []string{slice.Outputs[0], shape},
				Outputs: []string{sink.Outputs[0]}}
			if !transposed {
				insert[sink] = []*compiler.Node{slice, reshape}
				continue
			}
			reshape.Outputs = []string{nm.Fresh(stem + "/heads")}
			tr := &compiler.Node{Name: stem + "/Transpose", Op: "Transpose", Inputs: []string{reshape.Outputs[0]},
				Outputs: []string{sink.Outputs[0]}, Attrs: map[string]compiler.Attr{"perm": compiler.IntsAttr(permSplit...)}}
			insert[sink] = []*compiler.Node{slice, reshape, tr}
		}
	}
	return replaceByMany(g, insert)
}

// matchQKVHeads matches t = Transpose(Reshape(y, [B, S, 3, H, D])) with
// one of qkvHeadPerms.
func matchQKVHeads(ix *index, tr *compiler.Node) (y string, heads, d, axis int64, ok bool) {
	axis = -1
	for _, p := range qkvHeadPerms {
		if permIs(tr, p.perm) {
			axis = p.axis
		}
	}
	r := ix.producedBy(tr.Inputs[0], "Reshape")
	if axis < 0 || r == nil {
		return "", 0, 0, 0, false
	}
	y, heads, d, ok = matchQKVReshape(ix, r)
	return y, heads, d, axis, ok
}

// matchQKVReshape matches Reshape(y, [B, S, 3, H, D]) of y [B, S, 3*H*D].
func matchQKVReshape(ix *index, r *compiler.Node) (y string, heads, d int64, ok bool) {
	y = r.Inputs[0]
	in, out := valueInfo(ix.g, y), valueInfo(ix.g, r.Outputs[0])
	if in == nil || out == nil || len(in.Shape) != 3 || len(out.Shape) != 5 || in.DType != compiler.Float32 {
		return "", 0, 0, false
	}
	three, h, hd := out.Shape[2], out.Shape[3], out.Shape[4]
	if !three.Known() || three.Size != 3 || !h.Known() || !hd.Known() || h.Size <= 0 || !in.Shape[2].Known() ||
		3*h.Size*hd.Size != in.Shape[2].Size || !sameDim(in.Shape[0], out.Shape[0]) || !sameDim(in.Shape[1], out.Shape[1]) {
		return "", 0, 0, false
	}
	return y, h.Size, hd.Size, true
}

// qkvParts returns, for each of Q, K and V in order, the node whose output
// is that part of t: Squeeze(Slice(t, i, i+1, axis), axis) or Gather(t, i,
// axis) with a scalar i; nil for a part nobody reads. Every reader of t
// must be such a part, each part read once.
func qkvParts(ix *index, t *compiler.Node, axis int64) ([3]*compiler.Node, bool) {
	var parts [3]*compiler.Node
	readers := ix.consumers[t.Outputs[0]]
	if ix.isOutput[t.Outputs[0]] || len(readers) == 0 {
		return parts, false
	}
	for _, c := range readers {
		i, sink, ok := qkvPart(ix, c, axis)
		if !ok || c.Inputs[0] != t.Outputs[0] || parts[i] != nil {
			return parts, false
		}
		parts[i] = sink
	}
	return parts, true
}

func qkvPart(ix *index, c *compiler.Node, axis int64) (int, *compiler.Node, bool) {
	switch c.Op {
	case "Gather":
		i, ok := ix.ints(c.Inputs[1])
		if ax := c.AttrInt("axis", 0); (ax != axis && ax != axis-5) || !ok || len(i) != 1 || len(ix.constant(c.Inputs[1]).Shape) != 0 ||
			i[0] < 0 || i[0] > 2 {
			return 0, nil, false
		}
		return int(i[0]), c, true
	case "Slice":
		start, end, ax, ok := ix.oneAxisSlice(c)
		if !ok || (ax != axis && ax != axis-5) || start < 0 || start > 2 || end != start+1 {
			return 0, nil, false
		}
		sq := ix.onlyConsumer(c.Outputs[0])
		if sq == nil || sq.Op != "Squeeze" {
			return 0, nil, false
		}
		if ax, ok := ix.axes(sq); !ok || len(ax) != 1 || (ax[0] != axis && ax[0] != axis-5) {
			return 0, nil, false
		}
		return int(start), sq, true
	}
	return 0, nil, false
}

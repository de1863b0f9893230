package passes

import "github.com/sqc-dev/sqc/compiler"

// FuseLinear turns dense layers into sqc.Linear(x, W, b), y = x·W + b with
// W float32 [in, out] and b float32 [out] (b optional):
//
//   - MatMul(x, W) with W a 2-D constant, followed by Add(·, b) or
//     Add(b, ·) with b a constant of one value per output column ([out] or
//     [1, ..., out]) — the form torch.onnx gives nn.Linear on 3-D input;
//     a MatMul with no such Add becomes a bias-free Linear;
//   - Gemm(x, B, C) with transA=0, alpha=1, beta=1 (or no C), B constant
//     and C absent or [out]/[1, out]: transB=1 (nn.Linear on 2-D input,
//     B is [out, in]) is transposed into a new [in, out] initializer.
//
// Weights must be initializers (FoldConstants runs first), so the quantiser
// can rewrite them; activations-times-activations MatMuls (attention
// scores) are left alone.
var FuseLinear = Pass{Name: "FuseLinear", Run: fuseLinear}

const opLinear = "sqc.Linear"

func fuseLinear(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	repl := map[*compiler.Node]*compiler.Node{}
	for _, n := range g.Nodes {
		cur.n = n
		var x, w, b string
		var sink *compiler.Node
		switch n.Op {
		case "MatMul":
			x, w, b, sink = matchMatMulAdd(ix, nm, n)
		case "Gemm":
			x, w, b, sink = matchGemm(ix, nm, n)
		}
		if sink == nil || repl[sink] != nil {
			continue
		}
		inputs := []string{x, w}
		if b != "" {
			inputs = append(inputs, b)
		}
		repl[sink] = &compiler.Node{
			Name:    nm.Fresh(n.Name + "/Linear"),
			Op:      opLinear,
			Inputs:  inputs,
			Outputs: []string{sink.Outputs[0]},
		}
		if sink != n {
			repl[n] = nil
		}
	}
	replaceNodes(g, repl)
	if len(repl) > 0 {
		removeDead(g)
	}
	return len(repl) > 0, nil
}

func matchMatMulAdd(ix *index, nm *compiler.Namer, mm *compiler.Node) (x, w, b string, sink *compiler.Node) {
	x, w = mm.Inputs[0], mm.Inputs[1]
	wt := ix.g.Initializers[w]
	if wt == nil || wt.DType != compiler.Float32 || len(wt.Shape) != 2 || !isFloat32(ix.g, x) {
		return "", "", "", nil
	}
	out := wt.Shape[1]
	if add := ix.onlyConsumer(mm.Outputs[0]); add != nil && add.Op == "Add" {
		if bias, ok := otherInput(add, mm.Outputs[0]); ok && bias != mm.Outputs[0] && perChannel(ix, bias, out) {
			return x, w, channelVector(ix, nm, bias, "", out, 0), add
		}
	}
	return x, w, "", mm
}

func matchGemm(ix *index, nm *compiler.Namer, gemm *compiler.Node) (x, w, b string, sink *compiler.Node) {
	if gemm.AttrInt("transA", 0) != 0 || gemm.AttrFloat("alpha", 1) != 1 {
		return "", "", "", nil
	}
	x, w = gemm.Inputs[0], gemm.Inputs[1]
	wt := ix.g.Initializers[w]
	if wt == nil || wt.DType != compiler.Float32 || len(wt.Shape) != 2 || !isFloat32(ix.g, x) {
		return "", "", "", nil
	}
	transB := gemm.AttrInt("transB", 0) != 0
	out := wt.Shape[1]
	if transB {
		out = wt.Shape[0]
	}
	if len(gemm.Inputs) > 2 && gemm.Inputs[2] != "" {
		c := gemm.Inputs[2]
		if gemm.AttrFloat("beta", 1) != 1 || !perChannel(ix, c, out) {
			return "", "", "", nil
		}
		b = channelVector(ix, nm, c, "", out, 0)
	}
	if transB {
		t := compiler.NewTensor(compiler.Float32, wt.Shape[1], wt.Shape[0])
		rows, cols := int(wt.Shape[0]), int(wt.Shape[1])
		for r := range rows {
			for c := range cols {
				t.F32[c*rows+r] = wt.F32[r*cols+c]
			}
		}
		w = nm.Fresh(w + "/T")
		ix.g.Initializers[w] = t
	}
	return x, w, b, gemm
}

package passes

import (
	"github.com/sqc-dev/sqc/compiler"
)

// FuseLayerNormIntoQLinear runs a LayerNorm inside the GEMM that produces
// its input: an sqc.LayerNorm, or an sqc.LayerNormDual writing y_q in u8
// (one step either way), whose input x is the f32 output of an sqc.QLinear,
// read by the LayerNorm alone and no graph output, gets in_producer 1
// (compiler.InProducer). That is BERT's "dense + residual, then
// LayerNorm" after attention and after the FFN, once FuseQLinearEpilogues
// has put the residual Add into the QLinear.
//
// The INT8 engine then normalises each block of x's rows as soon as the
// GEMM has written them, while they are still in the worker's L2
// (runtime/nn.LinearLayerNorm), instead of in a step of its own that
// reads the whole of x back after the GEMM's last block: one step and one
// wait for the slowest worker fewer per LayerNorm. No value changes: a
// row's LayerNorm depends on that row alone, and it is the same kernel.
var FuseLayerNormIntoQLinear = Pass{Name: "FuseLayerNormIntoQLinear", Run: fuseLayerNormIntoQLinear, Level: compiler.VerifyQuantized}

func fuseLayerNormIntoQLinear(g *compiler.Graph) (bool, error) {
	var cur cursor
	defer cur.annotate()
	ix := newIndex(g)
	changed := false
	for i, n := range g.Nodes {
		cur.n = n
		_, _, u8 := compiler.U8Output(n)
		if compiler.InProducer(n) || len(n.Inputs) == 0 || !(n.Op == "sqc.LayerNorm" || n.Op == "sqc.LayerNormDual" && u8) {
			continue
		}
		x := n.Inputs[0]
		p := ix.producer[x]
		if p == nil || p.Op != opQLinear || !isFloat32(g, x) || ix.onlyConsumer(x) != n {
			continue
		}
		if _, _, pu8 := compiler.U8Output(p); pu8 {
			continue
		}
		fused := n.Clone()
		compiler.SetInProducer(fused)
		g.Nodes[i] = fused
		changed = true
	}
	return changed, nil
}

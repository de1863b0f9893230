package exec

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
)

// layerNormDual lowers sqc.LayerNormDual (passes.MergeSmoothedLayerNorms'
// merge of a LayerNorm and its SmoothQuant twin):
//
//   - when it writes y_q in u8 (out_scale, set by passes.WriteU8Directly),
//     to one LayerNormStep running nn.LayerNormDual: Y in f32 with
//     (Scale, B), YQ u8 rows of the QLinears' padded K with (ScaleQ, BQ);
//   - otherwise to the two f32 LayerNormSteps the unmerged pair lowers to.
//
// Either way the steps write the bits the unmerged graph's steps write:
// nn.LayerNormDual computes each output exactly as nn.LayerNorm and
// nn.LayerNormU8 compute it, from the same statistics.
func (l *lowering) layerNormDual(n *compiler.Node) (bool, error) {
	x, y, yq := n.Inputs[0], n.Outputs[0], n.Outputs[1]
	eps := n.AttrFloat("epsilon", 1e-5)
	beta, betaQ := "", ""
	if len(n.Inputs) > 4 {
		beta, betaQ = n.Inputs[3], n.Inputs[4]
	}
	params, ok1 := l.layerNormParams(x, n.Inputs[1], beta, eps)
	paramsQ, ok2 := l.layerNormParams(x, n.Inputs[2], betaQ, eps)
	if !ok1 || !ok2 || (params.Beta == nil) != (paramsQ.Beta == nil) {
		return false, nil
	}
	if scale, zp, ok := compiler.U8Output(n); ok {
		s := &LayerNormStep{
			node: node{n.Name}, X: l.slot(x), Out: l.slot(y), GammaName: n.Inputs[1], BetaName: beta, Params: params,
			GammaU8: paramsQ.Gamma, BetaU8: paramsQ.Beta, GammaU8Name: n.Inputs[2], BetaU8Name: betaQ,
			Kp: u8Row(params.N), InvScale: 1 / scale, ZeroPoint: zp, OutU8: l.slot(yq),
		}
		return true, l.emitLayerNorm(n, s)
	}
	// The unmerged pair, in its order: the original, then the twin.
	for _, half := range []struct{ name, gamma, beta, out string }{
		{n.Name, n.Inputs[1], beta, y},
		{n.Name + "/twin", n.Inputs[2], betaQ, yq},
	} {
		ln := &compiler.Node{Name: half.name, Op: "LayerNormalization", Inputs: []string{x, half.gamma, half.beta}, Outputs: []string{half.out}}
		if e, ok := n.Attrs["epsilon"]; ok {
			ln.Attrs = map[string]compiler.Attr{"epsilon": e}
		}
		if !l.layerNorm(ln) { // layerNormParams accepted both halves
			return true, fmt.Errorf("internal error: half %q of the LayerNormDual does not lower", half.name)
		}
	}
	return true, nil
}

package passes

import (
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/blocks"
)

// maskedSumGraph is mean pooling's masked sum of x [batch, seq, 6] by the
// i64 mask input, its mask cast and unsqueezed in the order form gives:
// "cast-unsqueeze" Unsqueeze(Cast(mask)) (the HF builder), "unsqueeze-cast"
// Cast(Unsqueeze(mask)) (torch.onnx), "expand" Cast(Expand(Unsqueeze(mask),
// Shape(x))) (sentence-transformers' Pooling), "scaled" the mask times 2
// (no mask), "axis2" the sum over the hidden axis instead.
func maskedSumGraph(t *testing.T, form string, keepdims int64) *compiler.Graph {
	t.Helper()
	g := compiler.NewGraph("pool")
	g.Inputs = []*compiler.Value{{Name: "x", DType: compiler.Float32, Shape: compiler.Shape{batchDim, seqDim, {Size: 6}}},
		{Name: "mask", DType: compiler.Int64, Shape: compiler.Shape{batchDim, seqDim}}}
	b := blocks.Builder{G: g}
	last := b.Ints("const.last", -1)
	var m string
	switch form {
	case "cast-unsqueeze", "axis2":
		m = b.Op("Unsqueeze", "m", b.CastFloat("mask", "mf"), last)
	case "unsqueeze-cast":
		m = b.CastFloat(b.Op("Unsqueeze", "mu", "mask", last), "m")
	case "expand":
		m = b.CastFloat(b.Op("Expand", "me", b.Op("Unsqueeze", "mu", "mask", last), b.Op("Shape", "xs", "x")), "m")
	case "scaled":
		m = b.Op("Unsqueeze", "m", b.Op("Mul", "m2", b.CastFloat("mask", "mf"), b.Scalar("const.2", 2)), last)
	}
	axis := int64(1)
	if form == "axis2" {
		axis = 2
	}
	sum := b.OpAttrs("ReduceSum", "sum", map[string]compiler.Attr{"keepdims": compiler.IntAttr(keepdims)},
		b.Op("Mul", "masked", "x", m), b.Ints("const.axis", axis))
	g.Outputs = []*compiler.Value{{Name: b.Rename(sum, "y"), DType: compiler.Float32}}
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestFuseMaskedSum: the three forms of the masked sum become one
// sqc.MaskedSum with the graph's bits, keepdims either way, on a batch
// with padding; a mask that is not the input's cast, or a sum over
// another axis, stays.
func TestFuseMaskedSum(t *testing.T) {
	x := randomF32(5, 3, 4, 6)
	mask := compiler.NewTensor(compiler.Int64, 3, 4)
	copy(mask.I64, []int64{1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0})
	in := map[string]*compiler.Tensor{"x": x, "mask": mask}
	for _, form := range []string{"cast-unsqueeze", "unsqueeze-cast", "expand"} {
		for _, keep := range []int64{0, 1} {
			g := maskedSumGraph(t, form, keep)
			after := applyPass(t, g, FuseMaskedSum)
			if h := OpHistogram(after); h[opMaskedSum] != 1 || h["ReduceSum"] != 0 || h["Mul"] != 0 {
				t.Errorf("%s keepdims %d: %s", form, keep, histogramString(h))
			}
			wantEquivalent(t, g, after, in, 0)
		}
	}
	for _, form := range []string{"scaled", "axis2"} {
		if h := OpHistogram(applyPass(t, maskedSumGraph(t, form, 0), FuseMaskedSum)); h[opMaskedSum] != 0 {
			t.Errorf("%s fused: %s", form, histogramString(h))
		}
	}
}

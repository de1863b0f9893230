package passes

import (
	"fmt"
	"math"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/blocks"
)

// sdpaBlock is one self-attention block as torch.onnx (the TorchScript
// exporter, symbolic_opset14) writes transformers' SDPA attention
// (BertSdpaSelfAttention and its successors): the heads split as eager
// attention splits them, then F.scaled_dot_product_attention as
//
//	Kt = Transpose<0,1,3,2>(K); s = the scale (given, or 1/√(head size)
//	from Shape(Q) when not); S = MatMul(Mul(Q, Sqrt(s)), Mul(Kt, Sqrt(s)))
//	Y = MatMul(Softmax(Add(S, mask)), V)
//
// with the mask of AttentionMaskConverter._expand_mask:
// Where(Cast<bool>(inv), float32 min, inv), inv = 1 - Cast<f32>(Expand(
// mask[:, None, None, :], [batch, 1, seq, seq])). Hidden 32, 4 heads.
func sdpaBlock(t *testing.T, dynamicScale bool) *compiler.Graph {
	t.Helper()
	const hidden, heads, head = 32, 4, 8
	g := compiler.NewGraph("sdpa")
	g.Inputs = []*compiler.Value{
		{Name: "x", DType: compiler.Float32, Shape: compiler.Shape{{Param: "batch", Size: -1}, {Param: "seq", Size: -1}, {Size: hidden}}},
		{Name: "mask", DType: compiler.Int64, Shape: compiler.Shape{{Param: "batch", Size: -1}, {Param: "seq", Size: -1}}},
	}
	b := blocks.Builder{G: g}
	split := map[string]string{}
	for i, part := range []string{"query", "key", "value"} {
		g.Initializers[part+".W"] = randomF32(uint64(10+i), hidden, hidden)
		g.Initializers[part+".b"] = randomF32(uint64(20+i), hidden)
		y := b.Op("Add", part+"/Add", b.Op("MatMul", part+"/MatMul", "x", part+".W"), part+".b")
		split[part] = b.SplitHeads(y, part, heads, head, 0, 2, 1, 3)
	}
	var scale string
	if dynamicScale {
		shape := b.Op("Shape", "sdpa/q_shape", split["query"])
		last := b.Op("Slice", "sdpa/q_last", shape, b.Ints("const.[-1]", -1), b.Ints("const.[max]", math.MaxInt64))
		size := b.CastFloat(last, "sdpa/q_last_f32")
		one := "const.[1.0]" // torch.tensor([1.0]): one element, rank 1
		g.Initializers[one] = compiler.NewTensor(compiler.Float32, 1)
		g.Initializers[one].F32[0] = 1
		scale = b.CastFloat(b.Op("Div", "sdpa/scale", one, b.Op("Sqrt", "sdpa/sqrt_size", size)), "sdpa/scale_f32")
	} else {
		scale = b.Scalar("const.scale", float32(1/math.Sqrt(head)))
	}
	sqrtScale := b.Op("Sqrt", "sdpa/sqrt_scale", scale)
	kT := b.OpAttrs("Transpose", "sdpa/key_transposed", map[string]compiler.Attr{"perm": compiler.IntsAttr(0, 1, 3, 2)}, split["key"])
	scores := b.Op("MatMul", "sdpa/mul_qk", b.Op("Mul", "sdpa/query_scaled", split["query"], sqrtScale), b.Op("Mul", "sdpa/key_scaled", kT, sqrtScale))

	// _expand_mask
	m := b.Op("Unsqueeze", "mask/u2", b.Op("Unsqueeze", "mask/u1", "mask", b.Ints("const.[1]", 1)), b.Ints("const.[2]", 2))
	dims := b.Op("Shape", "mask/shape", "mask")
	dim := func(i int64, name string) string {
		return b.OpAttrs("Gather", name, map[string]compiler.Attr{"axis": compiler.IntAttr(0)}, dims, b.Ints(fmt.Sprintf("const.[%d]", i), i))
	}
	target := b.OpAttrs("Concat", "mask/target", map[string]compiler.Attr{"axis": compiler.IntAttr(0)},
		dim(0, "mask/bsz"), b.Ints("const.[1]", 1), dim(1, "mask/tgt"), dim(1, "mask/src"))
	expanded := b.CastFloat(b.Op("Expand", "mask/expand", m, target), "mask/float")
	inv := b.Op("Sub", "mask/inverted", b.Scalar("const.one", 1), expanded)
	// .to(torch.bool), then masked_fill's own Cast of its condition.
	cond := b.OpAttrs("Cast", "mask/bool", map[string]compiler.Attr{"to": compiler.IntAttr(9)}, inv)
	cond = b.OpAttrs("Cast", "mask/masked_fill_cond", map[string]compiler.Attr{"to": compiler.IntAttr(9)}, cond)
	mask := b.Op("Where", "mask/filled", cond, b.Scalar("const.f32_min", -math.MaxFloat32), inv)

	probs := b.Softmax(b.Op("Add", "sdpa/masked", scores, mask), "sdpa/probs")
	y := b.MergeHeads(b.Op("MatMul", "sdpa/context", probs, split["value"]), "context", hidden)
	g.Outputs = []*compiler.Value{{Name: b.Rename(y, "y"), DType: compiler.Float32}}
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	if err := g.Verify(); err != nil {
		t.Fatalf("test graph does not verify: %v\n%s", err, g.Text())
	}
	return g
}

// TestFuseAttentionSDPA: torch.onnx's form of transformers' SDPA attention
// (√scale on both Q and Kᵀ, the scale constant or computed from Q's
// shape, the expanded [batch, 1, seq, seq] mask) canonicalises to one
// sqc.Attention reading one sqc.AttentionMask, as the eager form does, and
// computes what it computed on padded batches.
func TestFuseAttentionSDPA(t *testing.T) {
	for _, dynamicScale := range []bool{false, true} {
		t.Run(fmt.Sprintf("scale from shape %v", dynamicScale), func(t *testing.T) {
			g := sdpaBlock(t, dynamicScale)
			before := g.Clone()
			runPasses(t, g, Pipeline()...)
			hist := OpHistogram(g)
			if hist["sqc.Attention"] != 1 || hist["sqc.AttentionMask"] != 1 || hist["Where"] != 0 || hist["Sqrt"] != 0 {
				t.Fatalf("ops %s, want one sqc.Attention and one sqc.AttentionMask, no Where or Sqrt left\n%s", histogramString(hist), g.Text())
			}
			for _, n := range g.Nodes {
				if n.Op == "sqc.Attention" {
					if s := n.AttrFloat("scale", 0); math.Abs(float64(s)-1/math.Sqrt(8)) > 1e-7 {
						t.Errorf("scale %g, want 1/√8", s)
					}
				}
			}
			x := randomF32(3, 3, 5, 32)
			mask := compiler.NewTensor(compiler.Int64, 3, 5)
			for i := range mask.I64 {
				if i%5 < 5-i/5 { // lengths 5, 4, 3
					mask.I64[i] = 1
				}
			}
			// Outputs reach ~10 here, and √s·√s on Q and Kᵀ rounds unlike s
			// once on the scores: float32 rounding, a few units of 1e-6.
			wantEquivalent(t, before, g, map[string]*compiler.Tensor{"x": x, "mask": mask}, 1e-4)
		})
	}
}

// TestSDPAMaskOnlyAsWritten: an inverted mask that is not 1 - mask (here
// 2 - mask) is not taken for an AttentionMask: it stays the general
// additive mask it is (which sqc.Attention may still take as such), and
// the block computes what it did.
func TestSDPAMaskOnlyAsWritten(t *testing.T) {
	g := sdpaBlock(t, false)
	two := compiler.NewTensor(compiler.Float32)
	two.F32[0] = 2
	g.Initializers["const.one"] = two // read by the mask's Sub alone
	before := g.Clone()
	runPasses(t, g, Pipeline()...)
	if hist := OpHistogram(g); hist["sqc.AttentionMask"] != 0 || hist["Where"] != 1 {
		t.Errorf("ops %s: 2 - mask taken for an attention mask", histogramString(hist))
	}
	x, mask := randomF32(4, 2, 5, 32), compiler.NewTensor(compiler.Int64, 2, 5)
	for i := range mask.I64 {
		mask.I64[i] = int64(1 - i%5/4) // the last key of each sequence masked
	}
	wantEquivalent(t, before, g, map[string]*compiler.Tensor{"x": x, "mask": mask}, 1e-4)
}

// TestFuseAttentionNaNGuard: onnxscript's Where(IsNaN(P), 0, P) between
// the Softmax and P·V is dropped into the fused attention; a Where that
// puts anything but 0 in place of NaN is not that guard, and the block
// stays unfused.
func TestFuseAttentionNaNGuard(t *testing.T) {
	for _, tc := range []struct {
		replacement float32
		fused       bool
	}{{0, true}, {1, false}} {
		t.Run(fmt.Sprintf("NaN to %g", tc.replacement), func(t *testing.T) {
			g := sdpaBlock(t, false)
			b := blocks.Builder{G: g}
			for _, n := range g.Nodes {
				if n.Op != "MatMul" || n.Name != "sdpa/context" {
					continue
				}
				p := n.Inputs[0]
				nan := b.Op("IsNaN", "sdpa/probs_nan", p)
				n.Inputs[0] = b.Op("Where", "sdpa/probs_guarded", nan, b.Scalar(fmt.Sprintf("const.guard_%g", tc.replacement), tc.replacement), p)
			}
			if err := g.SortTopological(); err != nil {
				t.Fatal(err)
			}
			if err := g.InferShapes(); err != nil {
				t.Fatal(err)
			}
			before := g.Clone()
			runPasses(t, g, Pipeline()...)
			hist := OpHistogram(g)
			if fused := hist["sqc.Attention"] == 1 && hist["IsNaN"] == 0; fused != tc.fused {
				t.Fatalf("fused %v, want %v: ops %s", fused, tc.fused, histogramString(hist))
			}
			x := randomF32(3, 2, 5, 32)
			mask := compiler.NewTensor(compiler.Int64, 2, 5)
			for i := range mask.I64 {
				mask.I64[i] = int64(1 - i%5/4)
			}
			wantEquivalent(t, before, g, map[string]*compiler.Tensor{"x": x, "mask": mask}, 1e-4)
		})
	}
}

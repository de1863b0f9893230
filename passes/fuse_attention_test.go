package passes

import (
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// One BERT self-attention (hidden 8, 2 heads of 4) exactly as torch.onnx
// exports it at opset 14, Shape chains included, with BERT's mask.
const bertAttention = `graph "bert-attention" opset 14 {
  input %h: f32[batch, sequence, 8]
  input %mask: i64[batch, sequence]
  init %wq: f32[8, 8] = elided("sha256:00000000000000a1")
  init %wk: f32[8, 8] = elided("sha256:00000000000000a2")
  init %wv: f32[8, 8] = elided("sha256:00000000000000a3")
  init %bq: f32[8] = elided("sha256:00000000000000b1")
  init %bk: f32[8] = elided("sha256:00000000000000b2")
  init %bv: f32[8] = elided("sha256:00000000000000b3")
  init %i0: i64[] = [0]
  init %i1: i64[] = [1]
  init %ax0: i64[1] = [0]
  init %ax1: i64[1] = [1]
  init %ax2: i64[1] = [2]
  init %heads: i64[1] = [2]
  init %dhead: i64[1] = [4]
  init %width: i64[1] = [8]
  init %sqrtd: f32[] = [2]
  init %one: f32[] = [1]
  init %min: f32[] = [-3.4028235e+38]
  %mu1 = Unsqueeze(%mask, %ax1)
  %mu2 = Unsqueeze(%mu1, %ax2)
  %mf = Cast(%mu2) {to=1}
  %minv = Sub(%one, %mf)
  %madd = Mul(%minv, %min)
  %qm = MatMul(%h, %wq)
  %q = Add(%bq, %qm)
  %km = MatMul(%h, %wk)
  %k = Add(%bk, %km)
  %vm = MatMul(%h, %wv)
  %v = Add(%bv, %vm)
  %qs = Shape(%q)
  %qb = Gather(%qs, %i0) {axis=0}
  %qn = Gather(%qs, %i1) {axis=0}
  %qbu = Unsqueeze(%qb, %ax0)
  %qnu = Unsqueeze(%qn, %ax0)
  %qshape = Concat(%qbu, %qnu, %heads, %dhead) {axis=0}
  %q4 = Reshape(%q, %qshape)
  %qt = Transpose(%q4) {perm=[0, 2, 1, 3]}
  %ks = Shape(%k)
  %kb = Gather(%ks, %i0) {axis=0}
  %kn = Gather(%ks, %i1) {axis=0}
  %kbu = Unsqueeze(%kb, %ax0)
  %knu = Unsqueeze(%kn, %ax0)
  %kshape = Concat(%kbu, %knu, %heads, %dhead) {axis=0}
  %k4 = Reshape(%k, %kshape)
  %vs = Shape(%v)
  %vb = Gather(%vs, %i0) {axis=0}
  %vn = Gather(%vs, %i1) {axis=0}
  %vbu = Unsqueeze(%vb, %ax0)
  %vnu = Unsqueeze(%vn, %ax0)
  %vshape = Concat(%vbu, %vnu, %heads, %dhead) {axis=0}
  %v4 = Reshape(%v, %vshape)
  %vt = Transpose(%v4) {perm=[0, 2, 1, 3]}
  %kt = Transpose(%k4) {perm=[0, 2, 3, 1]}
  %scores = MatMul(%qt, %kt)
  %scaled = Div(%scores, %sqrtd)
  %masked = Add(%scaled, %madd)
  %probs = Softmax(%masked) {axis=-1}
  %ctx = MatMul(%probs, %vt)
  %ctxt = Transpose(%ctx) {perm=[0, 2, 1, 3]}
  %cs = Shape(%ctxt)
  %cb = Gather(%cs, %i0) {axis=0}
  %cn = Gather(%cs, %i1) {axis=0}
  %cbu = Unsqueeze(%cb, %ax0)
  %cnu = Unsqueeze(%cn, %ax0)
  %cshape = Concat(%cbu, %cnu, %width) {axis=0}
  %y = Reshape(%ctxt, %cshape)
  output %y: f32[batch, sequence, 8]
}`

func attentionInputs() map[string]*compiler.Tensor {
	return map[string]*compiler.Tensor{
		"h":    randomF32(41, 2, 3, 8),
		"mask": int64Tensor([]int64{2, 3}, 1, 1, 1, 1, 1, 0),
	}
}

func TestFuseAttentionBert(t *testing.T) {
	g := parseGraph(t, bertAttention)
	after := applyPass(t, g, CanonicalizeAttentionMask, FuseAttention, FuseLinear)
	wantOps(t, after, map[string]int{opAttentionMask: 1, opAttention: 1, opLinear: 3})
	for _, n := range after.Nodes {
		if n.Op == opAttention && (n.AttrInt("heads", 0) != 2 || n.AttrFloat("scale", 0) != 0.5) {
			t.Errorf("attention attributes %v, want heads 2, scale 0.5", n.Attrs)
		}
	}
	wantEquivalent(t, g, after, attentionInputs(), 1e-5)
}

// DistilBERT's variant: q scaled before the product, -1 for the sequence
// in the head split, K^T as two transposes, no mask.
func TestFuseAttentionDistilBertStyle(t *testing.T) {
	src := strings.NewReplacer(
		"%qshape = Concat(%qbu, %qnu, %heads, %dhead)", "%qshape = Concat(%qbu, %minus1, %heads, %dhead)",
		"%scores = MatMul(%qt, %kt)\n  %scaled = Div(%scores, %sqrtd)\n  %masked = Add(%scaled, %madd)\n  %probs = Softmax(%masked)",
		"%qdiv = Div(%qt, %sqrtd)\n  %scores = MatMul(%qdiv, %kt)\n  %probs = Softmax(%scores)",
		"%kt = Transpose(%k4) {perm=[0, 2, 3, 1]}", "%k4t = Transpose(%k4) {perm=[0, 2, 1, 3]}\n  %kt = Transpose(%k4t) {perm=[0, 1, 3, 2]}",
		"init %width", "init %minus1: i64[1] = [-1]\n  init %width",
	).Replace(bertAttention)
	g := parseGraph(t, src)
	after := applyPass(t, g, CanonicalizeAttentionMask, FuseAttention, FuseLinear)
	wantOps(t, after, map[string]int{opAttention: 1, opLinear: 3})
	wantEquivalent(t, g, after, attentionInputs(), 1e-5)
}

// A head split whose -1 cannot be proved to be the sequence (the reshape
// to [batch, -1, 2, 2] regroups a width-8 row into two) is not attention
// over sequence positions and must stay.
func TestFuseAttentionRejectsUnprovedSplit(t *testing.T) {
	src := strings.NewReplacer(
		"%qshape = Concat(%qbu, %qnu, %heads, %dhead)", "%qshape = Concat(%qbu, %minus1, %heads, %half)",
		"%kshape = Concat(%kbu, %knu, %heads, %dhead)", "%kshape = Concat(%kbu, %minus1, %heads, %half)",
		"%vshape = Concat(%vbu, %vnu, %heads, %dhead)", "%vshape = Concat(%vbu, %minus1, %heads, %half)",
		"%cshape = Concat(%cbu, %cnu, %width)", "%cshape = Concat(%cbu, %minus1, %width)",
		"%masked = Add(%scaled, %madd)\n  %probs = Softmax(%masked)", "%probs = Softmax(%scaled)",
		"init %width", "init %minus1: i64[1] = [-1]\n  init %half: i64[1] = [2]\n  init %width",
	).Replace(bertAttention)
	g := parseGraph(t, src)
	after := applyPass(t, g, CanonicalizeAttentionMask, FuseAttention)
	if n := OpHistogram(after)[opAttention]; n != 0 {
		t.Errorf("fused an attention whose head split regroups rows:\n%s", after.Text())
	}
	wantEquivalent(t, g, after, attentionInputs(), 0)
}

// biasedAttention is bertAttention with MPNet's addend: a position bias
// input [1, 2, sequence, sequence] added to the scaled scores before the
// mask, (S + bias) + mask; fill replaces the mask's fill.
func biasedAttention(fill string) string {
	return strings.NewReplacer(
		"%masked = Add(%scaled, %madd)", "%biased = Add(%scaled, %bias)\n  %masked = Add(%biased, %madd)",
		"input %mask: i64[batch, sequence]", "input %mask: i64[batch, sequence]\n  input %bias: f32[1, 2, sequence, sequence]",
		"init %min: f32[] = [-3.4028235e+38]", "init %min: f32[] = ["+fill+"]",
	).Replace(bertAttention)
}

// TestFuseAttentionPositionBias: MPNet's (S + bias) + mask fuses, the bias
// the attention's input 4, which it adds to the mask first: that sums to
// the same bits (the mask is 0 or float32's lowest); with a fill that
// leaves masked keys a weight (-1), where the order of the sums would
// show, it stays.
func TestFuseAttentionPositionBias(t *testing.T) {
	in := attentionInputs()
	in["bias"] = randomF32(42, 1, 2, 3, 3)
	g := parseGraph(t, biasedAttention("-3.4028235e+38"))
	after := applyPass(t, g, CanonicalizeAttentionMask, FuseAttention, FuseLinear, EliminateDeadNodes)
	wantOps(t, after, map[string]int{opAttentionMask: 1, opAttention: 1, opLinear: 3})
	for _, n := range after.Nodes {
		if n.Op == opAttention && (len(n.Inputs) != 5 || n.Inputs[4] != "bias") {
			t.Errorf("attention %v does not read the bias as input 4", n.Inputs)
		}
	}
	wantEquivalent(t, g, after, in, 1e-5)
	// The reassociation itself changes no bit: S + (bias + mask) against
	// (S + bias) + mask, both unfused.
	summed := parseGraph(t, strings.Replace(biasedAttention("-3.4028235e+38"),
		"%biased = Add(%scaled, %bias)\n  %masked = Add(%biased, %madd)", "%bm = Add(%bias, %madd)\n  %masked = Add(%scaled, %bm)", 1))
	wantEquivalent(t, g, summed, in, 0)

	// transformers' expand to the batch: the attention reads the bias as
	// it was before it, and the Expand dies.
	expanded := parseGraph(t, strings.Replace(biasedAttention("-3.4028235e+38"),
		"%biased = Add(%scaled, %bias)", "%bshape = Concat(%qbu, %heads, %qnu, %qnu) {axis=0}\n  %bx = Expand(%bias, %bshape)\n  %biased = Add(%scaled, %bx)", 1))
	after = applyPass(t, expanded, CanonicalizeAttentionMask, FuseAttention, FuseLinear, EliminateDeadNodes)
	wantOps(t, after, map[string]int{opAttentionMask: 1, opAttention: 1, opLinear: 3})
	for _, n := range after.Nodes {
		if n.Op == opAttention && (len(n.Inputs) != 5 || n.Inputs[4] != "bias") {
			t.Errorf("attention %v does not read the unexpanded bias as input 4", n.Inputs)
		}
	}
	wantEquivalent(t, expanded, after, in, 1e-5)

	g = parseGraph(t, biasedAttention("-1"))
	if after := applyPass(t, g, CanonicalizeAttentionMask, FuseAttention); OpHistogram(after)[opAttention] != 0 {
		t.Errorf("fused a bias with a mask of fill -1:\n%s", after.Text())
	}
}

// maskedThenBiased is biasedAttention with JinaBERT's order, the ALiBi
// bias added to the masked scores: (S + mask) + bias.
func maskedThenBiased(fill string) string {
	return strings.Replace(biasedAttention(fill), "%biased = Add(%scaled, %bias)\n  %masked = Add(%biased, %madd)",
		"%masked0 = Add(%scaled, %madd)\n  %masked = Add(%bias, %masked0)", 1)
}

// TestFuseAttentionBiasAfterMask: JinaBERT's (S + mask) + bias fuses too,
// the bias input 4 (the same bits: S + (bias + mask)); with a fill of -1
// it stays.
func TestFuseAttentionBiasAfterMask(t *testing.T) {
	in := attentionInputs()
	in["bias"] = randomF32(43, 1, 2, 3, 3)
	g := parseGraph(t, maskedThenBiased("-3.4028235e+38"))
	after := applyPass(t, g, CanonicalizeAttentionMask, FuseAttention, FuseLinear, EliminateDeadNodes)
	wantOps(t, after, map[string]int{opAttentionMask: 1, opAttention: 1, opLinear: 3})
	for _, n := range after.Nodes {
		if n.Op == opAttention && (len(n.Inputs) != 5 || n.Inputs[4] != "bias" || n.Inputs[3] == "") {
			t.Errorf("attention %v does not read the mask as input 3 and the bias as input 4", n.Inputs)
		}
	}
	wantEquivalent(t, g, after, in, 1e-5)
	summed := parseGraph(t, strings.Replace(maskedThenBiased("-3.4028235e+38"),
		"%masked0 = Add(%scaled, %madd)\n  %masked = Add(%bias, %masked0)", "%bm = Add(%bias, %madd)\n  %masked = Add(%scaled, %bm)", 1))
	wantEquivalent(t, g, summed, in, 0)

	g = parseGraph(t, maskedThenBiased("-1"))
	if after := applyPass(t, g, CanonicalizeAttentionMask, FuseAttention); OpHistogram(after)[opAttention] != 0 {
		t.Errorf("fused a bias with a mask of fill -1:\n%s", after.Text())
	}
}

// TestFuseAttentionMaskPlusBias: SDPA's attn_mask = mask + bias (JinaBERT
// with attn_implementation "torch") fuses with the bias as input 4 and the
// mask apart, the same bits as the graph's S + (mask + bias).
func TestFuseAttentionMaskPlusBias(t *testing.T) {
	in := attentionInputs()
	in["bias"] = randomF32(44, 1, 2, 3, 3)
	for _, sum := range []string{"Add(%madd, %bias)", "Add(%bias, %madd)"} {
		g := parseGraph(t, strings.Replace(biasedAttention("-3.4028235e+38"),
			"%biased = Add(%scaled, %bias)\n  %masked = Add(%biased, %madd)", "%bm = "+sum+"\n  %masked = Add(%scaled, %bm)", 1))
		after := applyPass(t, g, CanonicalizeAttentionMask, FuseAttention, FuseLinear, EliminateDeadNodes)
		wantOps(t, after, map[string]int{opAttentionMask: 1, opAttention: 1, opLinear: 3})
		for _, n := range after.Nodes {
			if n.Op == opAttention && (len(n.Inputs) != 5 || n.Inputs[4] != "bias") {
				t.Errorf("%s: attention %v does not read the bias as input 4", sum, n.Inputs)
			}
		}
		wantEquivalent(t, g, after, in, 1e-5)
	}
}

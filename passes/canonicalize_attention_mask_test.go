package passes

import (
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// Scores [batch, 2, sequence, sequence] masked two ways, as BERT and
// DistilBERT export it; two "layers" share the mask.
func TestCanonicalizeBertMask(t *testing.T) {
	g := parseGraph(t, `graph "bert-mask" opset 14 {
  input %mask: i64[batch, sequence]
  input %s1: f32[batch, 2, sequence, sequence]
  input %s2: f32[batch, 2, sequence, sequence]
  init %ax1: i64[1] = [1]
  init %ax2: i64[1] = [2]
  init %one: f32[] = [1]
  init %min: f32[] = [-3.4028235e+38]
  %u1 = Unsqueeze(%mask, %ax1)
  %u2 = Unsqueeze(%u1, %ax2)
  %f = Cast(%u2) {to=1}
  %inv = Sub(%one, %f)
  %add = Mul(%inv, %min)
  %m1 = Add(%s1, %add)
  %m2 = Add(%s2, %add)
  %p1 = Softmax(%m1) {axis=-1}
  %p2 = Softmax(%m2) {axis=-1}
  output %p1: f32[batch, 2, sequence, sequence]
  output %p2: f32[batch, 2, sequence, sequence]
}`)
	after := applyPass(t, g, CanonicalizeAttentionMask)
	wantOps(t, after, map[string]int{opAttentionMask: 1, "Add": 2, "Softmax": 2})
	wantEquivalent(t, g, after, maskInputs(), 0)
}

func TestCanonicalizeDistilBertMask(t *testing.T) {
	g := parseGraph(t, `graph "distilbert-mask" opset 17 {
  input %mask: i64[batch, sequence]
  input %s1: f32[batch, 2, sequence, sequence]
  input %s2: f32[batch, 2, sequence, sequence]
  init %zero: i64[] = [0]
  init %i0: i64[] = [0]
  init %i1: i64[] = [1]
  init %ax: i64[1] = [0]
  init %ones: i64[1] = [1]
  init %min: f32[] = [-3.4028235e+38]
  %eq = Equal(%mask, %zero)
  %shape = Shape(%mask)
  %b = Gather(%shape, %i0) {axis=0}
  %k = Gather(%shape, %i1) {axis=0}
  %bu = Unsqueeze(%b, %ax)
  %ku = Unsqueeze(%k, %ax)
  %view = Concat(%bu, %ones, %ones, %ku) {axis=0}
  %r1 = Reshape(%eq, %view)
  %sh1 = Shape(%s1)
  %e1 = Expand(%r1, %sh1)
  %c1 = Cast(%e1) {to=9}
  %w1 = Where(%c1, %min, %s1)
  %r2 = Reshape(%eq, %view)
  %sh2 = Shape(%s2)
  %e2 = Expand(%r2, %sh2)
  %c2 = Cast(%e2) {to=9}
  %w2 = Where(%c2, %min, %s2)
  %p1 = Softmax(%w1) {axis=-1}
  %p2 = Softmax(%w2) {axis=-1}
  output %p1: f32[batch, 2, sequence, sequence]
  output %p2: f32[batch, 2, sequence, sequence]
}`)
	after := applyPass(t, g, CanonicalizeAttentionMask)
	wantOps(t, after, map[string]int{opAttentionMask: 1, "Add": 2, "Softmax": 2})
	wantEquivalent(t, g, after, maskInputs(), 0)
}

func TestCanonicalizeMaskRejectsOtherLayouts(t *testing.T) {
	// Unsqueezing at axes 1 and 3 gives [batch, 1, sequence, 1]: not a key mask.
	g := parseGraph(t, `graph "wrong-axes" opset 14 {
  input %mask: i64[batch, sequence]
  input %s: f32[batch, 2, sequence, sequence]
  init %axes: i64[2] = [1, 3]
  init %one: f32[] = [1]
  init %min: f32[] = [-10000]
  %u = Unsqueeze(%mask, %axes)
  %f = Cast(%u) {to=1}
  %inv = Sub(%one, %f)
  %add = Mul(%inv, %min)
  %m = Add(%s, %add)
  output %m: f32[batch, 2, sequence, sequence]
}`)
	if runPasses(t, g, CanonicalizeAttentionMask) {
		t.Errorf("canonicalised a query-axis mask:\n%s", g.Text())
	}
}

// maskInputs: batch 2, sequence 3, the second sentence padded by one.
func maskInputs() map[string]*compiler.Tensor {
	return map[string]*compiler.Tensor{
		"mask": int64Tensor([]int64{2, 3}, 1, 1, 1, 1, 1, 0),
		"s1":   randomF32(31, 2, 2, 3, 3),
		"s2":   randomF32(32, 2, 2, 3, 3),
	}
}

// boolMaskGraph is transformers 5's boolean mask as the dynamo exporter
// writes it (see compiler/onnx's dynamo test for the source it follows),
// turned additive by Where(mask, 0, min) for two "layers". edit rewrites
// the text first (the negative cases).
func boolMaskGraph(t *testing.T, edit func(string) string) *compiler.Graph {
	t.Helper()
	text := `graph "bool-mask" opset 20 {
  input %mask: i64[batch, sequence]
  input %s1: f32[batch, 2, sequence, sequence]
  input %s2: f32[batch, 2, sequence, sequence]
  init %zero: i64[] = [0]
  init %one: i64[] = [1]
  init %yes: bool[] = [true]
  init %b_axes: i64[3] = [1, 2, 3]
  init %q_axes: i64[3] = [0, 1, 3]
  init %k_axes: i64[3] = [0, 1, 2]
  init %last: i64[1] = [-1]
  init %unit: i64[1] = [1]
  init %f0: f32[] = [0]
  init %min: f32[] = [-3.4028235e+38]
  %pm = Cast(%mask) {to=9}
  %bsz = Shape(%mask) {end=1, start=0}
  %seq = Shape(%mask) {end=2, start=1}
  %b_n = Squeeze(%bsz)
  %q_n = Squeeze(%seq)
  %k_n = Squeeze(%seq)
  %b_r = Range(%zero, %b_n, %one)
  %q_r = Range(%zero, %q_n, %one)
  %k_r = Range(%zero, %k_n, %one)
  %b_i = Unsqueeze(%b_r, %b_axes)
  %q_i = Unsqueeze(%q_r, %q_axes)
  %k_i = Unsqueeze(%k_r, %k_axes)
  %ge = GreaterOrEqual(%q_i, %zero)
  %t1 = And(%yes, %ge)
  %mx = Max(%b_i, %k_i)
  %bshape = Shape(%mx)
  %b_e = Expand(%b_i, %bshape)
  %k_e = Expand(%k_i, %bshape)
  %b_u = Unsqueeze(%b_e, %last)
  %k_u = Unsqueeze(%k_e, %last)
  %idx = Concat(%b_u, %k_u) {axis=-1}
  %g = GatherND(%pm, %idx) {batch_dims=0}
  %t2 = And(%t1, %g)
  %full = Concat(%bsz, %unit, %seq, %seq) {axis=0}
  %cond = Expand(%t2, %full)
  %bias = Where(%cond, %f0, %min)
  %m1 = Add(%s1, %bias)
  %m2 = Add(%s2, %bias)
  output %m1: f32[batch, 2, sequence, sequence]
  output %m2: f32[batch, 2, sequence, sequence]
}`
	if edit != nil {
		text = edit(text)
	}
	return parseGraph(t, text)
}

// TestCanonicalizeGatheredBoolMask: transformers 5's boolean mask becomes
// one AttentionMask shared by both layers; variants that are not the
// padding mask (keys counted to another dim, a query test that is not always true, the
// index tuple reversed) keep their Where and compute what they did.
func TestCanonicalizeGatheredBoolMask(t *testing.T) {
	g := boolMaskGraph(t, nil)
	after := applyPass(t, g, CanonicalizeAttentionMask)
	wantOps(t, after, map[string]int{opAttentionMask: 1, "Add": 2})
	wantEquivalent(t, g, after, maskInputs(), 0)

	for _, tc := range []struct{ name, from, to string }{
		{"keys counted to the batch size", "%k_n = Squeeze(%seq)", "%k_n = Squeeze(%bsz)"},
		{"q_idx >= 1", "%ge = GreaterOrEqual(%q_i, %zero)", "%ge = GreaterOrEqual(%q_i, %one)"},
		{"tuple reversed", "%idx = Concat(%b_u, %k_u) {axis=-1}", "%idx = Concat(%k_u, %b_u) {axis=-1}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := boolMaskGraph(t, func(s string) string {
				if !strings.Contains(s, tc.from) {
					t.Fatalf("no %q", tc.from)
				}
				return strings.Replace(s, tc.from, tc.to, 1)
			})
			after := applyPass(t, g, CanonicalizeAttentionMask)
			if OpHistogram(after)[opAttentionMask] != 0 {
				t.Errorf("taken for the padding mask:\n%s", after.Text())
			}
			in := maskInputs()
			in["mask"] = int64Tensor([]int64{3, 3}, 1, 1, 1, 1, 1, 0, 1, 0, 0) // square, so the reversed tuple indexes in range
			in["s1"], in["s2"] = randomF32(31, 3, 2, 3, 3), randomF32(32, 3, 2, 3, 3)
			wantEquivalent(t, g, after, in, 0)
		})
	}
}

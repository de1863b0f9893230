package passes

import (
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

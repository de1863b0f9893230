package passes

import (
	"strings"
	"testing"
)

// queryKeyMaskGraph is DeBERTa's masked_fill softmax: the mask of query
// and key pairs, mask[:, None, None, :] * mask[:, None, :, None] cast to
// u8 and bool, inverted, filling the scores with float32's min.
const queryKeyMaskGraph = `graph "qkmask" opset 14 {
  input %scores: f32[batch, 2, sequence, sequence]
  input %mask: i64[batch, sequence]
  input %v: f32[batch, 2, sequence, 4]
  init %one: i64[1] = [1]
  init %two: i64[1] = [2]
  init %m2: i64[1] = [-2]
  init %m1: i64[1] = [-1]
  init %fill: f32[] = [-3.4028235e+38]
  %u0 = Unsqueeze(%mask, %one)
  %u1 = Unsqueeze(%u0, %two)
  %sq = Squeeze(%u1, %m2)
  %u2 = Unsqueeze(%sq, %m1)
  %qk = Mul(%u1, %u2)
  %c = Cast(%qk) {to=2}
  %b = Cast(%c) {to=9}
  %nb = Not(%b)
  %w = Where(%nb, %fill, %scores)
  %p = Softmax(%w) {axis=-1}
  %ctx = MatMul(%p, %v)
  %y = Transpose(%ctx) {perm=[0, 2, 1, 3]}
  output %y: f32[batch, sequence, 2, 4]
}`

// TestCanonicalizeQueryKeyMask: the pair mask becomes the key mask
// (sqc.AttentionMask), which changes the rows of padded queries only:
// real tokens' outputs stay bit for bit.
func TestCanonicalizeQueryKeyMask(t *testing.T) {
	g := parseGraph(t, queryKeyMaskGraph)
	after := applyPass(t, g, CanonicalizeAttentionMask, EliminateDeadNodes)
	wantOps(t, after, map[string]int{opAttentionMask: 1, "Add": 1, "Softmax": 1, "MatMul": 1, "Transpose": 1})
	in := maskedInputs(nil)
	delete(in, "x")
	in["scores"], in["v"] = randomF32(51, 2, 2, 5, 5), randomF32(52, 2, 2, 5, 4)
	wantRealRowsEqual(t, g, after, in)
}

// TestCanonicalizeQueryKeyMaskRejectsNearMisses: query rows from another
// mask, or a product of the key layout with itself, are no pair mask.
func TestCanonicalizeQueryKeyMaskRejectsNearMisses(t *testing.T) {
	for name, edits := range map[string][][2]string{
		"other-mask": {
			{"  input %v:", "  input %other: i64[batch, sequence]\n  input %v:"},
			{"  %sq = Squeeze(%u1, %m2)", "  %o0 = Unsqueeze(%other, %one)\n  %o1 = Unsqueeze(%o0, %two)\n  %sq = Squeeze(%o1, %m2)"},
		},
		"key-twice": {{"%qk = Mul(%u1, %u2)", "%qk = Mul(%u1, %u1)"}},
	} {
		t.Run(name, func(t *testing.T) {
			src := queryKeyMaskGraph
			for _, edit := range edits {
				if !strings.Contains(src, edit[0]) {
					t.Fatalf("edit %q not applied", edit[0])
				}
				src = strings.Replace(src, edit[0], edit[1], 1)
			}
			g := parseGraph(t, src)
			runPasses(t, g, CanonicalizeAttentionMask)
			if got := OpHistogram(g); got["Where"] != 1 || got[opAttentionMask] != 0 {
				t.Errorf("ops %v, want the Where kept", got)
			}
		})
	}
}

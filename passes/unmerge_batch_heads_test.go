package passes

import (
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// mergedAttentionGraph is attention as transformers' DeBERTa writes it
// and torch.onnx exports it, for 2 heads of 4: Q, K and V merged to
// [batch·heads, seq, d], K transposed and divided before the bmm, a
// c2p term from a table tiled over the batch and an index expanded to
// the merged axis, plus 0 (the export's score = 0 + c2p), the scores
// split back for the Softmax and merged again for the bmm with V.
const mergedAttentionGraph = `graph "merged" opset 14 {
  input %q: f32[batch, sequence, 8]
  input %k: f32[batch, sequence, 8]
  input %v: f32[batch, sequence, 8]
  input %idx: i64[1, sequence, sequence]
  init %split: i64[4] = [0, 0, 2, 4]
  init %table: f32[2, 6, 4] = splat(0)
  init %scale: f32[] = [2.828427]
  init %zero_f: f32[] = [0]
  init %zero: i64[1] = [0]
  init %one: i64[1] = [1]
  init %two: i64[1] = [2]
  init %four: i64[1] = [4]
  init %minus: i64[1] = [-1]
  %qs = Shape(%q)
  %s = Slice(%qs, %one, %two)
  %merge = Concat(%minus, %s, %four) {axis=0}
  %qr = Reshape(%q, %split)
  %qh = Transpose(%qr) {perm=[0, 2, 1, 3]}
  %q3 = Reshape(%qh, %merge)
  %kr = Reshape(%k, %split)
  %kh = Transpose(%kr) {perm=[0, 2, 1, 3]}
  %k3 = Reshape(%kh, %merge)
  %vr = Reshape(%v, %split)
  %vh = Transpose(%vr) {perm=[0, 2, 1, 3]}
  %v3 = Reshape(%vh, %merge)
  %kt = Transpose(%k3) {perm=[0, 2, 1]}
  %kts = Div(%kt, %scale)
  %scores = MatMul(%q3, %kts)
  %bhs = Shape(%q3)
  %bh = Slice(%bhs, %zero, %one)
  %b = Div(%bh, %two)
  %reps = Concat(%b, %one, %one) {axis=0}
  %pk = Tile(%table, %reps)
  %pkt = Transpose(%pk) {perm=[0, 2, 1]}
  %c2p_att = MatMul(%q3, %pkt)
  %xs = Concat(%bh, %s, %s) {axis=0}
  %index = Expand(%idx, %xs)
  %c2p_g = GatherElements(%c2p_att, %index) {axis=-1}
  %c2p = Div(%c2p_g, %scale)
  %c2p0 = Add(%c2p, %zero_f)
  %sum = Add(%scores, %c2p0)
  %split2 = Concat(%minus, %two, %s, %s) {axis=0}
  %s4 = Reshape(%sum, %split2)
  %p = Softmax(%s4) {axis=-1}
  %merge2 = Concat(%minus, %s, %s) {axis=0}
  %p3 = Reshape(%p, %merge2)
  %ctx3 = MatMul(%p3, %v3)
  %split3 = Concat(%minus, %two, %s, %four) {axis=0}
  %ctx4 = Reshape(%ctx3, %split3)
  %y = Transpose(%ctx4) {perm=[0, 2, 1, 3]}
  output %y: f32[batch, sequence, 2, 4]
}`

// mergedInputs are 2 sequences of 5 and relative positions clamped to
// the table's 6 rows, with the table set to random values.
func mergedInputs() map[string]*compiler.Tensor {
	idx := compiler.NewTensor(compiler.Int64, 1, 5, 5)
	for i := range 5 {
		for j := range 5 {
			idx.I64[i*5+j] = int64(min(max(3+i-j, 0), 5))
		}
	}
	return map[string]*compiler.Tensor{"q": randomF32(31, 2, 5, 8), "k": randomF32(32, 2, 5, 8), "v": randomF32(33, 2, 5, 8), "idx": idx}
}

// TestUnmergeBatchHeads: every merged op gets its [batch, heads, ...]
// twin and the splits read the twins, so nothing merged is left: no
// Tile, no merged Reshape read by a float op, the table read
// transposed and broadcast over the batch, the index expanded from [S,
// S]. The result equals the merged graph's to float32 rounding (the same
// products and sums, in the same order).
func TestUnmergeBatchHeads(t *testing.T) {
	g := parseGraph(t, mergedAttentionGraph)
	g.Initializers["table"] = randomF32(34, 2, 6, 4)
	in := mergedInputs()
	after := applyPass(t, g, UnmergeBatchHeads, EliminateDeadNodes)
	// Four Reshapes: the head splits and the merged Q, whose shape the
	// index's Expand still reads (FuseDisentangledBias drops both).
	wantOps(t, after, map[string]int{"Reshape": 4, "Transpose": 6, "MatMul": 3, "Add": 1, "Div": 3, "GatherElements": 1, "Expand": 1, "Softmax": 1,
		"Shape": 2, "Slice": 3, "Concat": 3, "Squeeze": 1})
	for _, n := range after.Nodes {
		v := valueInfo(after, n.Outputs[0])
		if n.Op == "MatMul" && (v == nil || len(v.Shape) != 4 || v.Shape[0].Param != "batch") {
			t.Errorf("%s: %v, want [batch, 2, ...]", n.Outputs[0], v)
		}
		if n.Op == "GatherElements" {
			e := after.Nodes[0]
			for _, m := range after.Nodes {
				if len(m.Outputs) > 0 && m.Outputs[0] == n.Inputs[1] {
					e = m
				}
			}
			if iv := valueInfo(after, e.Inputs[0]); e.Op != "Expand" || iv == nil || len(iv.Shape) != 2 {
				t.Errorf("the index is %s(%v), want an Expand of the [S, S] table", e.Op, iv)
			}
		}
	}
	wantEquivalent(t, g, after, in, 1e-6)
}

// TestUnmergeBatchHeadsRejectsNearMisses: where a merged value's twin
// cannot be proved, the split reading it stays and so does everything
// merged before it: a split into other heads, a gather along another
// axis, a Tile by another count.
func TestUnmergeBatchHeadsRejectsNearMisses(t *testing.T) {
	for name, edit := range map[string][2]string{
		"other-heads": {"%split2 = Concat(%minus, %two, %s, %s) {axis=0}", "%split2 = Concat(%minus, %four, %s, %s) {axis=0}"},
		"other-axis":  {"%c2p_g = GatherElements(%c2p_att, %index) {axis=-1}", "%c2p_g = GatherElements(%c2p_att, %index) {axis=1}"},
		"tile-count":  {"%reps = Concat(%b, %one, %one) {axis=0}", "%reps = Concat(%bh, %one, %one) {axis=0}"},
	} {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(mergedAttentionGraph, edit[0], edit[1], 1)
			if src == mergedAttentionGraph {
				t.Fatalf("edit %q not applied", edit[0])
			}
			g := parseGraph(t, src)
			runPasses(t, g, UnmergeBatchHeads, EliminateDeadNodes)
			for _, n := range g.Nodes {
				if n.Outputs[0] == "s4" && n.Op == "Reshape" {
					return
				}
			}
			t.Errorf("the scores' split is gone:\n%s", g.Text())
		})
	}
}

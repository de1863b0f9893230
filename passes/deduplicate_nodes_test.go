package passes

import (
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// TestDeduplicateNodes: per-layer copies of one computation (the same op,
// attributes and inputs, constants equal by value under other names)
// become one, computing the same; a constant that differs in one bit (-0
// against 0), another attribute, or a node whose output is a graph output
// stays.
func TestDeduplicateNodes(t *testing.T) {
	g := parseGraph(t, `graph "dedup" opset 14 {
  input %ids: i64[batch, seq]
  init %one_a: i64[] = [1]
  init %one_b: i64[] = [1]
  init %f0_a: f32[] = [0]
  init %f0_b: f32[] = [0]
  init %neg0: f32[] = [-0]
  init %inv_a: f32[2] = [1, 0.1]
  init %inv_b: f32[2] = [1, 0.1]
  %shape_a: i64[2] = Shape(%ids)
  %shape_b: i64[2] = Shape(%ids)
  %len_a: i64[] = Gather(%shape_a, %one_a) {axis=0}
  %len_b: i64[] = Gather(%shape_b, %one_b) {axis=0}
  %lenf_a: f32[] = Cast(%len_a) {to=1}
  %lenf_b: f32[] = Cast(%len_b) {to=1}
  %pos_a: f32[seq] = Range(%f0_a, %lenf_a, %lenf_a)
  %pos_b: f32[seq] = Range(%f0_b, %lenf_b, %lenf_b)
  %pos_c: f32[seq] = Range(%neg0, %lenf_b, %lenf_b)
  %t_a: f32[seq, 2] = Einsum(%pos_a, %inv_a) {equation="i,j->ij"}
  %t_b: f32[seq, 2] = Einsum(%pos_b, %inv_b) {equation="i,j->ij"}
  %t_c: f32[seq, 2] = Einsum(%pos_c, %inv_b) {equation="i,j->ij"}
  %t_d: f32[2, seq] = Einsum(%inv_b, %pos_b) {equation="i,j->ij"}
  %cos_a: f32[seq, 2] = Cos(%t_a)
  %cos_b: f32[seq, 2] = Cos(%t_b)
  %sum: f32[seq, 2] = Add(%cos_a, %cos_b)
  %y: f32[seq, 2] = Add(%sum, %t_c)
  %z: f32[2, seq] = Neg(%t_d)
  output %y: f32[seq, 2]
  output %z: f32[2, seq]
  output %cos_b: f32[seq, 2]
}`)
	ids := compiler.NewTensor(compiler.Int64, 2, 5)
	after := applyPass(t, g, DeduplicateNodes)
	// One Shape, Gather and Cast; Range a (b merged into it) and c (-0);
	// Einsum a (b merged), c and d (operands swapped); Cos a, and b, a
	// graph output.
	wantOps(t, after, map[string]int{"Shape": 1, "Gather": 1, "Cast": 1, "Range": 2, "Einsum": 3, "Cos": 2, "Add": 2, "Neg": 1})
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"ids": ids}, 0)
}

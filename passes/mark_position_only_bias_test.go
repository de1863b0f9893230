package passes

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
)

// positionBiasGraph is attention with a bias of the sequence length
// computed by the given lines (IR text, between the length %len, an i64
// scalar, and %bias, f32 [1, 2, seq, seq]); the bias is a graph output
// too, so a test can look at it.
func positionBiasGraph(t *testing.T, biasLines string) *compiler.Graph {
	t.Helper()
	table := make([]string, 32)
	for i := range table {
		table[i] = fmt.Sprint(float32(i)/8 - 2)
	}
	square := make([]string, 128)
	for i := range square {
		square[i] = fmt.Sprint(float32(i)/16 - 4)
	}
	return parseGraph(t, `graph "position_bias" opset 17 {
  input %q: f32[batch, seq, 8]
  input %mask: i64[batch, seq]
  init %zero: i64[] = [0]
  init %one: i64[] = [1]
  init %minus_one: i64[] = [-1]
  init %ax0: i64[1] = [0]
  init %ax1: i64[1] = [1]
  init %near: i64[] = [7]
  init %far: i64[] = [-7]
  init %table: f32[16, 2] = [`+strings.Join(table, ", ")+`]
  init %square: f32[1, 2, 8, 8] = [`+strings.Join(square, ", ")+`]
  init %slopes: f32[2, 1, 1] = [-0.25, -0.0625]
  init %heads: i64[3] = [2, 1, 1]
  init %eight: i64[1] = [8]
  init %eights: i64[2] = [8, 8]
  init %axes23: i64[2] = [2, 3]
  init %steps1: i64[2] = [1, 1]
  init %zeros2: i64[2] = [0, 0]
  %shape: i64[3] = Shape(%q)
  %len: i64[] = Gather(%shape, %one) {axis=0}
`+biasLines+`
  %m: f32[batch, 1, 1, seq] = sqc.AttentionMask(%mask)
  %y: f32[batch, seq, 8] = sqc.Attention(%q, %q, %q, %m, %bias) {heads=2, scale=0.5}
  output %y: f32[batch, seq, 8]
  output %bias: f32[1, 2, seq, seq]
}`)
}

// relativeBias is MPNet's form: table[clamp(j - i, -7, 7) + 7] per head.
const relativeBias = `
  %pos: i64[seq] = Range(%zero, %len, %one)
  %row: i64[seq, 1] = Unsqueeze(%pos, %ax1)
  %col: i64[1, seq] = Unsqueeze(%pos, %ax0)
  %rel: i64[seq, seq] = Sub(%col, %row)
  %capped: i64[seq, seq] = Min(%rel, %near)
  %clamped: i64[seq, seq] = Max(%capped, %far)
  %idx: i64[seq, seq] = Add(%clamped, %near)
  %vals: f32[seq, seq, 2] = Gather(%table, %idx)
  %tr: f32[2, seq, seq] = Transpose(%vals) {perm=[2, 0, 1]}
  %bias: f32[1, 2, seq, seq] = Unsqueeze(%tr, %ax0)`

// alibiBias is JinaBERT's ALiBi as the HF frontend computes it:
// -slope(head) · |j - i|.
const alibiBias = `
  %pos: i64[seq] = Range(%zero, %len, %one)
  %row: i64[seq, 1] = Unsqueeze(%pos, %ax1)
  %col: i64[1, seq] = Unsqueeze(%pos, %ax0)
  %rel: i64[seq, seq] = Sub(%col, %row)
  %dist: i64[seq, seq] = Abs(%rel)
  %distf: f32[seq, seq] = Cast(%dist) {to=1}
  %by_head: f32[2, seq, seq] = Mul(%slopes, %distf)
  %bias: f32[1, 2, seq, seq] = Unsqueeze(%by_head, %ax0)`

// slicedTable is a constant [1, 2, 8, 8] table cut to [1, 2, seq, seq]
// on axes 2 and 3 from starts (i64 [2]), offset (i64 [1]) the same start
// again, as the ONNX export of JinaBERT's buffered ALiBi tensor slices it
// (there from 0).
func slicedTable(starts, offset string) string {
	return `
  %len1: i64[1] = Unsqueeze(%len, %ax0)
  %end: i64[1] = Add(%len1, ` + offset + `)
  %ends: i64[2] = Concat(%end, %end) {axis=0}
  %bias: f32[1, 2, seq, seq] = Slice(%square, ` + starts + `, %ends, %axes23, %steps1)`
}

// TestMarkPositionOnlyBias: the pass marks the attention whose bias is
// a function of the positions and no other, and for every case the
// interpreter agrees: the bias at length 3 is the corner of the bias at
// length 6 exactly when the attention is marked.
func TestMarkPositionOnlyBias(t *testing.T) {
	for _, c := range []struct {
		name, lines string
		marked      bool
	}{
		{"relative", relativeBias, true},
		{"alibi", alibiBias, true},
		// The distances expanded over the heads first, as torch exports
		// rebuild_alibi_tensor's expand.
		{"alibi expanded", strings.Replace(alibiBias, `
  %by_head: f32[2, seq, seq] = Mul(%slopes, %distf)`, `
  %dist3: f32[1, seq, seq] = Unsqueeze(%distf, %ax0)
  %expanded: f32[2, seq, seq] = Expand(%dist3, %heads)
  %by_head: f32[2, seq, seq] = Mul(%slopes, %expanded)`, 1), true},
		{"table from 0", slicedTable("%zeros2", "%ax0"), true}, // %ax0 is [0]
		// A fixed offset keeps the corner: rows and columns 1.. of the
		// table.
		{"table from 1", slicedTable("%steps1", "%ax1"), true},
		// Counted back from the table's end: the offset is 8 - len.
		{"table from its end", `
  %len0: i64[1] = Unsqueeze(%len, %ax0)
  %back: i64[1] = Sub(%eight, %len0)
  %backs: i64[2] = Concat(%back, %back) {axis=0}` + slicedTable("%backs", "%back"), false},
		// The same over the length: the length is no constant.
		{"divided by the length", relativeBias + `
  %lenf: f32[] = Cast(%len) {to=1}
  %bias2: f32[1, 2, seq, seq] = Div(%bias, %lenf)`, false},
		// Keys counted from the end of the sequence: Range's start is the
		// length.
		{"keys from the end", `
  %rpos: i64[seq] = Range(%len, %zero, %minus_one)` + strings.Replace(relativeBias, "Unsqueeze(%pos, %ax0)", "Unsqueeze(%rpos, %ax0)", 1), false},
		// NomicBERT's rotary cache: an outer product of positions.
		{"outer product", outerBias(""), true},
		// The same regrouped by a Reshape after the last sequence dim, to
		// a shape the exporter computes from Shape ops.
		{"outer product regrouped", outerBias(`
  %o3: f32[seq, seq, 1] = Unsqueeze(%outer, %ax2)
  %len1: i64[1] = Unsqueeze(%len, %ax0)
  %sq: i64[2] = Concat(%len1, %len1) {axis=0}
  %outer2: f32[seq, seq] = Reshape(%o3, %sq)`), true},
		// A Reshape that moves the heads past a sequence dim scrambles the
		// positions at every length but one.
		{"reshape across a sequence dim", outerBias("") + `
  %len1: i64[1] = Unsqueeze(%len, %ax0)
  init %two: i64[1] = [2]
  %mixed_shape: i64[3] = Concat(%len1, %two, %len1) {axis=0}
  %mixed: f32[seq, 2, seq] = Reshape(%by_head, %mixed_shape)
  %back: f32[2, seq, seq] = Transpose(%mixed) {perm=[1, 0, 2]}
  %bias2: f32[1, 2, seq, seq] = Unsqueeze(%back, %ax0)`, false},
		// A key's weight read from the queries themselves.
		{"data", relativeBias + `
  %qk: f32[batch, seq] = ReduceMean(%q) {axes=[2], keepdims=0}
  %qk1: f32[batch, 1, seq] = Unsqueeze(%qk, %ax1)
  %qk2: f32[batch, 1, 1, seq] = Unsqueeze(%qk1, %ax1)
  %bias2: f32[batch, 2, seq, seq] = Add(%bias, %qk2)`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			lines := c.lines
			if strings.Contains(lines, "%bias2") { // the attention reads the last value
				lines = strings.ReplaceAll(strings.ReplaceAll(lines, "%bias:", "%bias0:"), "(%bias,", "(%bias0,")
				lines = strings.ReplaceAll(lines, "%bias2", "%bias")
			}
			g := positionBiasGraph(t, lines)
			runPasses(t, g, MarkPositionOnlyBias)
			marked := false
			for _, n := range g.Nodes {
				marked = marked || (n.Op == "sqc.Attention" && compiler.AttentionBiasByPosition(n))
			}
			if marked != c.marked {
				t.Fatalf("marked = %v, want %v\n%s", marked, c.marked, g.Text())
			}
			if corner := biasIsCorner(t, g, 3, 6); corner != c.marked {
				t.Fatalf("the interpreter's bias at length 3 is the corner of length 6's: %v, want %v", corner, c.marked)
			}
		})
	}
}

// outerBias is a bias from torch.outer of the positions (Einsum), per
// head; regroup, if any, ends in %outer2 [seq, seq] computed from %outer.
func outerBias(regroup string) string {
	outer := "%outer"
	if regroup != "" {
		outer = "%outer2"
	}
	return `
  init %ax2: i64[1] = [2]
  %pos: i64[seq] = Range(%zero, %len, %one)
  %posf: f32[seq] = Cast(%pos) {to=1}
  %outer: f32[seq, seq] = Einsum(%posf, %posf) {equation="i,j->ij"}` + regroup + `
  %by_head: f32[2, seq, seq] = Mul(%slopes, ` + outer + `)
  %bias: f32[1, 2, seq, seq] = Unsqueeze(%by_head, %ax0)`
}

// biasIsCorner runs g at lengths short and long (batch 2 of random
// queries, other ones at each length) and reports whether batch row 0's
// bias at short is the top-left corner of its bias at long.
func biasIsCorner(t *testing.T, g *compiler.Graph, short, long int64) bool {
	t.Helper()
	run := func(seq int64, seed uint64) *compiler.Tensor {
		mask := compiler.NewTensor(compiler.Int64, 2, seq)
		for i := range mask.I64 {
			mask.I64[i] = 1
		}
		out, err := interp.Run(g, map[string]*compiler.Tensor{"q": randomF32(seed, 2, seq, 8), "mask": mask}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out["bias"]
	}
	s, l := run(short, 1), run(long, 2)
	heads := s.Shape[1]
	for h := range heads {
		for i := range short {
			for j := range short {
				a := s.F32[(h*short+i)*short+j]
				b := l.F32[(h*long+i)*long+j]
				if math.Float32bits(a) != math.Float32bits(b) {
					return false
				}
			}
		}
	}
	return true
}

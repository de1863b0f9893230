package passes

import (
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// disentangledGraph is DeBERTa's two relative terms as the HF frontend
// writes them, for 2 heads of 4 and 6 embedding rows, with the p2c term's
// divisor and the sum given.
func disentangledGraph(p2cDivisor, sum string) string {
	return `graph "disentangled" opset 14 {
  input %q: f32[batch, sequence, 8]
  input %k: f32[batch, sequence, 8]
  input %c2p_idx: i64[sequence, sequence]
  input %p2c_idx: i64[sequence, sequence]
  init %heads_shape: i64[4] = [0, 0, 2, 4]
  init %pk: f32[2, 4, 6] = splat(0)
  init %pq: f32[2, 4, 6] = splat(0)
  init %s: f32[] = [3.4641016]
  init %s2: f32[] = [` + p2cDivisor + `]
  init %four: i64[1] = [4]
  %qr = Reshape(%q, %heads_shape)
  %qh = Transpose(%qr) {perm=[0, 2, 1, 3]}
  %c2p_att = MatMul(%qh, %pk)
  %shape_q = Shape(%qh)
  %c2p_index = Expand(%c2p_idx, %idx_shape)
  %c2p_g = GatherElements(%c2p_att, %c2p_index) {axis=3}
  %c2p = Div(%c2p_g, %s)
  %kr = Reshape(%k, %heads_shape)
  %kh = Transpose(%kr) {perm=[0, 2, 1, 3]}
  %p2c_att = MatMul(%kh, %pq)
  %p2c_index = Expand(%p2c_idx, %idx_shape)
  %p2c_g = GatherElements(%p2c_att, %p2c_index) {axis=3}
  %p2c_t = Transpose(%p2c_g) {perm=[0, 1, 3, 2]}
  %p2c = Div(%p2c_t, %s2)
` + sum + `
  output %y: f32[batch, 2, sequence, sequence]
}`
}

// disentangledInputs are a batch of 2 sequences of 5 with DeBERTa's
// tables for a span of 3, clamp(3 ± (i - j)) to the 6 rows, and the
// graph's embeddings set to random values.
func disentangledInputs(g *compiler.Graph) map[string]*compiler.Tensor {
	g.Initializers["pk"], g.Initializers["pq"] = randomF32(21, 2, 4, 6), randomF32(22, 2, 4, 6)
	table := func(sign int) *compiler.Tensor {
		t := compiler.NewTensor(compiler.Int64, 5, 5)
		for i := range 5 {
			for j := range 5 {
				t.I64[i*5+j] = int64(min(max(3+sign*(i-j), 0), 5))
			}
		}
		return t
	}
	return map[string]*compiler.Tensor{"q": randomF32(23, 2, 5, 8), "k": randomF32(24, 2, 5, 8), "c2p_idx": table(1), "p2c_idx": table(-1)}
}

// The [batch, heads, seq, seq] shape the tables expand to, written with
// Shape and Concat as the frontend does.
const disentangledIndexShape = `  %qs = Shape(%q)
  %b = Slice(%qs, %zero, %one)
  %ts = Shape(%c2p_idx)
  %idx_shape = Concat(%b, %two, %ts) {axis=0}
`

func withIndexShape(src string) string {
	src = strings.Replace(src, "  %shape_q = Shape(%qh)\n", disentangledIndexShape, 1)
	return strings.Replace(src, "  init %four: i64[1] = [4]\n", "  init %zero: i64[1] = [0]\n  init %one: i64[1] = [1]\n  init %two: i64[1] = [2]\n", 1)
}

// TestFuseDisentangledBias: the sum of c2p and p2c (either order) becomes
// one sqc.DisentangledBias; terms of different divisors become one each;
// a lone term too. The interpreter's result stays within float32 rounding
// of the unfused graph's (the dot products' order differs from MatMul's).
func TestFuseDisentangledBias(t *testing.T) {
	for name, c := range map[string]struct {
		divisor, sum string
		want         map[string]int
	}{
		"c2p+p2c":       {"3.4641016", "  %y = Add(%c2p, %p2c)", map[string]int{"sqc.DisentangledBias": 1}},
		"p2c+c2p":       {"3.4641016", "  %y = Add(%p2c, %c2p)", map[string]int{"sqc.DisentangledBias": 1}},
		"other divisor": {"2.5", "  %y = Add(%c2p, %p2c)", map[string]int{"sqc.DisentangledBias": 2, "Add": 1}},
		"c2p alone":     {"3.4641016", "  %y = Identity(%c2p)", map[string]int{"sqc.DisentangledBias": 1}},
	} {
		t.Run(name, func(t *testing.T) {
			g := parseGraph(t, withIndexShape(disentangledGraph(c.divisor, c.sum)))
			in := disentangledInputs(g)
			after := applyPass(t, g, FuseDisentangledBias, EliminateDeadNodes)
			wantOps(t, after, c.want)
			wantEquivalent(t, g, after, in, 1e-5)
		})
	}
}

// TestFuseDisentangledBiasRejectsNearMisses: c2p with embeddings that
// are not a constant, or gathered along another axis, is no term; p2c
// beside it still fuses alone, and the sum stays an Add.
func TestFuseDisentangledBiasRejectsNearMisses(t *testing.T) {
	base := withIndexShape(disentangledGraph("3.4641016", "  %y = Add(%c2p, %p2c)"))
	for name, edit := range map[string][2]string{
		"embeddings-input": {"  init %pk: f32[2, 4, 6] = splat(0)\n", "  input %pk: f32[2, 4, 6]\n"},
		"other-axis":       {"%c2p_g = GatherElements(%c2p_att, %c2p_index) {axis=3}", "%c2p_g = GatherElements(%c2p_att, %c2p_index) {axis=2}"},
	} {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(base, edit[0], edit[1], 1)
			if src == base {
				t.Fatalf("edit %q not applied", edit[0])
			}
			g := parseGraph(t, src)
			runPasses(t, g, FuseDisentangledBias)
			var fused []*compiler.Node
			for _, n := range g.Nodes {
				if n.Op == opDisentangledBias {
					fused = append(fused, n)
				}
			}
			if len(fused) != 1 || fused[0].Inputs[0] != "" || OpHistogram(g)["Add"] != 1 {
				t.Errorf("want p2c fused alone and the Add kept:\n%s", g.Text())
			}
		})
	}
}

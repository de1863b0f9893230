package exec

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// encoderLayer is a quantised BERT-style model with one layer: embeddings
// with position ids from the Shape/Slice plumbing (OpSteps),
// LayerNorms, Q/K/V/output projections, padding-masked attention, the FFN
// and a classifier head (first-token Gather, f32 Linear, Tanh, Linear).
var encoderLayer = `
graph "layer" opset 17 {
  input %ids: i64[batch, seq]
  input %mask: i64[batch, seq]

  init %emb: f32[30, 32] = elided("sha256:00000000000000c0")
  init %posemb: f32[16, 32] = elided("sha256:00000000000000c1")
  init %posbuf: i64[1, 16] = arange(0, 1)
  init %c0: i64[1] = [0]
  init %c1: i64[1] = [1]
  init %i0: i64[] = [0]
  init %i1: i64[] = [1]
  init %g0: f32[32] = splat(1)
  init %b0: f32[32] = splat(0)
  init %g1: f32[32] = splat(0.9)
  init %b1: f32[32] = splat(0.1)
  init %g2: f32[32] = splat(1.1)
  init %wq: i8[32, 32] = elided("sha256:00000000000000c2")
  init %wk: i8[32, 32] = elided("sha256:00000000000000c3")
  init %wv: i8[32, 32] = elided("sha256:00000000000000c4")
  init %wo: i8[32, 32] = elided("sha256:00000000000000c5")
  init %w1: i8[32, 96] = elided("sha256:00000000000000c6")
  init %w2: i8[96, 32] = elided("sha256:00000000000000c7")
  init %sq: f32[32] = splat(0.0004)
  init %sk: f32[32] = splat(0.0005)
  init %sv: f32[32] = splat(0.0003)
  init %so: f32[32] = splat(0.0002)
  init %s1: f32[96] = splat(0.0003)
  init %s2: f32[32] = splat(0.0001)
  init %bq: f32[32] = elided("sha256:00000000000000c8")
  init %bf1: f32[96] = elided("sha256:00000000000000c9")
  init %wp: f32[32, 32] = elided("sha256:00000000000000ca")
  init %bp: f32[32] = elided("sha256:00000000000000cb")
  init %wc: f32[32, 2] = [` + f32List(64, -1, 1) + `]
  init %bc: f32[2] = [0.25, -0.25]

  %shape = Shape(%ids)
  %seqlen = Gather(%shape, %i1) {axis=0}
  %seqlen1 = Unsqueeze(%seqlen, %c0)
  %posids = Slice(%posbuf, %c0, %seqlen1, %c1, %c1)
  %we = Gather(%emb, %ids)
  %pe = Gather(%posemb, %posids)
  %e = Add(%we, %pe)
  %h0 = LayerNormalization(%e, %g0, %b0) {axis=-1, epsilon=1e-12}
  %q = sqc.QLinear(%h0, %wq, %sq, %bq) {act_scale=0.02, act_zero_point=128}
  %k = sqc.QLinear(%h0, %wk, %sk) {act_scale=0.02, act_zero_point=128}
  %v = sqc.QLinear(%h0, %wv, %sv) {act_scale=0.02, act_zero_point=128}
  %am = sqc.AttentionMask(%mask)
  %att = sqc.Attention(%q, %k, %v, %am) {heads=4, scale=0.35355339}
  %o = sqc.QLinear(%att, %wo, %so) {act_scale=0.01, act_zero_point=128}
  %r1 = Add(%o, %h0)
  %h1 = LayerNormalization(%r1, %g1, %b1) {axis=-1, epsilon=1e-12}
  %f1 = sqc.QLinear(%h1, %w1, %s1, %bf1) {act="gelu", act_scale=0.025, act_zero_point=128}
  %f2 = sqc.QLinear(%f1, %w2, %s2) {act_scale=0.01, act_zero_point=20}
  %r2 = Add(%h1, %f2)
  %h2 = LayerNormalization(%r2, %g2) {axis=-1, epsilon=1e-12}
  %cls = Gather(%h2, %i0) {axis=1}
  %pool = sqc.Linear(%cls, %wp, %bp)
  %pt = Tanh(%pool)
  %logits = sqc.Linear(%pt, %wc, %bc)

  output %logits: f32[batch, 2]
  output %h2: f32[batch, seq, 32]
}
`

// layerInputs is a right-padded batch: sequence b has lens[b] tokens.
func layerInputs(seq int, lens ...int) map[string]*compiler.Tensor {
	batch := int64(len(lens))
	ids := compiler.NewTensor(compiler.Int64, batch, int64(seq))
	mask := compiler.NewTensor(compiler.Int64, batch, int64(seq))
	for b, n := range lens {
		for j := range n {
			ids.I64[b*seq+j] = int64((b*7+j*3)%29 + 1)
			mask.I64[b*seq+j] = 1
		}
	}
	return map[string]*compiler.Tensor{"ids": ids, "mask": mask}
}

// TestEncoderLayer compares a whole small model with the interpreter.
// Attention, Tanh and the interpreter's float64 transcendental functions
// differ in the last bits, which can move an activation across a
// quantisation step, so the comparison has a tolerance; across GEMM
// variants and thread counts the bits must be identical.
func TestEncoderLayer(t *testing.T) {
	g := parse(t, encoderLayer)
	cases := []map[string]*compiler.Tensor{layerInputs(7, 7, 5, 2), layerInputs(12, 3, 12), layerInputs(1, 1)}
	wants := make([]map[string]*compiler.Tensor, len(cases))
	for i, in := range cases {
		wants[i] = interpRun(t, g, in)
	}
	var first []map[string]*compiler.Tensor
	for _, v := range variants() {
		for _, threads := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/%d", v.ISA, threads), func(t *testing.T) {
				p := compile(t, g, &v, threads)
				var outs []map[string]*compiler.Tensor
				for i, in := range cases {
					got := run(t, p, in)
					d, scale := maxDiff(t, got, wants[i])
					t.Logf("case %d: max |exec - interp| = %.3g (outputs up to %.3g)", i, d, scale)
					if d > 0.005*scale {
						t.Errorf("case %d: exec differs from the interpreter by %.3g (outputs up to %.3g)", i, d, scale)
					}
					outs = append(outs, got)
				}
				if first == nil {
					first = outs
					return
				}
				for i := range outs {
					sameBits(t, fmt.Sprintf("case %d vs the first variant", i), outs[i], first[i])
				}
			})
		}
	}
}

// TestEncoderLayerLowering checks which steps the model becomes: only the
// position-id plumbing runs on the generic kernels (runtime/ops).
func TestEncoderLayerLowering(t *testing.T) {
	p := compile(t, parse(t, encoderLayer), nil, 1)
	listing := p.String()
	count := map[string]int{}
	for _, s := range p.Steps() {
		count[s.Call()]++
	}
	want := map[string]int{
		"ops.Shape": 1, "ops.Gather": 1, "ops.Unsqueeze": 1, "ops.Slice": 1,
		"nn.Gather": 3, "nn.AddParallel": 1, "nn.LayerNormU8": 2, "nn.LayerNorm": 1,
		"qgemm.GEMM": 6, "nn.AttentionMask": 1, "nn.Attention": 1, "nn.QuantizeU8Parallel": 1,
		"nn.LinearF32": 2, "nn.TanhSliceParallel": 1,
	}
	for call, n := range want {
		if count[call] != n {
			t.Errorf("%d %s steps, want %d", count[call], call, n)
		}
	}
	for call := range count {
		if _, ok := want[call]; !ok {
			t.Errorf("unexpected %s step", call)
		}
	}
	if t.Failed() {
		t.Log(listing)
	}
	for _, frag := range []string{"nn.Attention(%q, %k, %v, %am; heads=4", "residual=%h0", "out=u8 Kp=128", "ops.Slice"} {
		if !strings.Contains(listing, frag) {
			t.Errorf("listing lacks %q:\n%s", frag, listing)
		}
	}
}

// TestUnsupportedInsideEncoder: an op without a kernel between two
// LayerNorms of per-token rows is refused at Compile, naming the node; the
// same op outside the encoder falls back to the interpreter, and so does
// one before a LayerNorm of pooled rows ([batch, hidden], ModernBERT's
// classifier head), which ends no encoder.
func TestUnsupportedInsideEncoder(t *testing.T) {
	src := `
graph "soft" opset 17 {
  input %x: f32[batch, seq, 8]
  init %g: f32[8] = splat(1)
  %s0 = Softmax(%x) {axis=-1}
  %a = LayerNormalization(%s0, %g) {axis=-1}
  %s = Softmax(%a) {axis=-1} @inside
  %b = LayerNormalization(%s, %g) {axis=-1}
  %c = Softmax(%b) {axis=-1}
  output %c: f32[batch, seq, 8]
}`
	g := parse(t, src)
	_, err := Compile(g, Options{})
	if !errors.Is(err, compiler.ErrUnsupportedOp) || !strings.Contains(err.Error(), `"inside"`) {
		t.Fatalf("Compile: err = %v, want ErrUnsupportedOp naming node \"inside\"", err)
	}
	g.Nodes = append(g.Nodes[:2], g.Nodes[3:]...) // drop the inner Softmax
	g.Nodes[2].Inputs[0] = "a"
	delete(g.Values, "s")
	p := compile(t, parse(t, g.Text()), nil, 1)
	in := map[string]*compiler.Tensor{"x": randF32(3, -2, 2, 3, 5, 8)}
	sameBits(t, "Softmax fallback", run(t, p, in), interpRun(t, g, in))

	pooled := parse(t, `
graph "pooled" opset 17 {
  input %x: f32[batch, seq, 8]
  init %g: f32[8] = splat(1)
  init %axes: i64[1] = [1]
  %a = LayerNormalization(%x, %g) {axis=-1}
  %s = Softmax(%a) {axis=-1}
  %m = ReduceSum(%s, %axes) {keepdims=0}
  %b = LayerNormalization(%m, %g) {axis=-1}
  output %b: f32[batch, 8]
}`)
	p = compile(t, pooled, nil, 1)
	sameBits(t, "generic ops before a pooled LayerNorm", run(t, p, in), interpRun(t, pooled, in))
}

// TestCompileRejectsBadQLinear: weights must be constants of the right
// types.
func TestCompileRejectsBadQLinear(t *testing.T) {
	src := `
graph "bad" opset 17 {
  input %x: f32[2, 8]
  input %w: i8[8, 4]
  init %s: f32[4] = splat(0.1)
  %y = sqc.QLinear(%x, %w, %s) {act_scale=0.1, act_zero_point=0}
  output %y: f32[2, 4]
}`
	_, err := Compile(parse(t, src), Options{})
	if !errors.Is(err, compiler.ErrBadInput) || !strings.Contains(err.Error(), "initializers") {
		t.Fatalf("err = %v, want a bad-input error about initializers", err)
	}
}

package exec

import (
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// TestRunAllocations reports what one Run allocates in steady state: the
// output map and tensors it returns, nothing else.
func TestRunAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	p := compile(t, parse(t, qchain), nil, 2)
	in := qchainInputs(2, 5, 3, 0)
	run(t, p, in)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := p.Run(in); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations per Run (5 outputs, 12 steps)", allocs)
	if allocs > 5*3+2 {
		t.Errorf("%.0f allocations per Run: more than the 5 outputs (tensor, shape, data) and the map", allocs)
	}
}

// allocModel is a small encoder whose every step has a runtime kernel:
// embeddings, LayerNorms writing f32 and u8, static and dynamic QLinears,
// masked attention, fused GELU and residuals, a separate GELU and Add, the
// first-token Gather, f32 Linears and Tanh.
var allocModel = `
graph "alloc" opset 17 {
  input %ids: i64[batch, seq]
  input %types: i64[batch, seq]
  input %mask: i64[batch, seq]

  init %word: f32[30, 32] = elided("sha256:00000000000000d0")
  init %pos: f32[16, 32] = elided("sha256:00000000000000d1")
  init %typ: f32[2, 32] = elided("sha256:00000000000000d2")
  init %i0: i64[] = [0]
  init %g0: f32[32] = splat(1)
  init %b0: f32[32] = splat(0)
  init %g1: f32[32] = splat(0.9)
  init %b1: f32[32] = splat(0.1)
  init %g2: f32[32] = splat(1.1)
  init %wq: i8[32, 32] = elided("sha256:00000000000000d3")
  init %wk: i8[32, 32] = elided("sha256:00000000000000d4")
  init %wv: i8[32, 32] = elided("sha256:00000000000000d5")
  init %wo: i8[32, 32] = elided("sha256:00000000000000d6")
  init %w1: i8[32, 96] = elided("sha256:00000000000000d7")
  init %w2: i8[96, 32] = elided("sha256:00000000000000d8")
  init %sq: f32[32] = splat(0.0004)
  init %sk: f32[32] = splat(0.0005)
  init %sv: f32[32] = splat(0.0003)
  init %so: f32[32] = splat(0.0002)
  init %s1: f32[96] = splat(0.0003)
  init %s2: f32[32] = splat(0.0001)
  init %bq: f32[32] = elided("sha256:00000000000000d9")
  init %bf1: f32[96] = elided("sha256:00000000000000da")
  init %wp: f32[32, 32] = elided("sha256:00000000000000db")
  init %bp: f32[32] = elided("sha256:00000000000000dc")
  init %wc: f32[32, 2] = elided("sha256:00000000000000dd")
  init %bc: f32[2] = [0.25, -0.25]

  %e = sqc.Embeddings(%ids, %word, %pos, %types, %typ)
  %h0 = LayerNormalization(%e, %g0, %b0) {axis=-1, epsilon=1e-12}
  %q = sqc.QLinear(%h0, %wq, %sq, %bq) {act_scale=0.02, act_zero_point=128}
  %k = sqc.QLinear(%h0, %wk, %sk) {act_mode="dynamic"}
  %v = sqc.QLinear(%h0, %wv, %sv) {act_scale=0.02, act_zero_point=128}
  %am = sqc.AttentionMask(%mask)
  %att = sqc.Attention(%q, %k, %v, %am) {heads=4, scale=0.35355339}
  %o = sqc.QLinear(%att, %wo, %so) {act_scale=0.01, act_zero_point=128}
  %r1 = Add(%o, %h0)
  %h1 = LayerNormalization(%r1, %g1, %b1) {axis=-1, epsilon=1e-12}
  %f1 = sqc.QLinear(%h1, %w1, %s1, %bf1) {act="gelu", act_scale=0.025, act_zero_point=128}
  %f2 = sqc.QLinear(%f1, %w2, %s2) {act_mode="dynamic", act="gelu"}
  %r2 = Add(%h1, %f2)
  %h2 = LayerNormalization(%r2, %g2) {axis=-1, epsilon=1e-12}
  %gl = sqc.Gelu(%h2)
  %sum = Add(%gl, %e)
  %cls = Gather(%sum, %i0) {axis=1}
  %pool = sqc.Linear(%cls, %wp, %bp)
  %pt = Tanh(%pool)
  %logits = sqc.Linear(%pt, %wc, %bc)

  output %logits: f32[batch, 2]
  output %h2: f32[batch, seq, 32]
}
`

func allocInputs(batch, seq int64) map[string]*compiler.Tensor {
	ids := compiler.NewTensor(compiler.Int64, batch, seq)
	types := compiler.NewTensor(compiler.Int64, batch, seq)
	mask := compiler.NewTensor(compiler.Int64, batch, seq)
	for i := range ids.I64 {
		ids.I64[i] = int64(i*7+3) % 30
		types.I64[i] = int64(i/3) % 2
		if i%int(seq) < int(seq)-int(int64(i)/seq%3) {
			mask.I64[i] = 1 // the last 0-2 tokens of each sequence are padding
		}
	}
	return map[string]*compiler.Tensor{"ids": ids, "types": types, "mask": mask}
}

// TestRunIntoAllocatesNothing requires zero heap allocations per RunInto
// in steady state on a model with every kind of native step, and the
// bits of Run, also after the outputs' shapes change.
func TestRunIntoAllocatesNothing(t *testing.T) {
	p := compile(t, parse(t, allocModel), nil, 2)
	for _, s := range p.Steps() {
		if _, ok := s.(*OpStep); ok {
			t.Fatalf("step %s falls back to the interpreter: the model must be all native\n%s", s.Call(), p)
		}
	}
	out := map[string]*compiler.Tensor{}
	for _, shape := range [][2]int64{{3, 7}, {2, 12}, {4, 16}} {
		in := allocInputs(shape[0], shape[1])
		want := run(t, p, in)
		if err := p.RunInto(in, out); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "RunInto", out, want)
	}
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	in := allocInputs(4, 16)
	allocs := testing.AllocsPerRun(20, func() {
		if err := p.RunInto(in, out); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%g allocations per RunInto in steady state, want 0\n%s", allocs, p)
	}
}

package exec

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// qchain exercises every QLinear form and fusion: LayerNorm writing f32
// and u8 at once, act gelu, a GEMM writing the next QLinear's u8 input,
// an Add fused as residual, dynamic quantisation, the residual input,
// two QLinears sharing one quantised input, a rank-2 QLinear and a
// QLinear followed by a separate sqc.Gelu.
var qchain = `
graph "qchain" opset 17 {
  input %x0: f32[batch, seq, 40]
  input %flat: f32[rows, 40]

  init %g: f32[40] = elided("sha256:00000000000000b0")
  init %beta: f32[40] = elided("sha256:00000000000000b1")
  init %w1: i8[40, 70] = elided("sha256:00000000000000b2")
  init %s1: f32[70] = splat(0.002)
  init %b1: f32[70] = elided("sha256:00000000000000b3")
  init %w2: i8[70, 40] = elided("sha256:00000000000000b4")
  init %s2: f32[40] = [` + f32List(40, 0.001, 0.004) + `]
  init %w3: i8[40, 24] = [` + i8List(40*24, 7) + `]
  init %s3: f32[24] = splat(0.003)
  init %b3: f32[24] = splat(0.5)
  init %w4: i8[40, 40] = elided("sha256:00000000000000b6")
  init %s4: f32[40] = [` + f32List(40, 0.0002, 0.0009) + `]

  %x = LayerNormalization(%x0, %g, %beta) {axis=-1, epsilon=1e-05}
  %h1 = sqc.QLinear(%x, %w1, %s1, %b1) {act="gelu", act_scale=0.02, act_zero_point=128}
  %h2 = sqc.QLinear(%h1, %w2, %s2) {act_scale=0.01, act_zero_point=30}
  %r = Add(%x, %h2)
  %h3 = sqc.QLinear(%r, %w3, %s3, %b3) {act_mode="dynamic"}
  %h4 = sqc.QLinear(%r, %w4, %s4, _, %r) {act_scale=0.03, act_zero_point=100}
  %h5 = sqc.QLinear(%r, %w3, %s3) {act_scale=0.03, act_zero_point=100}
  %h6 = sqc.QLinear(%flat, %w3, %s3, %b3) {act_mode="dynamic", act="gelu"}
  %h7 = sqc.QLinear(%h4, %w3, %s3) {act_scale=0.04, act_zero_point=128}
  %h8 = sqc.Gelu(%h7)

  output %h3: f32[batch, seq, 24]
  output %h4: f32[batch, seq, 40]
  output %h5: f32[batch, seq, 24]
  output %h6: f32[rows, 24]
  output %h8: f32[batch, seq, 24]
}
`

// f32List is n values spread over [lo, hi).
func f32List(n int, lo, hi float64) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(float32(lo + (hi-lo)*float64((i*17)%n)/float64(n)))
	}
	return strings.Join(parts, ", ")
}

// i8List is n small weights in [-127, 127], deterministic.
func i8List(n int, seed int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint((i*seed*37+11)%255 - 127)
	}
	return strings.Join(parts, ", ")
}

func qchainInputs(batch, seq, rows int64, seed uint64) map[string]*compiler.Tensor {
	return map[string]*compiler.Tensor{
		"x0":   randF32(seed, -2, 2, batch, seq, 40),
		"flat": randF32(seed+1, -3, 1, rows, 40),
	}
}

// TestQLinearChainMatchesInterp runs the chain through every GEMM variant
// and requires the interpreter's sqc.QLinear reference bits, for two
// different batch shapes in a row (buffers are reused and regrown).
func TestQLinearChainMatchesInterp(t *testing.T) {
	g := parse(t, qchain)
	shapes := [][3]int64{{2, 5, 3}, {3, 9, 1}, {1, 2, 4}, {0, 3, 0}}
	wants := make([]map[string]*compiler.Tensor, len(shapes))
	for i, s := range shapes {
		wants[i] = interpRun(t, g, qchainInputs(s[0], s[1], s[2], uint64(i)))
	}
	for _, v := range variants() {
		t.Run(v.ISA.String(), func(t *testing.T) {
			p := compile(t, g, &v, 2)
			for i, s := range shapes {
				got := run(t, p, qchainInputs(s[0], s[1], s[2], uint64(i)))
				// sqc.Gelu in the interpreter is float64 erf; exec runs the
				// epilogue's float32 GELU, so h8 is compared apart.
				h8, h8want := got["h8"], wants[i]["h8"]
				delete(got, "h8")
				want := withoutKey(wants[i], "h8")
				if interpBitwise {
					sameBits(t, fmt.Sprintf("shape %v", s), got, want)
				} else if d, scale := maxDiff(t, got, want); d > 0.05*scale {
					t.Fatalf("shape %v: differs from the interpreter by %g (scale %g)", s, d, scale)
				}
				for j := range h8want.F32 {
					if d := math.Abs(float64(h8.F32[j] - h8want.F32[j])); d > 1e-5*(1+math.Abs(float64(h8want.F32[j]))) {
						t.Fatalf("h8[%d] = %g, interpreter %g", j, h8.F32[j], h8want.F32[j])
					}
				}
			}
		})
	}
}

func withoutKey(m map[string]*compiler.Tensor, key string) map[string]*compiler.Tensor {
	out := map[string]*compiler.Tensor{}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// TestQLinearChainFusions checks the lowering made the fusions the chain
// is built to trigger.
func TestQLinearChainFusions(t *testing.T) {
	// Unshared buffers: the check below reads every GEMM input after the run.
	p := unshared(compile(t, parse(t, qchain), nil, 1))
	listing := p.String()
	count := map[string]int{}
	var gemms []*GEMMStep
	for _, s := range p.Steps() {
		count[s.Call()]++
		if g, ok := s.(*GEMMStep); ok {
			gemms = append(gemms, g)
		}
	}
	want := map[string]int{
		"nn.LayerNormU8":            1, // x: f32 for the residual, u8 for h1
		"qgemm.GEMM":                7,
		"nn.QuantizeU8Parallel":     2, // r for h4 and h5 (shared), h4 for h7
		"nn.QuantizeRowsU8Parallel": 2, // r for h3, flat for h6
	}
	for call, n := range want {
		if count[call] != n {
			t.Errorf("%d %s steps, want %d\n%s", count[call], call, n, listing)
		}
	}
	if len(count) != len(want) {
		t.Errorf("step kinds %v, want %v (the Add and the Gelu fused)\n%s", count, want, listing)
	}
	byNode := map[string]*GEMMStep{}
	for _, g := range gemms {
		byNode[g.Weight+"/"+p.Slots()[g.Out].Name] = g
	}
	if g := byNode["w1/h1#u8"]; g == nil || g.Linear.OutKp != 128 || g.Linear.Act == 0 {
		t.Errorf("h1 does not write h2's u8 input with GELU: %+v\n%s", g, listing)
	}
	if g := byNode["w2/r"]; g == nil || g.Residual == NoSlot || p.Slots()[g.Residual].Name != "x" {
		t.Errorf("Add(x, h2) not fused into h2's epilogue\n%s", listing)
	}
	if g := byNode["w3/h8"]; g == nil || g.Linear.Act == 0 {
		t.Errorf("sqc.Gelu after h7 not fused\n%s", listing)
	}
	if g := byNode["w3/h3"]; g == nil || g.RowScale == NoSlot {
		t.Errorf("h3 is not dynamic\n%s", listing)
	}

	// The chain tests arithmetic, not clamping: no quantised buffer may be
	// mostly 0 or 255.
	run(t, p, qchainInputs(2, 5, 3, 0))
	for _, g := range gemms {
		a := p.bufs[g.A].U8
		clamped, n := 0, 0
		for i := 0; i < len(a); i += g.Linear.B.Kp {
			for _, q := range a[i : i+g.Linear.B.K] {
				if q == 0 || q == 255 {
					clamped++
				}
				n++
			}
		}
		if clamped*10 > n {
			t.Errorf("%s: %d of %d values clamped to 0 or 255", p.Slots()[g.A].Name, clamped, n)
		}
	}
}

// TestThreadsDoNotChangeBits compares 1, 2 and 3 workers.
func TestThreadsDoNotChangeBits(t *testing.T) {
	g := parse(t, qchain)
	in := qchainInputs(4, 11, 5, 9)
	want := run(t, compile(t, g, nil, 1), in)
	for _, threads := range []int{2, 3} {
		sameBits(t, fmt.Sprintf("%d threads", threads), run(t, compile(t, g, nil, threads), in), want)
	}
}

// TestISAOption: Options.ISA caps the kernel family; a typo is an error.
func TestISAOption(t *testing.T) {
	g := explicitQuant(t, parse(t, qchain))
	p, err := Compile(g, Options{ISA: "go", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Engine().ISA() != qgemm.ISAGo {
		t.Errorf("ISA \"go\" runs %v", p.Engine().ISA())
	}
	in := qchainInputs(2, 3, 2, 4)
	sameBits(t, "ISA go vs default", run(t, p, in), run(t, compile(t, g, nil, 1), in))
	if _, err := Compile(g, Options{ISA: "sse9"}); !errors.Is(err, qgemm.ErrUnknownISA) {
		t.Errorf("ISA sse9: err = %v, want ErrUnknownISA", err)
	}
}

// TestRunChecksInputs covers the caller's mistakes.
func TestRunChecksInputs(t *testing.T) {
	p := compile(t, parse(t, qchain), nil, 1)
	good := qchainInputs(2, 3, 1, 0)
	for name, in := range map[string]map[string]*compiler.Tensor{
		"missing":   {"x0": good["x0"]},
		"extra":     {"x0": good["x0"], "flat": good["flat"], "y": good["flat"]},
		"dtype":     {"x0": compiler.NewTensor(compiler.Int64, 2, 3, 40), "flat": good["flat"]},
		"rank":      {"x0": randF32(1, 0, 1, 6, 40), "flat": good["flat"]},
		"last dim":  {"x0": randF32(1, 0, 1, 2, 3, 41), "flat": good["flat"]},
		"malformed": {"x0": {DType: compiler.Float32, Shape: []int64{2, 3, 40}}, "flat": good["flat"]},
	} {
		_, err := p.Run(in)
		if err == nil || !errors.Is(err, compiler.ErrInvalidRequest) || !errors.Is(err, compiler.ErrBadInput) {
			t.Errorf("%s: err = %v, want an invalid-request error", name, err)
		}
	}
	if _, err := p.Run(good); err != nil {
		t.Errorf("good input after bad ones: %v", err)
	}
}

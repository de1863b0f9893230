package exec

import (
	"math"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// TestActivationSteps lowers every standalone activation the table has,
// sqc.Gelu in both forms among them, and checks each step's nn function
// and its bits against the epilogue's scalar function.
func TestActivationSteps(t *testing.T) {
	g := parse(t, `graph "acts" opset 17 {
  input %x: f32[n]
  %erf = sqc.Gelu(%x)
  %tanh = sqc.Gelu(%x) {approximate="tanh"}
  %none = sqc.Gelu(%x) {approximate="none"}
  %relu = Relu(%x)
  output %erf: f32[n]
  output %tanh: f32[n]
  output %none: f32[n]
  output %relu: f32[n]
}`)
	p := compile(t, g, nil, 2)
	byOutput := map[string]string{}
	for _, s := range p.Steps() {
		if a, ok := s.(*ActivationStep); ok {
			byOutput[p.Slots()[a.Out].Name] = s.Call()
		}
	}
	for out, want := range map[string]string{"erf": "nn.GeluParallel", "tanh": "nn.GeluTanhParallel", "none": "nn.GeluParallel", "relu": "nn.ReluParallel"} {
		if byOutput[out] != want {
			t.Errorf("%s lowers to %q, want %q\n%s", out, byOutput[out], want, p)
		}
	}
	xs := make([]float32, 1000)
	for i := range xs {
		xs[i] = float32(i-500) / 50
	}
	got := run(t, p, map[string]*compiler.Tensor{"x": {DType: compiler.Float32, Shape: []int64{int64(len(xs))}, F32: xs}})
	for out, f := range map[string]func(float32) float32{"erf": qgemm.ActGelu.Apply, "tanh": qgemm.ActGeluTanh.Apply, "none": qgemm.ActGelu.Apply, "relu": qgemm.Relu} {
		for i, x := range xs {
			if w := f(x); math.Float32bits(got[out].F32[i]) != math.Float32bits(w) {
				t.Fatalf("%s(%g) = %g, the epilogue's function gives %g", out, x, got[out].F32[i], w)
			}
		}
	}
}

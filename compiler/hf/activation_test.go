package hf

import (
	"math"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/blocks"
	"github.com/sqc-dev/sqc/compiler/interp"
)

// TestActivations runs each FFN activation subgraph through the interpreter
// and compares it with the `transformers` formula in float64.
func TestActivations(t *testing.T) {
	formulas := map[string]func(x float64) float64{
		ActGELU: func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) },
		ActGELUNew: func(x float64) float64 {
			return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		},
		ActGELUTanh: func(x float64) float64 {
			return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		},
		ActRELU: func(x float64) float64 { return math.Max(x, 0) },
	}
	const n = 241
	x := compiler.NewTensor(compiler.Float32, n)
	for i := range x.F32 {
		x.F32[i] = float32(-6 + 12*float64(i)/(n-1))
	}
	for act, f := range formulas {
		t.Run(act, func(t *testing.T) {
			g := compiler.NewGraph(act)
			g.Opset = opset
			g.Inputs = []*compiler.Value{{Name: "x", DType: compiler.Float32, Shape: compiler.StaticShape(n)}}
			b := &builder{Builder: blocks.Builder{G: g}, cfg: Config{HiddenAct: act}}
			y := b.Rename(b.activation("x", "act"), "y")
			g.Outputs = []*compiler.Value{{Name: y, DType: compiler.Float32, Shape: compiler.StaticShape(n)}}
			it, err := interp.New(g)
			if err != nil {
				t.Fatal(err)
			}
			out, err := it.Run(map[string]*compiler.Tensor{"x": x}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var worst float64
			for i, v := range out["y"].F32 {
				worst = max(worst, math.Abs(float64(v)-f(float64(x.F32[i]))))
			}
			// float32 rounding of values up to 6 in magnitude.
			if !(worst <= 2e-6) {
				t.Errorf("max deviation from the formula %.3g", worst)
			}
		})
	}
}

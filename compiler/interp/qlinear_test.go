package interp

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// qlinearRef is sqc.QLinear written from the op's definition with float64
// arithmetic after the integer product: it agrees with the kernel up to
// the float32 roundings the definition makes.
func qlinearRef(x, w, ws, bias, res []float32, rows, k, n int, dynamic, gelu bool, s float32, zp int32) []float64 {
	y := make([]float64, rows*n)
	for r := range rows {
		row := x[r*k : (r+1)*k]
		scale, z := s, zp
		if dynamic {
			lo, hi := float32(0), float32(0)
			for _, v := range row {
				lo, hi = min(lo, v), max(hi, v)
			}
			scale = (hi - lo) / 255
			if scale == 0 {
				scale = 1
			}
			z = int32(min(max(math.RoundToEven(float64(-lo/scale)), 0), 255))
		}
		inv := 1 / scale
		for j := range n {
			var acc int64
			for p, v := range row {
				q := math.RoundToEven(float64(v*inv)) + float64(z)
				acc += int64(min(max(q, 0), 255)-float64(z)) * int64(int8(w[p*n+j]))
			}
			o := float64(acc) * float64(scale) * float64(ws[j])
			if bias != nil {
				o += float64(bias[j])
			}
			if gelu {
				o = 0.5 * o * math.Erfc(-o/math.Sqrt2)
			}
			if res != nil {
				o += float64(res[r*n+j])
			}
			y[r*n+j] = o
		}
	}
	return y
}

func TestQLinearReference(t *testing.T) {
	const rows, k, n = 6, 37, 19
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, rows*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range k {
		x[2*k+i] = float32(math.Abs(float64(x[2*k+i]))) // a row without negatives
	}
	wf := make([]float32, k*n) // i8 values held as f32 for the reference
	wi := make([]int8, k*n)
	for i := range wi {
		wi[i] = int8(rng.IntN(255) - 127)
		wf[i] = float32(wi[i])
	}
	ws, bias := make([]float32, n), make([]float32, n)
	for j := range n {
		ws[j] = 0.001 + 0.002*rng.Float32()
		bias[j] = float32(rng.NormFloat64())
	}
	res := make([]float32, rows*n)
	for i := range res {
		res[i] = float32(rng.NormFloat64())
	}
	for _, c := range []struct {
		name          string
		dynamic, gelu bool
		bias, res     bool
	}{
		{"static", false, false, false, false},
		{"static bias gelu residual", false, true, true, true},
		{"dynamic", true, false, true, false},
		{"dynamic gelu residual", true, true, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			const s, zp = 0.025, 120
			at := attrs{}
			if c.dynamic {
				at["act_mode"] = aStr("dynamic")
			} else {
				at["act_scale"], at["act_zero_point"] = aFloat(s), aInt(zp)
			}
			if c.gelu {
				at["act"] = aStr("gelu")
			}
			ins := []*compiler.Tensor{f32(sh(2, 3, k), x...), ops.FromSlice(sh(k, n), wi), f32(sh(n), ws...), nil, nil}
			var b, r []float32
			if c.bias {
				ins[3], b = f32(sh(n), bias...), bias
			}
			if c.res {
				ins[4], r = f32(sh(2, 3, n), res...), res
			}
			g, feed := nodeGraph("sqc.QLinear", 17, at, 1, ins...)
			out, err := Run(g, feed, &Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			y := out["y0"]
			if y.DType != compiler.Float32 || len(y.Shape) != 3 || y.Shape[2] != n {
				t.Fatalf("output %s%v", y.DType, y.Shape)
			}
			want := qlinearRef(x, wf, ws, b, r, rows, k, n, c.dynamic, c.gelu, s, zp)
			for i, v := range want {
				if d := math.Abs(float64(y.F32[i]) - v); d > 2e-6*(1+math.Abs(v)) {
					t.Fatalf("y[%d] = %g, reference %g", i, y.F32[i], v)
				}
			}
		})
	}
}

func TestQLinearBadInput(t *testing.T) {
	x := f32(sh(2, 4), make([]float32, 8)...)
	w := ops.FromSlice(sh(4, 3), make([]int8, 12))
	ws := f32(sh(3), 1, 1, 1)
	for _, c := range []struct {
		name string
		at   attrs
		ins  []*compiler.Tensor
		want error
	}{
		{"no scale", attrs{}, []*compiler.Tensor{x, w, ws}, compiler.ErrMalformed},
		{"f32 weights", attrs{"act_scale": aFloat(1)}, []*compiler.Tensor{x, f32(sh(4, 3), make([]float32, 12)...), ws}, compiler.ErrDTypeMismatch},
		{"K mismatch", attrs{"act_scale": aFloat(1)}, []*compiler.Tensor{f32(sh(2, 5), make([]float32, 10)...), w, ws}, compiler.ErrShapeMismatch},
		{"scale length", attrs{"act_scale": aFloat(1)}, []*compiler.Tensor{x, w, f32(sh(2), 1, 1)}, compiler.ErrShapeMismatch},
		{"residual shape", attrs{"act_scale": aFloat(1)}, []*compiler.Tensor{x, w, ws, nil, f32(sh(3, 3), make([]float32, 9)...)}, compiler.ErrShapeMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, feed := nodeGraph("sqc.QLinear", 17, c.at, 1, c.ins...)
			if _, err := Run(g, feed, nil); !errors.Is(err, c.want) || !errors.Is(err, compiler.ErrBadInput) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}

package passes

import (
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// integerMatMulGraph is ONNX Runtime's dynamic quantisation of y = x·W
// (x [batch, 3], W [3, 2] stored s8 with one scale per column) and of a
// Gather of a u8 table with one scale. quantizeX defines %x_q, %x_scale
// and %x_zero_point, scalesMul %scales from %x_scale and %w_scale.
func integerMatMulGraph(t *testing.T, quantizeX, scalesMul string) *compiler.Graph {
	t.Helper()
	return parseGraph(t, `graph "quantised" opset 14 {
  input %x: f32[batch, 3]
  input %ids: i64[batch]
  input %codes: u8[batch, 3]
  init %w_q: i8[3, 2] = [-127, 5, 64, 127, 0, -33]
  init %w_scale: f32[2] = [0.01, 0.5]
  init %w_zero_point: i8[2] = [0, 0]
  init %table_q: u8[4, 3] = [0, 17, 255, 3, 128, 200, 9, 99, 1, 250, 42, 77]
  init %table_scale: f32[] = [0.02]
  init %table_zero_point: u8[] = [128]
`+quantizeX+`
  %acc: i32[batch, 2] = MatMulInteger(%x_q, %w_q, %x_zero_point, %w_zero_point)
  %acc_f: f32[batch, 2] = Cast(%acc) {to=1}
`+scalesMul+`
  %y: f32[batch, 2] = Mul(%acc_f, %scales)
  %rows_q: u8[batch, 3] = Gather(%table_q, %ids)
  %rows: f32[batch, 3] = DequantizeLinear(%rows_q, %table_scale, %table_zero_point)
  output %y: f32[batch, 2]
  output %rows: f32[batch, 3]
}`)
}

const (
	dynamicX   = "  %x_q: u8[batch, 3], %x_scale: f32[], %x_zero_point: u8[] = DynamicQuantizeLinear(%x)"
	scalesMul  = "  %scales: f32[2] = Mul(%x_scale, %w_scale)"
	scalesMulR = "  %scales: f32[2] = Mul(%w_scale, %x_scale)"
)

// TestDequantizeIntegerOps: the MatMulInteger chain (its scales
// multiplied in either order) becomes a MatMul of x and the dequantised
// weights, float32(q - z) * s per column, and the table's Gather and
// DequantizeLinear a Gather of the dequantised table; the rewritten graph
// gives the table's rows exactly and x·W to within the activation's 8-bit
// rounding the rewrite drops. A chain whose scales are not the operands'
// own, or whose activation codes do not come from DynamicQuantizeLinear,
// keeps its MatMulInteger.
func TestDequantizeIntegerOps(t *testing.T) {
	for _, mul := range []string{scalesMul, scalesMulR} {
		g := integerMatMulGraph(t, dynamicX, mul)
		after := applyPass(t, g, DequantizeIntegerOps, EliminateDeadNodes)
		wantOps(t, after, map[string]int{"MatMul": 1, "Gather": 1})
		if d := after.Meta["dequantized"]; d != "1 MatMulInteger, 1 Gather tables" {
			t.Errorf("Meta[dequantized] = %q", d)
		}
		for _, n := range after.Nodes {
			if n.Op != "MatMul" {
				continue
			}
			want := []float32{-127 * 0.01, 5 * 0.5, 64 * 0.01, 127 * 0.5, 0, -33 * 0.5}
			for i, v := range after.Initializers[n.Inputs[1]].F32 {
				if v != want[i] {
					t.Errorf("dequantised weight %d = %g, want %g", i, v, want[i])
				}
			}
		}
		in := map[string]*compiler.Tensor{"x": randomF32(7, 4, 3), "ids": int64Tensor([]int64{4}, 3, 0, 1, 3), "codes": compiler.NewTensor(compiler.Uint8, 4, 3)}
		// |x| < 2: the activation's step is 4/255, times |W| <= 63.5 in a
		// sum of 3.
		wantEquivalent(t, g, after, in, 3*63.5*2/255)
	}
	for name, c := range map[string]struct{ quantizeX, mul string }{
		"another scale": {dynamicX, "  init %two: f32[] = [2]\n  %xs2: f32[] = Mul(%x_scale, %two)\n  %scales: f32[2] = Mul(%xs2, %w_scale)"},
		"codes of an input": {"  init %x_scale: f32[] = [0.1]\n  init %x_zero_point: u8[] = [3]\n  %x_q: u8[batch, 3] = Identity(%codes)",
			scalesMul},
	} {
		g := integerMatMulGraph(t, c.quantizeX, c.mul)
		runPasses(t, g, DequantizeIntegerOps)
		if d := g.Meta["dequantized"]; d != "1 Gather tables" {
			t.Errorf("%s: Meta[dequantized] = %q, want the Gather rewritten and the MatMulInteger kept", name, d)
		}
	}
}

// TestDequantizeConstant: DequantizeLinear of constants (a QDQ file's
// weight, per column) becomes the constant of its values, folded by
// FoldConstants before DequantizeIntegerOps (which leaves it so).
func TestDequantizeConstant(t *testing.T) {
	g := parseGraph(t, `graph "qdq_weight" opset 14 {
  input %x: f32[batch, 3]
  init %w_q: u8[3, 2] = [0, 5, 64, 255, 128, 33]
  init %w_scale: f32[2] = [0.01, 0.5]
  init %w_zero_point: u8[2] = [128, 0]
  %w: f32[3, 2] = DequantizeLinear(%w_q, %w_scale, %w_zero_point) {axis=1}
  %y: f32[batch, 2] = MatMul(%x, %w)
  output %y: f32[batch, 2]
}`)
	after := applyPass(t, g, FoldConstants, DequantizeIntegerOps, EliminateDeadNodes)
	wantOps(t, after, map[string]int{"MatMul": 1})
	want := []float32{-128 * 0.01, 5 * 0.5, -64 * 0.01, 255 * 0.5, 0, 33 * 0.5}
	for i, v := range after.Initializers["w"].F32 {
		if v != want[i] {
			t.Errorf("w[%d] = %g, want %g", i, v, want[i])
		}
	}
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": randomF32(3, 2, 3)}, 0)
}

// TestDequantizeQDQPairs: the QDQ format's QuantizeLinear-DequantizeLinear
// pair on an activation (the same constant scale and zero point, here
// equal constants of other names) is dropped, so the MatMul reads x; a
// pair whose DequantizeLinear has another scale is a real rescaling and
// stays.
func TestDequantizeQDQPairs(t *testing.T) {
	build := func(dqScale string) *compiler.Graph {
		return parseGraph(t, `graph "qdq" opset 14 {
  input %x: f32[batch, 3]
  init %x_scale: f32[] = [0.02]
  init %x_zero_point: u8[] = [128]
  init %x_scale2: f32[] = [`+dqScale+`]
  init %x_zero_point2: u8[] = [128]
  init %w: f32[3, 2] = [1, 2, 3, 4, 5, 6]
  %x_q: u8[batch, 3] = QuantizeLinear(%x, %x_scale, %x_zero_point)
  %x_dq: f32[batch, 3] = DequantizeLinear(%x_q, %x_scale2, %x_zero_point2)
  %y: f32[batch, 2] = MatMul(%x_dq, %w)
  output %y: f32[batch, 2]
}`)
	}
	g := build("0.02")
	after := applyPass(t, g, DequantizeIntegerOps, EliminateDeadNodes)
	wantOps(t, after, map[string]int{"MatMul": 1})
	if d := after.Meta["dequantized"]; d != "1 QuantizeLinear pairs" {
		t.Errorf("Meta[dequantized] = %q", d)
	}
	x := randomF32(5, 2, 3)
	// Dropping the pair drops the rounding to steps of 0.02 (|w| <= 6,
	// a sum of 3).
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": x}, 3*6*0.01)
	if after := applyPass(t, build("0.04"), DequantizeIntegerOps); OpHistogram(after)["QuantizeLinear"] != 1 {
		t.Errorf("a pair of two scales was dropped:\n%s", after.Text())
	}
}

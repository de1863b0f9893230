package passes

import (
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
)

// rowMaskGraph is DeBERTa's embeddings times the mask, read by a
// projection and a residual Add, with the reader of the product given.
const rowMaskGraph = `graph "rowmask" opset 14 {
  input %x: f32[batch, sequence, 8]
  input %mask: i64[batch, sequence]
  init %axis: i64[1] = [2]
  init %w: f32[8, 8] = splat(0.5)
  %u = Unsqueeze(%mask, %axis)
  %m = Cast(%u) {to=1}
  %xm = Mul(%x, %m)
  %p = MatMul(%xm, %w)
  %y = Add(%p, %xm)
  output %y: f32[batch, sequence, 8]
}`

// maskedInputs are 2 sequences of 5, the second with 2 pad tokens.
func maskedInputs(x *compiler.Tensor) map[string]*compiler.Tensor {
	mask := compiler.NewTensor(compiler.Int64, 2, 5)
	for i := range mask.I64 {
		mask.I64[i] = 1
	}
	mask.I64[8], mask.I64[9] = 0, 0
	return map[string]*compiler.Tensor{"x": x, "mask": mask}
}

// wantRealRowsEqual runs both graphs and compares each output's rows of
// real tokens (ZeroMaskedTokens), which must be bit for bit the same.
func wantRealRowsEqual(t *testing.T, before, after *compiler.Graph, in map[string]*compiler.Tensor) {
	t.Helper()
	want, err := interp.Run(before, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := interp.Run(after, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	compiler.ZeroMaskedTokens(want, in["mask"])
	compiler.ZeroMaskedTokens(got, in["mask"])
	for name, w := range want {
		for i := range w.F32 {
			if math.Float32bits(w.F32[i]) != math.Float32bits(got[name].F32[i]) {
				t.Fatalf("%s[%d] = %g on a real token, want %g", name, i, got[name].F32[i], w.F32[i])
			}
		}
	}
}

// TestDropPaddedRowMask: the product becomes its hidden state, real
// tokens' rows unchanged bit for bit.
func TestDropPaddedRowMask(t *testing.T) {
	g := parseGraph(t, rowMaskGraph)
	after := applyPass(t, g, DropPaddedRowMask, EliminateDeadNodes)
	wantOps(t, after, map[string]int{"MatMul": 1, "Add": 1})
	wantRealRowsEqual(t, g, after, maskedInputs(randomF32(41, 2, 5, 8)))
}

// TestDropPaddedRowMaskRejectsNearMisses: a product read by a sum over
// the tokens (mean pooling), one that is a graph output, and a mask
// unsqueezed on another axis stay.
func TestDropPaddedRowMaskRejectsNearMisses(t *testing.T) {
	for name, edit := range map[string][2]string{
		"pooling": {"  %y = Add(%p, %xm)\n  output %y: f32[batch, sequence, 8]", "  init %one: i64[1] = [1]\n  %y = ReduceSum(%xm, %one)\n  output %y: f32[batch, 1, 8]"},
		"output":  {"  output %y: f32[batch, sequence, 8]", "  output %y: f32[batch, sequence, 8]\n  output %xm: f32[batch, sequence, 8]"},
		"axis":    {"init %axis: i64[1] = [2]", "init %axis: i64[1] = [1]"},
	} {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(rowMaskGraph, edit[0], edit[1], 1)
			if src == rowMaskGraph {
				t.Fatalf("edit %q not applied", edit[0])
			}
			g := parseGraph(t, src)
			before := maps.Clone(OpHistogram(g))
			runPasses(t, g, DropPaddedRowMask, EliminateDeadNodes)
			if got := OpHistogram(g); got["Mul"] != before["Mul"] {
				t.Errorf("ops %v, want the Mul kept", got)
			}
		})
	}
}

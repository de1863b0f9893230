package passes

import (
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/blocks"
)

// widenedCasts is what a float16 model's converter Casts become once
// widened: y = Cast<f32>(Tanh(Cast<f32>(x))) with x float32 (the Casts
// around an op kept in float32), and z = Cast<i64>(x), a real conversion.
func widenedCasts(t *testing.T) *compiler.Graph {
	t.Helper()
	g := compiler.NewGraph("casts")
	g.Inputs = []*compiler.Value{{Name: "x", DType: compiler.Float32, Shape: compiler.Shape{{Param: "batch", Size: -1}, {Size: 3}}}}
	b := blocks.Builder{G: g}
	cast := func(name, x string, to compiler.DType) string {
		return b.OpAttrs("Cast", name, map[string]compiler.Attr{"to": compiler.IntAttr(to.ONNX())}, x)
	}
	y := cast("out_cast", b.Op("Tanh", "tanh", cast("in_cast", "x", compiler.Float32)), compiler.Float32)
	z := cast("to_int", "x", compiler.Int64)
	g.Outputs = []*compiler.Value{{Name: b.Rename(y, "y"), DType: compiler.Float32}, {Name: b.Rename(z, "z"), DType: compiler.Int64}}
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestDropNoOpCasts: the Casts to float32 of float32 values go, the graph
// output keeps its name, and the Cast to int64 stays.
func TestDropNoOpCasts(t *testing.T) {
	g := widenedCasts(t)
	after := applyPass(t, g, DropNoOpCasts, EliminateDeadNodes)
	wantOps(t, after, map[string]int{"Tanh": 1, "Cast": 1})
	for _, n := range after.Nodes {
		if n.Op == "Cast" && n.AttrInt("to", 0) != compiler.Int64.ONNX() {
			t.Errorf("Cast to %d left", n.AttrInt("to", 0))
		}
	}
	x := randomF32(2, 2, 3)
	x.F32[0] = 2.75 // truncated, not rounded, by the Cast to int64
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": x}, 0)
}

package passes

import (
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/blocks"
)

// TestNegateTrailingAxes: the Squeeze and Slice of a [batch, seq, 2]
// value along axis 2 get axis -1, each in an initializer of its own (an
// export's constants are shared: here "one" is also the ends of the
// column Slice and the axes of a Slice along axis 1, which keeps its
// axes), the graph computes the same, and a second run changes nothing.
func TestNegateTrailingAxes(t *testing.T) {
	g := compiler.NewGraph("qa")
	g.Opset = 17
	g.Inputs = []*compiler.Value{{Name: "x", DType: compiler.Float32, Shape: compiler.Shape{{Param: "batch", Size: -1}, {Param: "seq", Size: -1}, {Size: 2}}}}
	b := blocks.Builder{G: g}
	zero, one, two := b.Ints("zero", 0), b.Ints("one", 1), b.Ints("two", 2)
	start := b.Op("Squeeze", "start", b.Op("Slice", "column", "x", zero, one, two), two)
	rows := b.Op("Slice", "rows", "x", zero, one, one) // along seq: stays
	g.Outputs = []*compiler.Value{{Name: b.Rename(start, "start_logits"), DType: compiler.Float32}, {Name: b.Rename(rows, "first"), DType: compiler.Float32}}
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	after := applyPass(t, g, NegateTrailingAxes)
	axesOf := func(g *compiler.Graph, node string) []int64 {
		for _, n := range g.Nodes {
			if n.Name == node {
				return g.Initializers[n.Inputs[map[string]int{"Squeeze": 1, "Slice": 3}[n.Op]]].I64
			}
		}
		t.Fatalf("no node %q", node)
		return nil
	}
	for node, want := range map[string][]int64{"start": {-1}, "column": {-1}, "rows": {1}} {
		if got := axesOf(after, node); !slices.Equal(got, want) {
			t.Errorf("%s: axes %v, want %v", node, got, want)
		}
	}
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": randomF32(3, 3, 5, 2)}, 0)
	if changed, err := NegateTrailingAxes.Run(after); err != nil || changed {
		t.Errorf("second run: changed %v, %v", changed, err)
	}
}

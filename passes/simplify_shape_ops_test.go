package passes

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/blocks"
	"github.com/sqc-dev/sqc/compiler/interp"
)

// reshapedSwap is onnxscript's Kᵀ on x [batch, 4, seq, 8]: Reshape to
// [-1, a, b] from Shape(x) slices, Transpose<0,2,1>, Reshape back to
// lead ++ outer (outer names two of last/secondLast: [last, secondLast]
// is the swap, [secondLast, last] only a reshape back).
func reshapedSwap(t *testing.T, swap bool) *compiler.Graph {
	t.Helper()
	g := compiler.NewGraph("swap")
	g.Inputs = []*compiler.Value{{Name: "x", DType: compiler.Float32, Shape: compiler.Shape{{Param: "batch", Size: -1}, {Size: 4}, {Param: "seq", Size: -1}, {Size: 8}}}}
	b := blocks.Builder{G: g}
	shape := b.Op("Shape", "k_shape", "x")
	last := b.Op("Slice", "last", shape, b.Ints("const.[-1]", -1), b.Ints("const.[max]", math.MaxInt64))
	secondLast := b.Op("Slice", "second_last", shape, b.Ints("const.[-2]", -2), b.Ints("const.[-1]", -1))
	lead := b.Op("Slice", "lead", shape, b.Ints("const.[min]", math.MinInt64), b.Ints("const.[-2]", -2))
	concat := func(name string, in ...string) string {
		return b.OpAttrs("Concat", name, map[string]compiler.Attr{"axis": compiler.IntAttr(0)}, in...)
	}
	squeezed := b.Op("Reshape", "squeezed", "x", concat("squeezed_shape", b.Ints("const.[-1]", -1), secondLast, last))
	tr := b.OpAttrs("Transpose", "swapped", map[string]compiler.Attr{"perm": compiler.IntsAttr(0, 2, 1)}, squeezed)
	var outer string
	if swap {
		outer = concat("kt_shape", lead, last, secondLast)
	} else {
		outer = concat("kt_shape", lead, secondLast, last)
	}
	y := b.Op("Reshape", "kt", tr, outer)
	g.Outputs = []*compiler.Value{{Name: b.Rename(y, "y"), DType: compiler.Float32}}
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestSimplifyReshapedSwap: the reshape-transpose-reshape Kᵀ becomes one
// Transpose<0,1,3,2> computing the same; the same chain reshaping back to
// the unswapped dims (a real reshuffle, not a swap) stays.
func TestSimplifyReshapedSwap(t *testing.T) {
	x := randomF32(1, 2, 4, 5, 8)
	g := reshapedSwap(t, true)
	after := applyPass(t, g, SimplifyShapeOps, EliminateDeadNodes)
	wantOps(t, after, map[string]int{"Transpose": 1})
	for _, n := range after.Nodes {
		if n.Op == "Transpose" && !permIs(n, []int64{0, 1, 3, 2}) {
			t.Errorf("perm %v, want [0 1 3 2]", n.Attrs["perm"].Ints)
		}
	}
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": x}, 0)

	g = reshapedSwap(t, false)
	if after := applyPass(t, g, SimplifyShapeOps); OpHistogram(after)["Reshape"] != 2 {
		t.Errorf("a reshape back to [.., seq, 8] taken for a swap:\n%s", after.Text())
	}
}

// TestSimplifyFullSlice: a mask sliced to a width read from another
// value's shape, the same symbol as its own, is an Identity (and gone
// after the sweep); sliced to a constant width, or with step 2, it stays.
func TestSimplifyFullSlice(t *testing.T) {
	build := func(end string, step int64) *compiler.Graph {
		g := compiler.NewGraph("slice")
		seq := compiler.Dim{Param: "seq", Size: -1}
		g.Inputs = []*compiler.Value{
			{Name: "mask", DType: compiler.Float32, Shape: compiler.Shape{{Param: "batch", Size: -1}, {Size: 1}, seq, seq}},
			{Name: "key", DType: compiler.Float32, Shape: compiler.Shape{{Param: "batch", Size: -1}, {Size: 4}, seq, {Size: 8}}},
		}
		b := blocks.Builder{G: g}
		if end == "" {
			end = b.OpAttrs("Shape", "key_len", map[string]compiler.Attr{"start": compiler.IntAttr(2), "end": compiler.IntAttr(3)}, "key")
		}
		y := b.Op("Slice", "sliced", "mask", b.Ints("const.[0]", 0), end, b.Ints("const.[3]", 3), b.Ints("const.step", step))
		g.Outputs = []*compiler.Value{{Name: b.Rename(b.Op("Neg", "neg", y), "y"), DType: compiler.Float32}}
		if err := g.InferShapes(); err != nil {
			t.Fatal(err)
		}
		return g
	}
	in := map[string]*compiler.Tensor{"mask": randomF32(2, 2, 1, 3, 3), "key": randomF32(3, 2, 4, 3, 8)}
	g := build("", 1)
	after := applyPass(t, g, SimplifyShapeOps, EliminateDeadNodes)
	wantOps(t, after, map[string]int{"Neg": 1})
	wantEquivalent(t, g, after, in, 0)

	for _, tc := range []struct {
		name string
		g    *compiler.Graph
	}{
		{"step 2", build("", 2)},
		{"reversed", func() *compiler.Graph {
			// All 3 keys of a static mask, in reverse: same shape, not the same.
			g := compiler.NewGraph("reverse")
			g.Inputs = []*compiler.Value{{Name: "mask", DType: compiler.Float32, Shape: compiler.StaticShape(2, 1, 3, 3)}}
			b := blocks.Builder{G: g}
			y := b.Op("Slice", "reversed", "mask", b.Ints("const.[-1]", -1), b.Ints("const.[min]", math.MinInt64), b.Ints("const.[3]", 3), b.Ints("const.[-1]", -1))
			g.Outputs = []*compiler.Value{{Name: b.Rename(b.Op("Neg", "neg", y), "y"), DType: compiler.Float32}}
			if err := g.InferShapes(); err != nil {
				t.Fatal(err)
			}
			if v := valueInfo(g, y); v == nil || !v.Shape.Equal(compiler.StaticShape(2, 1, 3, 3)) {
				t.Fatalf("reversed slice inferred as %v", v)
			}
			return g
		}()},
		{"constant width", func() *compiler.Graph {
			g := build("width", 1)
			g.Initializers["width"] = int64Tensor([]int64{1}, 2)
			if err := g.InferShapes(); err != nil {
				t.Fatal(err)
			}
			return g
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if after := applyPass(t, tc.g, SimplifyShapeOps); OpHistogram(after)["Slice"] != 1 {
				t.Errorf("a slice that may drop elements became an Identity:\n%s", after.Text())
			}
		})
	}
}

// TestSimplifyShapeOfActivation: the sequence length MPNet's encoder reads
// from the hidden state (Gather(Shape(h), 1), h [batch, seq, 3]) is read
// from the ids' shape instead, computing the same; read at a position
// that is static (2), from the end (-2), or also by a non-Gather reader,
// the whole shape is the ids' shape and h's known width, Concat(Shape(ids),
// [3]) (DeBERTa's Slice of it), again the same; with h's width unknown, it
// stays on h.
func TestSimplifyShapeOfActivation(t *testing.T) {
	build := func(pos int64, alsoWhole bool, width int64) *compiler.Graph {
		g := compiler.NewGraph("seq_len")
		g.Inputs = []*compiler.Value{
			{Name: "ids", DType: compiler.Int64, Shape: compiler.Shape{{Param: "batch", Size: -1}, {Param: "seq", Size: -1}}},
			{Name: "x", DType: compiler.Float32, Shape: compiler.Shape{{Param: "batch", Size: -1}, {Param: "seq", Size: -1}, {Size: width}}},
		}
		b := blocks.Builder{G: g}
		shape := b.Op("Shape", "h_shape", b.Op("Tanh", "h", "x"))
		n := b.OpAttrs("Gather", "seq_len", map[string]compiler.Attr{"axis": compiler.IntAttr(0)}, shape, b.IntScalar("const.pos", pos))
		g.Outputs = []*compiler.Value{{Name: b.Rename(n, "n"), DType: compiler.Int64}}
		if alsoWhole {
			g.Outputs = append(g.Outputs, &compiler.Value{Name: b.Rename(b.Op("Neg", "neg", shape), "whole"), DType: compiler.Int64})
		}
		if err := g.InferShapes(); err != nil {
			t.Fatal(err)
		}
		return g
	}
	shapeOf := func(g *compiler.Graph) string {
		for _, n := range g.Nodes {
			if n.Op == "Shape" {
				return n.Inputs[0]
			}
		}
		return ""
	}
	in := map[string]*compiler.Tensor{"ids": int64Tensor([]int64{2, 5}, make([]int64, 10)...), "x": randomF32(4, 2, 5, 3)}
	same := func(name string, g, after *compiler.Graph) {
		t.Helper()
		want, err := interp.Run(g, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := interp.Run(after, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		for out, w := range want {
			if !slices.Equal(got[out].I64, w.I64) {
				t.Errorf("%s: %s = %v after, %v before", name, out, got[out].I64, w.I64)
			}
		}
	}
	g := build(1, false, 3)
	after := applyPass(t, g, SimplifyShapeOps)
	if got := shapeOf(after); got != "ids" || OpHistogram(after)["Concat"] != 0 {
		t.Fatalf("Shape reads %q, want ids alone\n%s", got, after.Text())
	}
	same("position 1", g, after)
	for _, c := range []struct {
		name      string
		pos       int64
		alsoWhole bool
	}{{"position 2", 2, false}, {"from the end", -2, false}, {"whole shape read", 1, true}} {
		g := build(c.pos, c.alsoWhole, 3)
		after := applyPass(t, g, SimplifyShapeOps)
		if got := shapeOf(after); got != "ids" || OpHistogram(after)["Concat"] != 1 {
			t.Errorf("%s: Shape reads %q, want Concat(Shape(ids), [3])\n%s", c.name, got, after.Text())
		}
		same(c.name, g, after)
	}
	if got := shapeOf(applyPass(t, build(-2, false, -1), SimplifyShapeOps)); got != "h" {
		t.Errorf("width unknown: Shape reads %q, want h", got)
	}
}

// TestSimplifyStackedRotary: NomicBERT's rotary tail on x [batch, seq, 3,
// 2, 4], written as the hub code's torch ops export it: q and k
// concatenated with their empty x[..., 4:] tails, stacked with v
// (Unsqueeze + Concat on axis 2) and read back by Gather. The empty tails
// and the stack go (the Gathers become the stacked values themselves),
// with the same values; a Gather on another axis stays.
func TestSimplifyStackedRotary(t *testing.T) {
	src := func(gatherAxis int) string {
		return `graph "stack" opset 14 {
  input %x: f32[batch, seq, 3, 2, 4]
  init %i0: i64[] = [0]
  init %i1: i64[] = [1]
  init %i2: i64[] = [2]
  init %ax2: i64[1] = [2]
  init %start4: i64[1] = [4]
  init %end: i64[1] = [9223372036854775807]
  init %ax3: i64[1] = [3]
  %q: f32[batch, seq, 2, 4] = Gather(%x, %i0) {axis=2}
  %k: f32[batch, seq, 2, 4] = Gather(%x, %i1) {axis=2}
  %v: f32[batch, seq, 2, 4] = Gather(%x, %i2) {axis=2}
  %qn: f32[batch, seq, 2, 4] = Neg(%q)
  %kn: f32[batch, seq, 2, 4] = Neg(%k)
  %qt: f32[batch, seq, 2, 0] = Slice(%q, %start4, %end, %ax3)
  %kt: f32[batch, seq, 2, 0] = Slice(%k, %start4, %end, %ax3)
  %qr: f32[batch, seq, 2, 4] = Concat(%qn, %qt) {axis=-1}
  %kr: f32[batch, seq, 2, 4] = Concat(%kn, %kt) {axis=-1}
  %q1: f32[batch, seq, 1, 2, 4] = Unsqueeze(%qr, %ax2)
  %k1: f32[batch, seq, 1, 2, 4] = Unsqueeze(%kr, %ax2)
  %v1: f32[batch, seq, 1, 2, 4] = Unsqueeze(%v, %ax2)
  %stack: f32[batch, seq, 3, 2, 4] = Concat(%q1, %k1, %v1) {axis=2}
  %y0 = Gather(%stack, %i0) {axis=` + fmt.Sprint(gatherAxis) + `}
  %y2 = Gather(%stack, %i2) {axis=` + fmt.Sprint(gatherAxis) + `}
  output %y0: f32[*]
  output %y2: f32[*]
}`
	}
	in := map[string]*compiler.Tensor{"x": randomF32(5, 2, 3, 3, 2, 4)}
	g := parseGraph(t, src(2))
	after := applyPass(t, g, SimplifyShapeOps, EliminateDeadNodes)
	wantOps(t, after, map[string]int{"Gather": 2, "Neg": 1}) // k is read by no output
	wantEquivalent(t, g, after, in, 0)

	for name, s := range map[string]string{"gather on another axis": src(-1)} {
		g := parseGraph(t, s)
		after := applyPass(t, g, SimplifyShapeOps, EliminateDeadNodes)
		if OpHistogram(after)["Concat"] != 1 {
			t.Errorf("%s: the stack went:\n%s", name, after.Text())
		}
	}
}

// TestSimplifyFloatRange: torch.arange(seq, dtype=float32), Range(0.0,
// Cast(len), 1.0), becomes Cast(Range(0, len, 1)) on int64, whose length
// shape inference knows: the same values. A fractional delta stays.
func TestSimplifyFloatRange(t *testing.T) {
	src := func(delta string) string {
		return `graph "arange" opset 14 {
  input %ids: i64[batch, seq]
  init %i1: i64[] = [1]
  init %f0: f32[] = [0]
  init %delta: f32[] = [` + delta + `]
  %shape: i64[2] = Shape(%ids)
  %len: i64[] = Gather(%shape, %i1) {axis=0}
  %lenf: f32[] = Cast(%len) {to=1}
  %pos = Range(%f0, %lenf, %delta)
  output %pos: f32[*]
}`
	}
	ids := compiler.NewTensor(compiler.Int64, 2, 7)
	g := parseGraph(t, src("1"))
	after := applyPass(t, g, SimplifyShapeOps, EliminateDeadNodes)
	if v := valueInfo(after, "pos"); v == nil || len(v.Shape) != 1 || v.Shape[0].Param != "seq" {
		t.Errorf("positions %v, want f32[seq]", v)
	}
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"ids": ids}, 0)
	if h := OpHistogram(applyPass(t, parseGraph(t, src("0.5")), SimplifyShapeOps)); h["Cast"] != 1 {
		t.Errorf("a range of step 0.5 was rewritten: %s", histogramString(h))
	}
}

// TestSimplifyConcatKeepsNonEmpty: only operands of static extent 0 leave
// a Concat; one of extent 1 is data.
func TestSimplifyConcatKeepsNonEmpty(t *testing.T) {
	g := parseGraph(t, `graph "concat" opset 14 {
  input %a: f32[batch, 1]
  input %b: f32[batch, 3]
  input %e: f32[batch, 0]
  %y = Concat(%a, %e, %b) {axis=-1}
  output %y: f32[batch, 4]
}`)
	after := applyPass(t, g, SimplifyShapeOps)
	for _, n := range after.Nodes {
		if n.Op == "Concat" && len(n.Inputs) != 2 {
			t.Errorf("Concat of %v, want a and b", n.Inputs)
		}
	}
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"a": randomF32(1, 2, 1), "b": randomF32(2, 2, 3), "e": compiler.NewTensor(compiler.Float32, 2, 0)}, 0)
}

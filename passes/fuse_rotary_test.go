package passes

import (
	"math"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/blocks"
)

const (
	ropeHeads, ropeD = 2, 6
	ropeW            = ropeHeads * ropeD
)

var (
	batchDim = compiler.Dim{Param: "batch", Size: -1}
	seqDim   = compiler.Dim{Param: "seq", Size: -1}
)

// packedQKVGraph is ModernBERT's head split of a fused QKV projection y
// [batch, seq, 3W]: Reshape to [batch, seq, 3, H, D], Transpose by perm
// (none for a nil perm: NomicBERT's qkv[:, :, i]), then each part taken
// by Slice + Squeeze (gather false) or Gather on the axis the 3 went to
// (axis). width 1 takes Q, K and V; width 2 takes only
// one slice of two parts, Q and K at once, which is no part.
func packedQKVGraph(t *testing.T, perm []int64, axis int64, gather bool, width int64) *compiler.Graph {
	t.Helper()
	g := compiler.NewGraph("qkv")
	g.Inputs = []*compiler.Value{{Name: "y", DType: compiler.Float32, Shape: compiler.Shape{batchDim, seqDim, {Size: 3 * ropeW}}}}
	b := blocks.Builder{G: g}
	tr := b.Op("Reshape", "heads", "y", b.Ints("const.shape", 0, 0, 3, ropeHeads, ropeD))
	if perm != nil {
		tr = b.OpAttrs("Transpose", "qkv_t", map[string]compiler.Attr{"perm": compiler.IntsAttr(perm...)}, tr)
	}
	for i, name := range []string{"q", "k", "v"} {
		var part string
		if gather {
			part = b.OpAttrs("Gather", name+"_part", map[string]compiler.Attr{"axis": compiler.IntAttr(axis)}, tr, b.IntScalar("const."+name, int64(i)))
		} else {
			part = b.Op("Slice", name+"_slice", tr, b.Ints("const.start."+name, int64(i)), b.Ints("const.end."+name, int64(i)+width), b.Ints("const.axis", axis))
			if width == 1 {
				part = b.Op("Squeeze", name+"_part", part, b.Ints("const.axis", axis))
			}
		}
		g.Outputs = append(g.Outputs, &compiler.Value{Name: b.Rename(part, name), DType: compiler.Float32})
		if width != 1 {
			break
		}
	}
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestUnpackQKVHeads: both transposes and none, and both ways of taking a
// part, become column slices of y with a standard head split each (its
// Transpose only where the parts were transposed), computing the same
// values; a slice of two parts at once is left alone.
func TestUnpackQKVHeads(t *testing.T) {
	y := randomF32(1, 2, 5, 3*ropeW)
	for _, c := range []struct {
		perm   []int64
		axis   int64
		gather bool
	}{{[]int64{0, 3, 2, 1, 4}, 2, false}, {[]int64{0, 3, 2, 1, 4}, 2, true}, {[]int64{2, 0, 3, 1, 4}, 0, false}, {[]int64{2, 0, 3, 1, 4}, 0, true},
		{nil, 2, false}, {nil, 2, true}} {
		g := packedQKVGraph(t, c.perm, c.axis, c.gather, 1)
		after := applyPass(t, g, UnpackQKVHeads)
		want := map[string]int{"Slice": 3, "Reshape": 3, "Transpose": 3}
		if c.perm == nil {
			delete(want, "Transpose")
		}
		wantOps(t, after, want)
		wantEquivalent(t, g, after, map[string]*compiler.Tensor{"y": y}, 0)
	}
	if applyPass(t, packedQKVGraph(t, []int64{0, 3, 2, 1, 4}, 2, false, 2), UnpackQKVHeads).Nodes[1].Op != "Transpose" {
		t.Error("a slice of two parts was unpacked")
	}
}

// ropeGraph is apply_rotary_pos_emb on the head split of x [batch, seq, W]
// with tables cos and sin [1, seq, D] (unsqueezed at axis 1), rotate_half
// written as Concat(Neg(upper half), lower half); swapped writes
// Concat(Neg(lower), upper) instead, which is not RoPE's rotation.
// Layouts other than ropeHeadsFirst rotate the split before its
// transpose, [batch, seq, H, D], as NomicBERT's hub code does, with
// tables [seq, 1, D] (ropeSeqTables: the table inputs as they are) or
// [1, seq, 1, D] (ropeBatchTables: unsqueezed at axis 2).
func ropeGraph(t *testing.T, swapped bool, layout int) *compiler.Graph {
	t.Helper()
	g := compiler.NewGraph("rope")
	table := compiler.Shape{{Size: 1}, seqDim, {Size: ropeD}}
	if layout == ropeSeqTables {
		table = compiler.Shape{seqDim, {Size: 1}, {Size: ropeD}}
	}
	g.Inputs = []*compiler.Value{{Name: "x", DType: compiler.Float32, Shape: compiler.Shape{batchDim, seqDim, {Size: ropeW}}},
		{Name: "cos", DType: compiler.Float32, Shape: table}, {Name: "sin", DType: compiler.Float32, Shape: table}}
	b := blocks.Builder{G: g}
	var split, cos, sin string
	switch layout {
	case ropeHeadsFirst:
		split = b.SplitHeads("x", "x", ropeHeads, ropeD, permSplit...)
		cos = b.Op("Unsqueeze", "cos4", "cos", b.Ints("const.1", 1))
		sin = b.Op("Unsqueeze", "sin4", "sin", b.Ints("const.1", 1))
	case ropeSeqTables:
		split = b.Op("Reshape", "x/Reshape", "x", b.Ints("const.heads_shape", 0, 0, ropeHeads, ropeD))
		cos, sin = "cos", "sin"
	case ropeBatchTables:
		split = b.Op("Reshape", "x/Reshape", "x", b.Ints("const.heads_shape", 0, 0, ropeHeads, ropeD))
		cos = b.Op("Unsqueeze", "cos4", "cos", b.Ints("const.2", 2))
		sin = b.Op("Unsqueeze", "sin4", "sin", b.Ints("const.2", 2))
	}
	half := func(name string, from, to int64) string {
		return b.Op("Slice", name, split, b.Ints("const.from."+name, from), b.Ints("const.to."+name, to), b.Ints("const.-1", -1))
	}
	lo, hi := half("lo", 0, ropeD/2), half("hi", ropeD/2, math.MaxInt64)
	if swapped {
		lo, hi = hi, lo
	}
	rot := b.OpAttrs("Concat", "rot", map[string]compiler.Attr{"axis": compiler.IntAttr(-1)}, b.Op("Neg", "neg", hi), lo)
	y := b.Op("Add", "rope", b.Op("Mul", "xcos", split, cos), b.Op("Mul", "rotsin", rot, sin))
	g.Outputs = []*compiler.Value{{Name: b.Rename(y, "y"), DType: compiler.Float32}}
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	return g
}

// ropeGraph's layouts.
const (
	ropeHeadsFirst = iota
	ropeSeqTables
	ropeBatchTables
)

// TestFuseRotary: RoPE on split heads, before or after their transpose,
// becomes one sqc.Rotary on x, split after, with exactly the graph's
// bits; the swapped rotation stays.
func TestFuseRotary(t *testing.T) {
	for layout, name := range []string{"heads first", "[seq, 1, d] tables", "[1, seq, 1, d] tables"} {
		t.Run(name, func(t *testing.T) {
			tables := []int64{1, 7, ropeD}
			if layout == ropeSeqTables {
				tables = []int64{7, 1, ropeD}
			}
			in := map[string]*compiler.Tensor{"x": randomF32(2, 3, 7, ropeW), "cos": randomF32(3, tables...), "sin": randomF32(4, tables...)}
			g := ropeGraph(t, false, layout)
			after := applyPass(t, g, FuseRotary)
			if h := OpHistogram(after); h["sqc.Rotary"] != 1 || h["Neg"] != 0 || h["Concat"] != 0 {
				t.Errorf("ops %s, want one sqc.Rotary", histogramString(h))
			}
			wantEquivalent(t, g, after, in, 0)
			if h := OpHistogram(applyPass(t, ropeGraph(t, true, layout), FuseRotary)); h["sqc.Rotary"] != 0 {
				t.Errorf("the swapped rotation fused: %s", histogramString(h))
			}
		})
	}
}

// TestSplitSlidingWindowMaskNeedsLowest: a window whose fill is not
// float32's lowest is left in the mask (adding it to the padding mask
// would not reproduce it where both mask a key).
func TestSplitSlidingWindowMaskNeedsLowest(t *testing.T) {
	for _, fill := range []float32{-math.MaxFloat32, -1e4} {
		g := compiler.NewGraph("window")
		g.Inputs = []*compiler.Value{{Name: "s", DType: compiler.Float32, Shape: compiler.Shape{batchDim, {Size: 2}, seqDim, seqDim}},
			{Name: "m", DType: compiler.Int64, Shape: compiler.Shape{batchDim, seqDim}},
			{Name: "outside", DType: compiler.Bool, Shape: compiler.Shape{{Size: 1}, {Size: 1}, seqDim, seqDim}}}
		b := blocks.Builder{G: g}
		am := b.OpAttrs("sqc.AttentionMask", "am", map[string]compiler.Attr{"fill": compiler.FloatAttr(-math.MaxFloat32)}, "m")
		w := b.Op("Where", "w", "outside", b.Scalar("const.fill", fill), am)
		scores := b.Op("MatMul", "scores", "s", "s")
		y := b.Op("Add", "masked", scores, w)
		g.Outputs = []*compiler.Value{{Name: b.Rename(y, "y"), DType: compiler.Float32}}
		if err := g.InferShapes(); err != nil {
			t.Fatal(err)
		}
		after := applyPass(t, g, SplitSlidingWindowMask)
		split := OpHistogram(after)["Add"] == 2
		if split != (fill == -math.MaxFloat32) {
			t.Errorf("fill %g: split %v", fill, split)
		}
	}
}

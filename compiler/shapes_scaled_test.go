package compiler

import "testing"

// TestScaledParam: the scaled symbol's name and its parse, which never
// reads a file's own symbol as a product.
func TestScaledParam(t *testing.T) {
	if got := ScaledParam(4, "batch"); got != "4·batch" {
		t.Errorf("ScaledParam(4, batch) = %q", got)
	}
	if got := ScaledParam(1, "batch"); got != "batch" {
		t.Errorf("ScaledParam(1, batch) = %q", got)
	}
	for _, c := range []struct {
		p    string
		c    int64
		base string
	}{
		{"4·batch", 4, "batch"}, {"batch", 1, "batch"}, {"4*batch", 1, "4*batch"}, {"04·batch", 1, "04·batch"},
		{"1·batch", 1, "1·batch"}, {"x·batch", 1, "x·batch"}, {"4·", 1, "4·"}, {"12·seq", 12, "seq"},
	} {
		if c2, base := SplitScaledParam(c.p); c2 != c.c || base != c.base {
			t.Errorf("SplitScaledParam(%q) = %d, %q; want %d, %q", c.p, c2, base, c.c, c.base)
		}
	}
}

// TestScaledDims: torch's bmm attention merges batch and heads; inference
// names the merged axis 4·batch through Reshape's -1 and Tile, and gets
// batch back by splitting it again.
func TestScaledDims(t *testing.T) {
	src := `
input %x: f32[batch, 4, sequence, 8]
init %t: f32[4, 6, 8] = splat(0)
init %i0: i64[] = [0]
init %i2: i64[] = [2]
init %minus: i64[1] = [-1]
init %four: i64[1] = [4]
init %eight: i64[1] = [8]
init %one: i64[1] = [1]
init %zero: i64[1] = [0]
%s = Shape(%x)
%b = Gather(%s, %i0)
%bu = Unsqueeze(%b, %zero)
%sq = Gather(%s, %i2)
%squ = Unsqueeze(%sq, %zero)
%mshape = Concat(%minus, %squ, %eight) {axis=0}
%m = Reshape(%x, %mshape)
%sshape = Concat(%minus, %four, %squ, %eight) {axis=0}
%back = Reshape(%m, %sshape)
%reps = Concat(%bu, %one, %one) {axis=0}
%tiled = Tile(%t, %reps)
%ms = Shape(%m)
%bh = Gather(%ms, %i0)
%bhu = Unsqueeze(%bh, %zero)
%z = ConstantOfShape(%bhu)
`
	g, err := inferText(t, 14, src)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"m":     `f32["4·batch", sequence, 8]`,
		"back":  "f32[batch, 4, sequence, 8]",
		"tiled": `f32["4·batch", 6, 8]`,
		"z":     `f32["4·batch"]`,
	} {
		if got := typeString(g.Values[name].DType, g.Values[name].Shape); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

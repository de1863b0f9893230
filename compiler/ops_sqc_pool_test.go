package compiler

import (
	"strings"
	"testing"
)

// TestMaskedSumShape: sqc.MaskedSum of [batch, seq, hidden] by an i64
// [batch, seq] mask is [batch, hidden], [batch, 1, hidden] with keepdims;
// a mask of another length, a float mask or keepdims 2 is an error.
func TestMaskedSumShape(t *testing.T) {
	const in = "input %x: f32[batch, 7, 6]\n"
	for keep, want := range map[string]string{"0": "[batch, 6]", "1": "[batch, 1, 6]"} {
		g, err := inferText(t, 17, in+"input %m: i64[batch, 7]\n%y = sqc.MaskedSum(%x, %m) {keepdims="+keep+"}")
		if err == nil {
			err = g.Verify()
		}
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := g.ValueInfo("y"); v == nil || v.Shape.String() != want {
			t.Errorf("keepdims %s: y is %v, want %s", keep, v, want)
		}
	}
	for _, bad := range []struct{ text, want string }{
		{in + "input %m: i64[batch, 5]\n%y = sqc.MaskedSum(%x, %m)", "does not fit"},
		{in + "input %m: f32[batch, 7]\n%y = sqc.MaskedSum(%x, %m)", "i64"},
		{in + "input %m: i64[batch, 7]\n%y = sqc.MaskedSum(%x, %m) {keepdims=2}", "keepdims"},
	} {
		g, err := inferText(t, 17, bad.text)
		if err == nil {
			err = g.Verify()
		}
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: err = %v, want one naming %q", bad.text, err, bad.want)
		}
	}
}

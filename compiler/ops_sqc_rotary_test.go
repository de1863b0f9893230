package compiler

import (
	"strings"
	"testing"
)

// TestRotaryShape: sqc.Rotary keeps its input's shape for tables of one
// head's width shared by the batch or per sequence; a width that is not
// heads of an even size, or tables of another width or length, is a shape
// error, and a tables_by_position other than 0 or 1 a verifier error.
func TestRotaryShape(t *testing.T) {
	const in = "input %x: f32[batch, seq, 12]\n"
	for _, tables := range []string{"f32[1, seq, 6]", "f32[batch, seq, 6]"} {
		g, err := inferText(t, 17, in+"input %c: "+tables+"\ninput %s: "+tables+"\n%y = sqc.Rotary(%x, %c, %s) {heads=2}")
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Verify(); err != nil {
			t.Fatal(err)
		}
		if v, _ := g.ValueInfo("y"); v == nil || v.Shape.String() != "[batch, seq, 12]" {
			t.Errorf("tables %s: y is %v, want [batch, seq, 12]", tables, v)
		}
	}
	g, err := inferText(t, 17, in+"input %c: f32[1, seq, 4]\n%y = sqc.Rotary(%x, %c, %c) {heads=3}") // 3 heads of 4
	if err == nil {
		err = g.Verify()
	}
	if err != nil {
		t.Errorf("3 heads of 4: %v", err)
	}
	for _, bad := range []struct{ text, want string }{
		{in + "input %c: f32[1, seq, 4]\n%y = sqc.Rotary(%x, %c, %c) {heads=2}", "one head"},
		{"input %x: f32[2, seq, 12]\ninput %c: f32[3, seq, 6]\n%y = sqc.Rotary(%x, %c, %c) {heads=2}", "does not fit"},
		{"input %x: f32[batch, seq, 15]\ninput %c: f32[1, seq, 3]\n%y = sqc.Rotary(%x, %c, %c) {heads=5}", "even size"},
		{in + "input %c: f32[1, seq, 6]\n%y = sqc.Rotary(%x, %c, %c) {heads=2, tables_by_position=2}", "tables_by_position"},
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

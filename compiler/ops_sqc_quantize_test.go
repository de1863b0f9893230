package compiler

import (
	"strings"
	"testing"
)

// TestQuantizeShapeAndCheck covers sqc.Quantize and the u8 forms of
// sqc.QLinear and the LayerNorms (ops_sqc_quantize.go).
func TestQuantizeShapeAndCheck(t *testing.T) {
	for _, c := range []struct{ name, nodes, value, want string }{
		{"static", `%q = sqc.Quantize(%x) {scale=0.5, zero_point=128}`, "q", "u8[batch, sequence, 8]"},
		{"dynamic rows", `%q, %rs, %rz = sqc.Quantize(%x) {mode="dynamic"}`, "rz", "i32[batch, sequence]"},
		{"QLinear of u8", `%q = sqc.Quantize(%x) {scale=0.5, zero_point=128}` + "\n" +
			`%y = sqc.QLinear(%q, %w, %s, %b) {act_scale=0.5, act_zero_point=128}`, "y", "f32[batch, sequence, 3]"},
		{"QLinear dynamic u8", `%q, %rs, %rz = sqc.Quantize(%x) {mode="dynamic"}` + "\n" +
			`%y = sqc.QLinear(%q, %w, %s, _, _, %rs, %rz) {act_mode="dynamic"}`, "y", "f32[batch, sequence, 3]"},
		{"QLinear writing u8", `%y = sqc.QLinear(%x, %w, %s) {act_scale=0.5, act_zero_point=128, out_scale=0.25, out_zero_point=3}`, "y", "u8[batch, sequence, 3]"},
		{"LayerNorm writing u8", `init %g: f32[8] = splat(1)` + "\n" + `%yq, %y = sqc.LayerNorm(%x, %g) {out_scale=0.25, out_zero_point=3}`, "yq", "u8[batch, sequence, 8]"},
		{"LayerNormDual writing u8", `init %g: f32[8] = splat(1)` + "\n" + `%y, %yq = sqc.LayerNormDual(%x, %g, %g) {out_scale=0.25, out_zero_point=3}`, "yq", "u8[batch, sequence, 8]"},
		{"INT8 Attention writing u8", `%y = sqc.Attention(%x, %x, %x) {heads=2, scale=0.5, int8=1, out_scale=0.25, out_zero_point=3}`, "y", "u8[batch, sequence, 8]"},
		{"Attention f32", `%y = sqc.Attention(%x, %x, %x) {heads=2, scale=0.5, int8=1}`, "y", "f32[batch, sequence, 8]"},
		{"LayerNormDual f32", `init %g: f32[8] = splat(1)` + "\n" + `%y, %yq = sqc.LayerNormDual(%x, %g, %g)`, "yq", "f32[batch, sequence, 8]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := inferText(t, 17, qlinearDecls+c.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Verify(); err != nil {
				t.Fatal(err)
			}
			if v := g.Values[c.value]; typeString(v.DType, v.Shape) != c.want {
				t.Errorf("%s is %s, want %s", c.value, typeString(v.DType, v.Shape), c.want)
			}
		})
	}
	for _, c := range []struct{ name, node, want string }{
		{"no zero point", `%q = sqc.Quantize(%x) {scale=0.5}`, "zero_point"},
		{"zero scale", `%q = sqc.Quantize(%x) {scale=0.0, zero_point=1}`, "scale"},
		{"dynamic with scale", `%q, %rs, %rz = sqc.Quantize(%x) {mode="dynamic", scale=1.0}`, "scale"},
		{"dynamic one output", `%q = sqc.Quantize(%x) {mode="dynamic"}`, "three outputs"},
		{"static three outputs", `%q, %rs, %rz = sqc.Quantize(%x) {scale=0.5, zero_point=1}`, "one output"},
		{"bad mode", `%q = sqc.Quantize(%x) {mode="per_channel"}`, "mode"},
		{"of i64", `input %i: i64[4, 8]` + "\n" + `%q = sqc.Quantize(%i) {scale=0.5, zero_point=1}`, "dtype"},
		{"row params static", `input %rs: f32[batch, sequence]` + "\n" + `input %rz: i32[batch, sequence]` + "\n" +
			`%y = sqc.QLinear(%x, %w, %s, _, _, %rs, %rz) {act_scale=0.5, act_zero_point=1}`, "dynamic act_mode only"},
		{"FP32 Attention writing u8", `%y = sqc.Attention(%x, %x, %x) {heads=2, scale=0.5, out_scale=0.25, out_zero_point=3}`, "needs int8 = 1"},
		{"Attention u8 no zero point", `%y = sqc.Attention(%x, %x, %x) {heads=2, scale=0.5, int8=1, out_scale=0.25}`, "out_zero_point"},
		{"out zero point range", `%y = sqc.QLinear(%x, %w, %s) {act_scale=0.5, act_zero_point=1, out_scale=0.5, out_zero_point=300}`, "out_zero_point"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := inferText(t, 17, qlinearDecls+c.node)
			if err == nil {
				err = g.Verify()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

// TestVerifyQuantizedEdges: a QLinear reading u8 must read it in its own
// quantisation.
func TestVerifyQuantizedEdges(t *testing.T) {
	for _, c := range []struct{ name, nodes, want string }{
		{"same", `%q = sqc.Quantize(%x) {scale=0.5, zero_point=128}` + "\n" + `%y = sqc.QLinear(%q, %w, %s) {act_scale=0.5, act_zero_point=128}`, ""},
		{"other scale", `%q = sqc.Quantize(%x) {scale=0.5, zero_point=128}` + "\n" + `%y = sqc.QLinear(%q, %w, %s) {act_scale=0.25, act_zero_point=128}`, "quantised with scale"},
		{"producer u8", `%a = sqc.QLinear(%x, %w, %s) {act_scale=0.5, act_zero_point=1, out_scale=0.25, out_zero_point=3}` + "\n" +
			`init %w3: i8[3, 3] = splat(1)` + "\n" + `init %s3: f32[3] = splat(1)` + "\n" + `%y = sqc.QLinear(%a, %w3, %s3) {act_scale=0.25, act_zero_point=4}`, "zero point 3"},
		{"dynamic from static", `%q = sqc.Quantize(%x) {scale=0.5, zero_point=128}` + "\n" + `%y = sqc.QLinear(%q, %w, %s) {act_mode="dynamic"}`, "dynamic QLinear reads u8"},
		{"u8 input", `input %u: u8[2, 8]` + "\n" + `%y = sqc.QLinear(%u, %w, %s) {act_scale=0.5, act_zero_point=128}`, "no producer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := inferText(t, 17, qlinearDecls+c.nodes)
			if err != nil {
				t.Fatal(err)
			}
			err = g.VerifyAt(VerifyQuantized)
			if c.want == "" && err != nil {
				t.Fatal(err)
			}
			if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

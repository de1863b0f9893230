package compiler

import (
	"errors"
	"strings"
	"testing"
)

const qlinearDecls = `input %x: f32[batch, sequence, 8]
init %w: i8[8, 3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
init %s: f32[3] = [0.1, 0.2, 0.3]
init %b: f32[3] = [1, 2, 3]
input %r: f32[batch, sequence, 3]
`

func TestQLinearShapeAndCheck(t *testing.T) {
	for _, c := range []struct{ name, node, want string }{
		{"static", `%y = sqc.QLinear(%x, %w, %s, %b) {act_scale=0.5, act_zero_point=128}`, "f32[batch, sequence, 3]"},
		{"dynamic residual", `%y = sqc.QLinear(%x, %w, %s, _, %r) {act_mode="dynamic", act="gelu"}`, "f32[batch, sequence, 3]"},
		{"zero point default", `%y = sqc.QLinear(%x, %w, %s) {act_scale=0.5}`, "f32[batch, sequence, 3]"},
		{"short gelu to u8", `%y = sqc.QLinear(%x, %w, %s, %b) {act_scale=0.5, act="gelu_u8", out_scale=0.002, out_zero_point=3}`, "u8[batch, sequence, 3]"},
		{"short tanh gelu to u8", `%y = sqc.QLinear(%x, %w, %s, %b) {act_scale=0.5, act="gelu_tanh_u8", out_scale=0.05, out_zero_point=3}`, "u8[batch, sequence, 3]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := inferText(t, 17, qlinearDecls+c.node)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Verify(); err != nil {
				t.Fatal(err)
			}
			if v := g.Values["y"]; typeString(v.DType, v.Shape) != c.want {
				t.Errorf("y is %s, want %s", typeString(v.DType, v.Shape), c.want)
			}
		})
	}
	for _, c := range []struct{ name, node, want string }{
		{"no scale", `%y = sqc.QLinear(%x, %w, %s)`, "act_scale"},
		{"negative scale", `%y = sqc.QLinear(%x, %w, %s) {act_scale=-1.0}`, "act_scale"},
		{"zero point range", `%y = sqc.QLinear(%x, %w, %s) {act_scale=1.0, act_zero_point=256}`, "act_zero_point"},
		{"dynamic with scale", `%y = sqc.QLinear(%x, %w, %s) {act_mode="dynamic", act_scale=1.0}`, "dynamic"},
		{"bad mode", `%y = sqc.QLinear(%x, %w, %s) {act_mode="per_tensor", act_scale=1.0}`, "act_mode"},
		{"bad act", `%y = sqc.QLinear(%x, %w, %s) {act="tanh", act_scale=1.0}`, "act"},
		{"short gelu to f32", `%y = sqc.QLinear(%x, %w, %s) {act_scale=1.0, act="gelu_u8"}`, `act "gelu_u8" needs a u8 output with out_scale >= 0.002 (internal/gelu.ShortMinStep), has an f32 output`},
		{"short gelu, small step", `%y = sqc.QLinear(%x, %w, %s) {act_scale=1.0, act="gelu_tanh_u8", out_scale=0.0019, out_zero_point=0}`, "has out_scale 0.0019"},
		{"f32 weight", `init %wf: f32[8, 3] = splat(1)` + "\n" + `%y = sqc.QLinear(%x, %wf, %s) {act_scale=1.0}`, "dtype"},
		{"bad residual_op", `input %r: f32[batch, sequence, 3]` + "\n" + `%y = sqc.QLinear(%x, %w, %s, _, %r) {act_scale=1.0, residual_op="sub"}`, `residual_op is "sub"`},
		{"mul without residual", `%y = sqc.QLinear(%x, %w, %s) {act_scale=1.0, residual_op="mul"}`, "without a residual"},
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
	for _, c := range []struct{ name, node string }{
		{"K mismatch", `input %x2: f32[2, 9]` + "\n" + `%y = sqc.QLinear(%x2, %w, %s) {act_scale=1.0}`},
		{"scale length", `init %s4: f32[4] = splat(1)` + "\n" + `%y = sqc.QLinear(%x, %w, %s4) {act_scale=1.0}`},
		{"residual shape", `input %r2: f32[batch, sequence, 4]` + "\n" + `%y = sqc.QLinear(%x, %w, %s, _, %r2) {act_scale=1.0}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := inferText(t, 17, qlinearDecls+c.node); !errors.Is(err, ErrShapeMismatch) {
				t.Errorf("err = %v, want ErrShapeMismatch", err)
			}
		})
	}
}

package compiler

import (
	"errors"
	"strings"
	"testing"
)

const layerNormDualDecls = `input %x: f32[batch, sequence, 4]
init %g: f32[4] = [1, 2, 3, 4]
init %gq: f32[4] = [0.5, 1, 1.5, 2]
init %b: f32[4] = [0, 1, 0, 1]
init %bq: f32[4] = [0, 0.5, 0, 0.5]
`

func TestLayerNormDualShapeAndCheck(t *testing.T) {
	for _, c := range []struct{ name, node string }{
		{"with biases", `%y, %yq = sqc.LayerNormDual(%x, %g, %gq, %b, %bq) {epsilon=1e-12}`},
		{"no biases", `%y, %yq = sqc.LayerNormDual(%x, %g, %gq)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := inferText(t, 17, layerNormDualDecls+c.node)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Verify(); err != nil {
				t.Fatal(err)
			}
			for _, out := range []string{"y", "yq"} {
				if v := g.Values[out]; typeString(v.DType, v.Shape) != "f32[batch, sequence, 4]" {
					t.Errorf("%s is %s, want f32[batch, sequence, 4]", out, typeString(v.DType, v.Shape))
				}
			}
		})
	}
	for _, c := range []struct{ name, node, want string }{
		{"one bias", `%y, %yq = sqc.LayerNormDual(%x, %g, %gq, %b)`, "both"},
		{"other bias", `%y, %yq = sqc.LayerNormDual(%x, %g, %gq, _, %bq)`, "both"},
		{"negative epsilon", `%y, %yq = sqc.LayerNormDual(%x, %g, %gq) {epsilon=-1.0}`, "epsilon"},
		{"one output", `%y = sqc.LayerNormDual(%x, %g, %gq)`, "outputs"},
		{"axis attribute", `%y, %yq = sqc.LayerNormDual(%x, %g, %gq) {axis=-1}`, "axis"},
		{"i64 scale", `init %gi: i64[4] = [1, 2, 3, 4]` + "\n" + `%y, %yq = sqc.LayerNormDual(%x, %g, %gi)`, "dtype"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := inferText(t, 17, layerNormDualDecls+c.node)
			if err == nil {
				err = g.Verify()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
	for _, c := range []struct{ name, node string }{
		{"scale length", `init %g5: f32[5] = splat(1)` + "\n" + `%y, %yq = sqc.LayerNormDual(%x, %g, %g5)`},
		{"bias rank", `init %b2: f32[2, 2] = splat(1)` + "\n" + `%y, %yq = sqc.LayerNormDual(%x, %g, %gq, %b2, %bq)`},
		{"scalar input", `input %s: f32[]` + "\n" + `%y, %yq = sqc.LayerNormDual(%s, %g, %gq)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := inferText(t, 17, layerNormDualDecls+c.node); !errors.Is(err, ErrShapeMismatch) {
				t.Errorf("err = %v, want ErrShapeMismatch", err)
			}
		})
	}
}

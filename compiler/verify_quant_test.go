package compiler

import (
	"errors"
	"strings"
	"testing"
)

// quantGraph is a quantised block as QuantPipeline leaves it: a
// LayerNormDual whose twin feeds a static and a dynamic QLinear.
const quantGraph = `
input %x: f32[batch, sequence, 4]
init %g: f32[4] = [1, 1, 1, 1]
init %gq: f32[4] = [0.5, 2, 1, 4]
init %b: f32[4] = [0, 0, 0, 0]
init %bq: f32[4] = [0, 0, 0, 0]
init %w: i8[4, 2] = [1, -2, 3, -4, 5, -6, 7, -127]
init %s: f32[2] = [0.01, 0.02]
init %bias: f32[2] = [1, 2]
%y, %yq = sqc.LayerNormDual(%x, %g, %gq, %b, %bq) {epsilon=1e-12} @ln
%p = sqc.QLinear(%yq, %w, %s, %bias) {act_scale=0.03, act_zero_point=128} @static
%d = sqc.QLinear(%yq, %w, %s) {act_mode="dynamic"} @dynamic
%out = Add(%p, %d) @sum
output %out: f32[batch, sequence, 2]
output %y: f32[batch, sequence, 4]`

func TestVerifyQuantizedValid(t *testing.T) {
	g := parseBody(t, 17, quantGraph)
	if err := g.VerifyAt(VerifyQuantized); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyQuantizedCatches has one case per error VerifyQuantized adds:
// each graph passes Verify (the structural level) and fails VerifyAt
// VerifyQuantized naming the node and matching the sentinel.
func TestVerifyQuantizedCatches(t *testing.T) {
	for _, c := range []struct {
		name     string
		old, new string // edit of quantGraph
		is       error
		node     string // the node the error must name
		want     string // a substring of the message
	}{
		{"weight not an initializer", `init %w: i8[4, 2] = [1, -2, 3, -4, 5, -6, 7, -127]`, `input %w: i8[4, 2]`,
			ErrMissingTensor, `node "static"`, `weight "w" is not an initializer`},
		{"weight rank", `init %w: i8[4, 2] = [1, -2, 3, -4, 5, -6, 7, -127]`, `init %w: i8[8] = [1, -2, 3, -4, 5, -6, 7, -127]`,
			ErrDTypeMismatch, `node "static"`, `want i8 [K, N]`},
		{"scale not an initializer", `init %s: f32[2] = [0.01, 0.02]`, `input %s: f32[2]`,
			ErrMissingTensor, `node "static"`, `weight scale "s" is not an initializer`},
		{"scale length", `init %s: f32[2] = [0.01, 0.02]`, `init %s: f32[3] = [0.01, 0.02, 0.03]`,
			ErrShapeMismatch, `node "dynamic"`, `weight scale "s" has 3 elements for a weight of 2 columns`},
		{"scale rank", `init %s: f32[2] = [0.01, 0.02]`, `init %s: f32[1, 2] = [0.01, 0.02]`,
			ErrDTypeMismatch, `node "static"`, `want f32 [2]`},
		{"zero scale", `init %s: f32[2] = [0.01, 0.02]`, `init %s: f32[2] = [0.01, 0]`,
			ErrMalformed, `node "static"`, `weight scale "s"[1] is 0`},
		{"negative scale", `init %s: f32[2] = [0.01, 0.02]`, `init %s: f32[2] = [-0.01, 0.02]`,
			ErrMalformed, `node "dynamic"`, `want finite and > 0`},
		{"bias length", `init %bias: f32[2] = [1, 2]`, `init %bias: f32[1] = [1]`,
			ErrShapeMismatch, `node "static"`, `bias "bias" has 1 elements`},
		{"bias not an initializer", `init %bias: f32[2] = [1, 2]`, `input %bias: f32[2]`,
			ErrMissingTensor, `node "static"`, `bias "bias" is not an initializer`},
		{"static without zero point", `{act_scale=0.03, act_zero_point=128}`, `{act_scale=0.03}`,
			ErrMalformed, `node "static"`, `has act_scale but no act_zero_point`},
		{"channels", `input %x: f32[batch, sequence, 4]`, `input %x: f32[batch, sequence, 4]` + "\n" + `input %x5: f32[batch, 5]` + "\n" + `%e = sqc.QLinear(%x5, %w, %s) {act_mode="dynamic"} @five` + "\n" + `output %e: f32[batch, 2]`,
			ErrShapeMismatch, `node "five"`, `input "x5" has 5 channels, weight "w" has K = 4`},
		{"twin read in f32", `%out = Add(%p, %d) @sum`, `%out = Add(%p, %d) @sum` + "\n" + `%leak = Relu(%yq) @leak` + "\n" + `output %leak: f32[batch, sequence, 4]`,
			ErrMalformed, `node "ln"`, `read by node "leak" (Relu) as input 0`},
		{"twin as residual", `%d = sqc.QLinear(%yq, %w, %s) {act_mode="dynamic"} @dynamic`, `%d0 = sqc.QLinear(%yq, %w, %s) {act_mode="dynamic"} @dynamic` + "\n" + `%d = sqc.QLinear(%x, %w, %s, _, %yq) {act_mode="dynamic"} @resid`,
			ErrMalformed, `node "ln"`, `read by node "resid" (sqc.QLinear) as input 4`},
		{"twin is an output", `output %y: f32[batch, sequence, 4]`, `output %y: f32[batch, sequence, 4]` + "\n" + `output %yq: f32[batch, sequence, 4]`,
			ErrMalformed, `node "ln"`, `smoothed output "yq" is a graph output`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(quantGraph, c.old) {
				t.Fatalf("test edit %q does not apply", c.old)
			}
			g := parseBody(t, 17, strings.Replace(quantGraph, c.old, c.new, 1))
			g.Meta["source"] = "bad.sqc"
			if err := g.Verify(); err != nil {
				t.Fatalf("the structural level must accept the graph: %v", err)
			}
			err := g.VerifyAt(VerifyQuantized)
			if err == nil {
				t.Fatal("VerifyQuantized accepted the graph")
			}
			msg := err.Error()
			if !errors.Is(err, c.is) || !errors.Is(err, ErrBadInput) || !strings.Contains(msg, c.node) || !strings.Contains(msg, c.want) || !strings.HasPrefix(msg, "bad.sqc: ") {
				t.Errorf("err = %v\nwant bad.sqc, %s, %q and %v", err, c.node, c.want, c.is)
			}
		})
	}
}

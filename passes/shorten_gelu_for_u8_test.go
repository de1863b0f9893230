package passes

import (
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// TestShortenGeluForU8: the FFN's GELU QLinear writes u8 for the next
// QLinear once quantisation is explicit; with a code step of 0.004 (>=
// gelu.ShortMinStep) its act becomes the short form of its GELU, with 0.001
// or an f32 output (dynamic quantisation) it stays. The shortened graph
// runs within a code step's worth of the full one, and the interpreter
// agrees with the engine on it.
func TestShortenGeluForU8(t *testing.T) {
	for _, c := range []struct {
		name         string
		graph        string
		modes        *strings.Replacer
		before, want qgemm.Act
	}{
		{"erf", qffn, staticModes, qgemm.ActGelu, qgemm.ActGeluU8},
		{"tanh", strings.Replace(qffn, "sqc.Gelu(%f1)", `sqc.Gelu(%f1) {approximate="tanh"}`, 1), staticModes, qgemm.ActGeluTanh, qgemm.ActGeluTanhU8},
		{"small step", qffn, strings.NewReplacer("MODE1", `act_scale=0.03, act_zero_point=128`, "MODE2", `act_scale=0.001, act_zero_point=20`), qgemm.ActGelu, qgemm.ActGelu},
		{"f32 output", qffn, dynamicModes, qgemm.ActGelu, qgemm.ActGelu},
	} {
		t.Run(c.name, func(t *testing.T) {
			full := explicitQuant(t, applyPass(t, parseGraph(t, c.modes.Replace(c.graph)), FuseQLinearEpilogues))
			if got := actOf(t, nodeByName(t, full, "ffn1")); got != c.before {
				t.Fatalf("before the pass ffn1 has act %v, want %v\n%s", got, c.before, full.Text())
			}
			short := full.Clone()
			changed := runPasses(t, short, ShortenGeluForU8)
			if got := actOf(t, nodeByName(t, short, "ffn1")); got != c.want || changed != (c.want != c.before) {
				t.Fatalf("ffn1's act %v (changed %v), want %v\n%s", got, changed, c.want, short.Text())
			}
			if runPasses(t, short, ShortenGeluForU8) {
				t.Error("a second run changed the graph")
			}
			if !changed {
				return
			}
			pf, ps := execProgram(t, full), execProgram(t, short)
			for _, in := range fusionInputs(16) {
				want, got := execRun(t, pf, in), execRun(t, ps, in)
				if d := maxRelDiff(t, got, want); d > 0.02 {
					t.Errorf("the short GELU moved the output by %.3g (relative), want at most 0.02", d)
				}
			}
			checkFusedEquivalent(t, short, short, fusionInputs(16), 0, 0.02)
		})
	}
}

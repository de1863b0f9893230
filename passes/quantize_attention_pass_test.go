package passes

import (
	"errors"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// TestQuantizeAttentionSetsThePrecision: the default ("") and "int8" mark
// sqc.Attention int8 = 1, "fp32" leaves it (or turns it back) without the
// attribute, each reporting a change only when it makes one, and any
// other value is an invalid request naming it.
func TestQuantizeAttentionSetsThePrecision(t *testing.T) {
	g := qattnGraph(t, staticAct, staticAct, staticAct)
	att := func(g *compiler.Graph) *compiler.Node { return nodeByName(t, g, "attention") }
	for _, step := range []struct {
		attention   string
		changed     bool
		wantInt8    bool
		description string
	}{
		{AttentionFP32, false, false, "fp32 on an FP32 graph"},
		{"", true, true, "the default"},
		{AttentionINT8, false, true, "int8 on an INT8 graph"},
		{AttentionFP32, true, false, "fp32 on an INT8 graph"},
	} {
		changed, err := QuantizeAttention(QuantOptions{Attention: step.attention}).Run(g)
		if err != nil {
			t.Fatalf("%s: %v", step.description, err)
		}
		if changed != step.changed || compiler.AttentionInt8(att(g)) != step.wantInt8 {
			t.Errorf("%s: changed %v, int8 %v; want %v, %v (%s)", step.description, changed, compiler.AttentionInt8(att(g)), step.changed, step.wantInt8, nodeText(g, att(g)))
		}
		if err := g.VerifyAt(compiler.VerifyQuantized); err != nil {
			t.Errorf("%s: %v", step.description, err)
		}
	}
	if _, err := QuantizeAttention(QuantOptions{Attention: "bf16"}).Run(g); !errors.Is(err, compiler.ErrInvalidRequest) {
		t.Errorf("attention bf16: %v, want an invalid request", err)
	}
	for in, want := range map[string]string{"": AttentionINT8, "int8": AttentionINT8, "fp32": AttentionFP32} {
		if got, err := AttentionPrecision(in); got != want || err != nil {
			t.Errorf("AttentionPrecision(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

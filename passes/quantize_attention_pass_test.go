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

// TestINT8AttentionWritesU8: after MaterializeQuantize, WriteU8Directly
// makes INT8 attention write the u8 codes its output projection reads,
// with that Quantize's parameters (FP32 attention keeps the Quantize);
// QuantizeAttention to fp32 splits them back into f32 attention and the
// Quantize, and to int8 followed by WriteU8Directly fuses them again. The
// interpreter gives every form the same bits.
func TestINT8AttentionWritesU8(t *testing.T) {
	g := qattnGraph(t, staticAct, staticAct, staticAct)
	materialized := applyPass(t, g, MaterializeQuantize, DeduplicateQuantize)
	int8 := applyPass(t, materialized, QuantizeAttention(QuantOptions{}))
	fused := applyPass(t, int8, WriteU8Directly)
	att := nodeByName(t, fused, "attention")
	scale, zp, ok := compiler.U8Output(att)
	if !ok || scale != 0.01 || zp != 128 {
		t.Fatalf("INT8 attention %s, want the u8 output of scale 0.01 and zero point 128", nodeText(fused, att))
	}
	if v := valueInfo(fused, att.Outputs[0]); v == nil || v.DType != compiler.Uint8 {
		t.Fatalf("attention output %v, want u8", v)
	}
	quantizes := func(g *compiler.Graph) int {
		n := 0
		for _, nd := range g.Nodes {
			if nd.Op == "sqc.Quantize" {
				n++
			}
		}
		return n
	}
	// The projections' shared input is the LayerNorm's u8 output.
	if n := quantizes(fused); n != 0 {
		t.Errorf("%d sqc.Quantize left, want none", n)
	}
	for _, in := range qattnInputs() {
		wantEquivalent(t, int8, fused, in, 0)
	}
	fp32 := applyPass(t, materialized, QuantizeAttention(QuantOptions{Attention: AttentionFP32}), WriteU8Directly)
	if _, _, ok := compiler.U8Output(nodeByName(t, fp32, "attention")); ok {
		t.Fatal("FP32 attention writes u8")
	}
	if n := quantizes(fp32); n != 1 {
		t.Errorf("FP32 attention: %d sqc.Quantize, want its own", n)
	}

	split := applyPass(t, fused, QuantizeAttention(QuantOptions{Attention: AttentionFP32}))
	if n := quantizes(split); n != 1 {
		t.Errorf("split: %d sqc.Quantize, want the attention's", n)
	}
	if _, _, ok := compiler.U8Output(nodeByName(t, split, "attention")); ok {
		t.Fatalf("attention made FP32 still writes u8: %s", nodeText(split, nodeByName(t, split, "attention")))
	}
	q := nodeByName(t, split, "attention/quantize")
	if q.AttrFloat("scale", 0) != 0.01 || q.AttrInt("zero_point", 0) != 128 || q.Outputs[0] != att.Outputs[0] {
		t.Errorf("split-off quantisation %s, want scale 0.01, zero point 128, writing %s", nodeText(split, q), att.Outputs[0])
	}
	again := applyPass(t, split, QuantizeAttention(QuantOptions{}), WriteU8Directly)
	if _, _, ok := compiler.U8Output(nodeByName(t, again, "attention")); !ok {
		t.Fatal("attention made INT8 again does not write u8")
	}
	for _, in := range qattnInputs() {
		wantEquivalent(t, fp32, split, in, 0)
		wantEquivalent(t, fused, again, in, 0)
	}
}

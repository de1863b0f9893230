package compiler

import (
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// TestGeluApproximate: sqc.Gelu takes approximate "none" (the default) or
// "tanh", anything else is a verifier error, and EpilogueAct maps each
// form to its GEMM epilogue.
func TestGeluApproximate(t *testing.T) {
	for _, c := range []struct {
		attrs string
		want  qgemm.Act
	}{
		{"", qgemm.ActGelu},
		{` {approximate="none"}`, qgemm.ActGelu},
		{` {approximate="tanh"}`, qgemm.ActGeluTanh},
	} {
		g, err := inferText(t, 17, "input %x: f32[2, 3]\n%y = sqc.Gelu(%x)"+c.attrs)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Verify(); err != nil {
			t.Fatalf("%q: %v", c.attrs, err)
		}
		if act, ok := EpilogueAct(g.Nodes[0]); !ok || act != c.want {
			t.Errorf("%q: EpilogueAct = %v, %v; want %v", c.attrs, act, ok, c.want)
		}
	}
	g, err := inferText(t, 17, "input %x: f32[2, 3]\n"+`%y = sqc.Gelu(%x) {approximate="fast"}`)
	if err == nil {
		err = g.Verify()
	}
	if err == nil || !strings.Contains(err.Error(), "approximate") {
		t.Errorf("approximate=fast: err = %v, want one naming approximate", err)
	}
	if _, ok := EpilogueAct(&Node{Op: "sqc.Gelu", Attrs: Attrs{"approximate": StringAttr("fast")}}); ok {
		t.Error("EpilogueAct accepted approximate=fast")
	}
	if act, ok := EpilogueAct(&Node{Op: "Relu"}); !ok || act != qgemm.ActRelu {
		t.Errorf("EpilogueAct(Relu) = %v, %v", act, ok)
	}
	if _, ok := EpilogueAct(&Node{Op: "Tanh"}); ok {
		t.Error("EpilogueAct(Tanh) is an epilogue")
	}
}

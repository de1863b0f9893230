package compiler

import (
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// TestEinsumForms: the verifier takes Einsum's outer product of two
// vectors, with any two letters and spaces, and refuses other equations
// naming the equation.
func TestEinsumForms(t *testing.T) {
	for eq, ok := range map[string]bool{
		"i,j->ij": true, "a, b -> ab": true, "I,j->Ij": true,
		"i,i->ii": false, "i,j->ji": false, "ij,jk->ik": false, "i,j": false, "i->i": false, "i,j,k->ijk": false, "1,2->12": false,
	} {
		g, err := inferText(t, 14, "input %a: f32[3]\ninput %b: f32[4]\n%y = Einsum(%a, %b) {equation=\""+eq+"\"}")
		if err == nil {
			err = g.Verify()
		}
		switch {
		case ok && err != nil:
			t.Errorf("%q: %v", eq, err)
		case !ok && (err == nil || !strings.Contains(err.Error(), eq)):
			t.Errorf("%q: err = %v, want one naming the equation", eq, err)
		}
	}
}

// TestSiluEpilogueAct: the GEMM epilogue absorbs sqc.Silu as ActSilu, and
// not the Sigmoid it is made of.
func TestSiluEpilogueAct(t *testing.T) {
	if act, ok := EpilogueAct(&Node{Op: "sqc.Silu"}); !ok || act != qgemm.ActSilu {
		t.Errorf("EpilogueAct(sqc.Silu) = %v, %v", act, ok)
	}
	if _, ok := EpilogueAct(&Node{Op: "Sigmoid"}); ok {
		t.Error("EpilogueAct(Sigmoid) is an activation")
	}
}

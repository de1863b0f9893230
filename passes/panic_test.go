package passes

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

const namedChain = `graph "chain" opset 17 {
  meta "source" = "chain.sqc"
  input %x: f32[batch, 4]
  %a = Neg(%x) @neg
  %b = Relu(%a) @relu
  output %b: f32[batch, 4]
}`

func wantPanicError(t *testing.T, err error, want ...string) {
	t.Helper()
	var pe *PanicError
	if !errors.As(err, &pe) || !errors.Is(err, compiler.ErrInternal) || errors.Is(err, compiler.ErrBadInput) {
		t.Fatalf("err = %v (%T), want a *PanicError matching ErrInternal and not ErrBadInput", err, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err = %q, want it to say %q", err, w)
		}
	}
	if len(pe.Stack) == 0 {
		t.Error("no stack kept for the bug report")
	}
}

// TestRunRecoversPanics: a panic in a pass becomes an error naming the
// pass, the model file, the panic and where it was raised — not a crash,
// and not bad input, even when the pass panicked with a bad-input error.
func TestRunRecoversPanics(t *testing.T) {
	explode := Pass{Name: "Explode", Run: func(g *compiler.Graph) (bool, error) {
		var m map[string]int
		//lint:ignore SA5000 the pass must panic: this is the panic under test
		m["x"]++ // assignment to entry in nil map
		return false, nil
	}}
	err := Run(parseGraph(t, namedChain), []Pass{EliminateDeadNodes, explode, FoldConstants}, Options{CheckIR: true})
	wantPanicError(t, err, "internal error: chain.sqc: pass Explode panicked: assignment to entry in nil map", "(at panic_test.go:")

	badInput := Pass{Name: "Blame", Run: func(g *compiler.Graph) (bool, error) {
		panic(compiler.BadInput("x.onnx", "node", errors.New("not really")))
	}}
	wantPanicError(t, Run(parseGraph(t, namedChain), []Pass{badInput}, Options{}), "pass Blame panicked", "not really")
}

// TestRunNamesThePanickingNode: a pass that keeps a cursor gets the node
// it was at named, through ToFixpoint too.
func TestRunNamesThePanickingNode(t *testing.T) {
	atRelu := Pass{Name: "BreakOnRelu", Run: func(g *compiler.Graph) (bool, error) {
		var cur cursor
		defer cur.annotate()
		for _, n := range g.Nodes {
			cur.n = n
			if n.Op == "Relu" {
				panic(fmt.Sprintf("cannot handle %s", n.Op))
			}
		}
		return false, nil
	}}
	for _, p := range []Pass{atRelu, ToFixpoint(atRelu)} {
		err := Run(parseGraph(t, namedChain), []Pass{p}, Options{})
		wantPanicError(t, err, `internal error: chain.sqc: pass BreakOnRelu panicked at node "relu" (Relu): cannot handle Relu (at panic_test.go:`)
	}
	// An unnamed node is named by its output.
	err := Run(parseGraph(t, reluChain), []Pass{atRelu}, Options{})
	wantPanicError(t, err, `pass BreakOnRelu panicked at the Relu node producing "b": cannot handle Relu`)
	// Before the loop reaches a node there is none to name.
	early := Pass{Name: "Early", Run: func(g *compiler.Graph) (bool, error) {
		var cur cursor
		defer cur.annotate()
		panic("at once")
	}}
	wantPanicError(t, Run(parseGraph(t, namedChain), []Pass{early}, Options{}), "chain.sqc: pass Early panicked: at once")
}

// TestRunNamesTheNodeOfARealPass: Quantize given a weight whose data is
// shorter than its shape (which nothing verified before the pass) panics
// in QuantizeWeights; the error names Quantize and the Linear.
func TestRunNamesTheNodeOfARealPass(t *testing.T) {
	g := parseGraph(t, `graph "lin" opset 17 {
  meta "source" = "lin.sqc"
  input %x: f32[batch, sequence, 4]
  init %w: f32[4, 3] = splat(0.5)
  %y = sqc.Linear(%x, %w) @dense
  output %y: f32[batch, sequence, 3]
}`)
	w := g.Initializers["w"]
	w.F32 = w.F32[:5]
	err := Run(g, []Pass{Quantize(nil, QuantOptions{Act: compiler.QLinearDynamic})}, Options{CheckIR: true})
	wantPanicError(t, err, `lin.sqc: pass Quantize panicked at node "dense" (sqc.Linear): runtime error: index out of range`, "(at quantize.go:")
}

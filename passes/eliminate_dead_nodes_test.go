package passes

import (
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

func TestEliminateDeadNodes(t *testing.T) {
	g := parseGraph(t, `graph "dead" opset 17 {
  input %x: f32[batch, 4]
  init %unused: f32[4] = [1, 2, 3, 4]
  init %one: f32[] = [1]
  %a = Identity(%x)
  %b = Relu(%a)
  %dead = Neg(%x)
  %dead2 = Add(%dead, %unused)
  %c = Add(%b, %one)
  %y = Identity(%c)
  output %y: f32[batch, 4]
}`)
	after := applyPass(t, g, EliminateDeadNodes)
	wantOps(t, after, map[string]int{"Relu": 1, "Add": 1})
	if _, ok := after.Initializers["unused"]; ok {
		t.Error("unused initializer survived")
	}
	if after.Nodes[len(after.Nodes)-1].Outputs[0] != "y" {
		t.Errorf("graph output not produced under its own name:\n%s", after.Text())
	}
	wantEquivalent(t, g, after, map[string]*compiler.Tensor{"x": randomF32(1, 3, 4)}, 0)
}

// An Identity from a graph input (or initializer) to a graph output is the
// only way to name that output, so it stays.
func TestEliminateDeadNodesKeepsInterfaceIdentity(t *testing.T) {
	g := parseGraph(t, `graph "passthrough" opset 17 {
  input %x: f32[2]
  %y = Identity(%x)
  output %y: f32[2]
}`)
	if changed := runPasses(t, g, EliminateDeadNodes); changed {
		t.Errorf("graph changed:\n%s", g.Text())
	}
	wantOps(t, g, map[string]int{"Identity": 1})
}

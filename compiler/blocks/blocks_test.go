package blocks

import (
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// TestFreshNames: in a graph with names of its own, the builder's nodes
// and constants take fresh names (an existing "const.one" of another value
// is not reused), and a constant asked for twice is made once.
func TestFreshNames(t *testing.T) {
	g := compiler.NewGraph("g")
	g.Inputs = []*compiler.Value{{Name: "x", DType: compiler.Float32, Shape: compiler.Shape{{Size: 2}}}}
	g.Initializers["const.one"] = compiler.NewTensor(compiler.Float32) // 0, not 1
	g.Nodes = []*compiler.Node{{Name: "y/Erf", Op: "Erf", Inputs: []string{"x"}, Outputs: []string{"y/Erf"}}}
	b := Builder{G: g, Fresh: g.Namer().Fresh}
	y := b.GeluErf("x", "y")
	b.GeluErf(y, "y")
	if err := g.Verify(); err != nil {
		t.Fatal(err)
	}
	ones := 0
	for name, c := range g.Initializers {
		if name != "const.one" && len(c.F32) == 1 && c.F32[0] == 1 {
			ones++
		}
	}
	if ones != 1 || g.Initializers["const.one"].F32[0] != 0 {
		t.Errorf("%d constants of 1 besides the graph's own const.one (= %g); want 1 and 0", ones, g.Initializers["const.one"].F32[0])
	}
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		if seen[n.Name] {
			t.Errorf("node name %s used twice", n.Name)
		}
		seen[n.Name] = true
	}
}

// TestKeptNames: without Fresh, names are as given and a constant already
// in the graph under the wanted name is shared (compiler/hf's models name
// every value themselves).
func TestKeptNames(t *testing.T) {
	g := compiler.NewGraph("g")
	b := Builder{G: g}
	if got := b.Scalar("const.half", 0.5); got != "const.half" {
		t.Errorf("Scalar named %q", got)
	}
	if got := b.Op("Relu", "act", "x"); got != "act" || g.Nodes[0].Name != "act" {
		t.Errorf("Op named %q, node %q", got, g.Nodes[0].Name)
	}
	again := Builder{G: g}
	if got := again.Scalar("const.half", 0.5); got != "const.half" || len(g.Initializers) != 1 {
		t.Errorf("second builder made %q, %d initializers", got, len(g.Initializers))
	}
}

package compiler

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const diamond = `
input %x: f32[batch, 4]
init %w: f32[4, 4] = splat(0.5)
init %unused: f32[2] = [1, 2]
%a = MatMul(%x, %w) @a
%b = Relu(%a) @b
%c = Neg(%a) @c
%d = Add(%b, %c) @d
%dead = Sigmoid(%a) @dead
%dead2 = Tanh(%dead) @dead2
output %d: f32[batch, 4]`

func TestCloneIsDeep(t *testing.T) {
	g := parseBody(t, 14, diamond)
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	before := g.Text()
	c := g.Clone()
	if c.Text() != before {
		t.Fatal("clone prints differently")
	}
	c.Name = "other"
	c.Inputs[0].Shape[0] = Dim{Size: 3}
	c.Initializers["w"].F32[0] = 9
	c.Nodes[0].Inputs[0] = "y"
	c.Nodes[3].Attrs = map[string]Attr{"k": IntAttr(1)}
	c.Values["a"].Shape[1] = Dim{Size: 7}
	c.Meta["k"] = "v"
	c.Outputs[0].Name = "zz"
	if g.Text() != before {
		t.Fatal("mutating the clone changed the original")
	}
	// Attribute slices and tensors are copied too.
	n := &Node{Op: "Transpose", Attrs: map[string]Attr{"perm": IntsAttr(1, 0), "t": TensorAttr(NewTensor(Int64, 2))}}
	m := n.Clone()
	m.Attrs["perm"].Ints[0] = 5
	m.Attrs["t"].Tensor.I64[0] = 5
	if n.Attrs["perm"].Ints[0] != 1 || n.Attrs["t"].Tensor.I64[0] != 0 {
		t.Fatal("Node.Clone shares attribute data")
	}
}

func TestProducersConsumers(t *testing.T) {
	g := parseBody(t, 14, diamond+"\n%sq = Mul(%d, %d) @sq")
	prod := g.Producers()
	if prod["a"].Name != "a" || prod["d"].Name != "d" || prod["x"] != nil || prod["w"] != nil {
		t.Errorf("producers wrong: %v", prod)
	}
	names := func(ns []*Node) string {
		var s []string
		for _, n := range ns {
			s = append(s, n.Name)
		}
		return strings.Join(s, ",")
	}
	cons := g.Consumers()
	for value, want := range map[string]string{"a": "b,c,dead", "x": "a", "d": "sq", "w": "a", "dead2": ""} {
		if got := names(cons[value]); got != want {
			t.Errorf("consumers of %s: %q, want %q", value, got, want)
		}
	}
	if !g.IsOutput("d") || g.IsOutput("a") {
		t.Error("IsOutput wrong")
	}
}

func TestRemoveUnused(t *testing.T) {
	g := parseBody(t, 14, diamond)
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	if n := g.RemoveUnused(); n != 2 {
		t.Errorf("removed %d nodes, want 2", n)
	}
	var ops []string
	for _, n := range g.Nodes {
		ops = append(ops, n.Name)
	}
	if strings.Join(ops, ",") != "a,b,c,d" {
		t.Errorf("nodes left: %v", ops)
	}
	if _, ok := g.Initializers["unused"]; ok {
		t.Error("unused initializer kept")
	}
	if _, ok := g.Initializers["w"]; !ok {
		t.Error("used initializer removed")
	}
	if _, ok := g.Values["dead"]; ok {
		t.Error("value of removed node kept")
	}
	if err := g.Verify(); err != nil {
		t.Fatal(err)
	}
	if g.RemoveUnused() != 0 {
		t.Error("second RemoveUnused removed more")
	}
}

func TestSortTopological(t *testing.T) {
	g := parseBody(t, 14, diamond)
	want := g.Text()
	slices.Reverse(g.Nodes)
	if err := g.Verify(); err == nil {
		t.Fatal("reversed graph verified")
	}
	if err := g.SortTopological(); err != nil {
		t.Fatal(err)
	}
	if err := g.Verify(); err != nil {
		t.Fatalf("sorted graph: %v", err)
	}
	// Already-sorted graphs keep their order exactly.
	g = parseBody(t, 14, diamond)
	if err := g.SortTopological(); err != nil || g.Text() != want {
		t.Fatalf("sorting a sorted graph changed it: %v", err)
	}
	cyc := parseBody(t, 14, "input %x: f32[2]\n%a = Add(%x, %c) @p\n%b = Relu(%a) @q\n%c = Neg(%b) @r\noutput %c: f32[2]")
	order := slices.Clone(cyc.Nodes)
	err := cyc.SortTopological()
	if !errors.Is(err, ErrCyclicGraph) || !strings.Contains(err.Error(), `node "p" (Add) -> node "q" (Relu) -> node "r" (Neg)`) {
		t.Fatalf("cycle: %v", err)
	}
	if !slices.Equal(order, cyc.Nodes) {
		t.Error("failed sort changed the graph")
	}
	if err := cyc.InferShapes(); !errors.Is(err, ErrCyclicGraph) {
		t.Errorf("InferShapes on a cycle: %v", err)
	}
}

func TestNamer(t *testing.T) {
	g := parseBody(t, 14, diamond)
	nm := g.Namer()
	cases := []struct{ base, want string }{
		{"fresh", "fresh"},
		{"fresh", "fresh_1"},
		{"a", "a_1"},
		{"a", "a_2"},
		{"w", "w_1"},
		{"", "_1"},
	}
	for _, c := range cases {
		if got := nm.Fresh(c.base); got != c.want {
			t.Errorf("Fresh(%q) = %q, want %q", c.base, got, c.want)
		}
	}
	if got := g.UniqueName("d"); got != "d_1" {
		t.Errorf("UniqueName(d) = %q", got)
	}
}

func TestValueInfo(t *testing.T) {
	g := parseBody(t, 14, diamond)
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"x": "f32[batch, 4]", "w": "f32[4, 4]", "a": "f32[batch, 4]", "d": "f32[batch, 4]"} {
		v, ok := g.ValueInfo(name)
		if !ok || typeString(v.DType, v.Shape) != want || v.Name != name {
			t.Errorf("ValueInfo(%s) = %v, want %s", name, v, want)
		}
	}
	if _, ok := g.ValueInfo("nope"); ok {
		t.Error("ValueInfo found an undefined name")
	}
}

func TestSummary(t *testing.T) {
	g := parseBody(t, 14, diamond+"\n%e = Relu(%d) @e")
	g.Meta["model_type"] = "bert"
	s := g.Summary()
	if s.Params != 18 || s.ParamBytes != 72 || s.Initializers != 2 || s.Nodes != 7 {
		t.Errorf("counts: %+v", s)
	}
	wantOps := []OpCount{{"Relu", 2}, {"Add", 1}, {"MatMul", 1}, {"Neg", 1}, {"Sigmoid", 1}, {"Tanh", 1}}
	if !slices.Equal(s.Ops, wantOps) {
		t.Errorf("histogram %v, want %v", s.Ops, wantOps)
	}
	text := s.String()
	for _, want := range []string{`graph "t", opset 14`, "model_type = bert", "x: f32[batch, 4]", "parameters: 18 in 2 initializers, 72 B", "Relu    2"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 11171074: "11,171,074", -1234: "-1,234"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %s", n, got)
		}
	}
	for n, want := range map[int64]string{1023: "1023 B", 1024: "1.0 KiB", 44684296: "42.6 MiB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %s, want %s", n, got, want)
		}
	}
}

package compiler

import (
	"container/heap"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Utilities passes need: deep copies, producer/consumer maps, dead-code
// removal, topological sorting and fresh names.

// Attribute constructors, for frontends, passes and tests.
func IntAttr(v int64) Attr               { return Attr{Kind: AttrInt, Int: v} }
func FloatAttr(v float32) Attr           { return Attr{Kind: AttrFloat, Float: v} }
func StringAttr(v string) Attr           { return Attr{Kind: AttrString, String: v} }
func IntsAttr(v ...int64) Attr           { return Attr{Kind: AttrInts, Ints: v} }
func FloatsAttr(v ...float32) Attr       { return Attr{Kind: AttrFloats, Floats: v} }
func StringsAttr(v ...string) Attr       { return Attr{Kind: AttrStrings, Strings: v} }
func TensorAttr(t *Tensor) Attr          { return Attr{Kind: AttrTensor, Tensor: t} }
func (n *Node) HasAttr(name string) bool { return n.Attrs.Has(name) }

// AttrString returns the string attribute name, or def when absent.
func (n *Node) AttrString(name, def string) string { return n.Attrs.String(name, def) }

// AttrFloats returns the floats attribute name.
func (n *Node) AttrFloats(name string) ([]float32, bool) { return n.Attrs.Floats(name) }

// AttrTensor returns the tensor attribute name, or nil.
func (n *Node) AttrTensor(name string) *Tensor { return n.Attrs.Tensor(name) }

// Clone returns a deep copy of the node.
func (n *Node) Clone() *Node {
	c := &Node{Name: n.Name, Op: n.Op, Inputs: slices.Clone(n.Inputs), Outputs: slices.Clone(n.Outputs)}
	if n.Attrs != nil {
		c.Attrs = make(map[string]Attr, len(n.Attrs))
		for k, a := range n.Attrs {
			c.Attrs[k] = a.Clone()
		}
	}
	return c
}

// Clone returns a deep copy of the graph: no slice, map, node or tensor is
// shared with g.
func (g *Graph) Clone() *Graph {
	c := &Graph{
		Name:         g.Name,
		Opset:        g.Opset,
		Initializers: make(map[string]*Tensor, len(g.Initializers)),
		Values:       make(map[string]*Value, len(g.Values)),
		Meta:         maps.Clone(g.Meta),
		elided:       maps.Clone(g.elided),
	}
	if c.Meta == nil {
		c.Meta = map[string]string{}
	}
	for _, v := range g.Inputs {
		c.Inputs = append(c.Inputs, v.Clone())
	}
	for _, v := range g.Outputs {
		c.Outputs = append(c.Outputs, v.Clone())
	}
	for k, t := range g.Initializers {
		c.Initializers[k] = t.Clone()
	}
	for _, n := range g.Nodes {
		c.Nodes = append(c.Nodes, n.Clone())
	}
	for k, v := range g.Values {
		c.Values[k] = v.Clone()
	}
	return c
}

// Producers maps each value name to the node that produces it (the first,
// should a broken graph have several).
func (g *Graph) Producers() map[string]*Node {
	m := map[string]*Node{}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if _, dup := m[o]; o != "" && !dup {
				m[o] = n
			}
		}
	}
	return m
}

// Consumers maps each value name to the nodes that read it, in node order;
// a node reading a value twice is listed once.
func (g *Graph) Consumers() map[string][]*Node {
	m := map[string][]*Node{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in == "" {
				continue
			}
			if l := m[in]; len(l) > 0 && l[len(l)-1] == n {
				continue
			}
			m[in] = append(m[in], n)
		}
	}
	return m
}

// IsOutput reports whether name is a graph output.
func (g *Graph) IsOutput(name string) bool {
	return slices.ContainsFunc(g.Outputs, func(v *Value) bool { return v.Name == name })
}

// ValueInfo returns dtype and shape of any named value: a graph input, an
// initializer (its static shape), an intermediate in Values or a graph
// output. The result is a copy.
func (g *Graph) ValueInfo(name string) (*Value, bool) {
	for _, v := range g.Inputs {
		if v.Name == name {
			return v.Clone(), true
		}
	}
	if t, ok := g.Initializers[name]; ok && t != nil {
		return &Value{Name: name, DType: t.DType, Shape: StaticShape(t.Shape...)}, true
	}
	if v, ok := g.Values[name]; ok && v != nil {
		c := v.Clone()
		c.Name = name
		return c, true
	}
	for _, v := range g.Outputs {
		if v.Name == name {
			return v.Clone(), true
		}
	}
	return nil, false
}

// RemoveUnused deletes nodes none of whose outputs reach a graph output,
// then initializers and Values entries that nothing refers to. It returns
// the number of nodes removed. Graph inputs are kept: they are the
// interface.
func (g *Graph) RemoveUnused() int {
	live := map[string]bool{}
	for _, v := range g.Outputs {
		live[v.Name] = true
	}
	keep := make([]bool, len(g.Nodes))
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		if !slices.ContainsFunc(n.Outputs, func(o string) bool { return live[o] }) {
			continue
		}
		keep[i] = true
		for _, in := range n.Inputs {
			live[in] = true
		}
	}
	var nodes []*Node
	for i, n := range g.Nodes {
		if keep[i] {
			nodes = append(nodes, n)
			for _, o := range n.Outputs {
				live[o] = true
			}
		}
	}
	removed := len(g.Nodes) - len(nodes)
	g.Nodes = nodes
	for name := range g.Initializers {
		if !live[name] {
			delete(g.Initializers, name)
		}
	}
	for name := range g.Values {
		if !live[name] {
			delete(g.Values, name)
		}
	}
	return removed
}

// nodeLabel names a node in messages: `node "name" (Op)`, or by index when
// unnamed.
func nodeLabel(i int, n *Node) string {
	if n.Name != "" {
		return fmt.Sprintf("node %q (%s)", n.Name, n.Op)
	}
	return fmt.Sprintf("node #%d (%s)", i, n.Op)
}

// topoOrder returns node indices in a topological order that keeps the
// existing order where it can. On a cycle it returns the indices of the
// nodes on one cycle and ok false.
func (g *Graph) topoOrder() (order []int, cycle []int, ok bool) {
	producer := map[string]int{}
	for i, n := range g.Nodes {
		for _, o := range n.Outputs {
			if _, dup := producer[o]; o != "" && !dup {
				producer[o] = i
			}
		}
	}
	deps := make([][]int, len(g.Nodes)) // producers each node waits for
	users := make([][]int, len(g.Nodes))
	pending := make([]int, len(g.Nodes))
	for i, n := range g.Nodes {
		seen := map[int]bool{}
		for _, in := range n.Inputs {
			p, ok := producer[in]
			if !ok || seen[p] {
				continue
			}
			seen[p] = true
			deps[i] = append(deps[i], p)
			users[p] = append(users[p], i)
			pending[i]++
		}
	}
	ready := &intHeap{}
	for i, c := range pending {
		if c == 0 {
			heap.Push(ready, i)
		}
	}
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		order = append(order, i)
		for _, u := range users[i] {
			if pending[u]--; pending[u] == 0 {
				heap.Push(ready, u)
			}
		}
	}
	if len(order) == len(g.Nodes) {
		return order, nil, true
	}
	// Walk back along unfinished dependencies from an unfinished node;
	// every unfinished node has one, so the walk must revisit a node.
	start := slices.IndexFunc(pending, func(c int) bool { return c > 0 })
	pos := map[int]int{}
	var path []int
	for i := start; ; {
		if p, seen := pos[i]; seen {
			cycle = slices.Clone(path[p:])
			slices.Reverse(cycle)
			return order, cycle, false
		}
		pos[i] = len(path)
		path = append(path, i)
		for _, d := range deps[i] {
			if pending[d] > 0 {
				i = d
				break
			}
		}
	}
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// cycleError describes a cycle found by topoOrder.
func (g *Graph) cycleError(cycle []int) error {
	// Start from the earliest node, so the message is stable.
	first := slices.Index(cycle, slices.Min(cycle))
	cycle = slices.Concat(cycle[first:], cycle[:first])
	parts := make([]string, len(cycle))
	for k, i := range cycle {
		parts[k] = nodeLabel(i, g.Nodes[i])
	}
	return fmt.Errorf("%w: %s -> back to the first", ErrCyclicGraph, strings.Join(parts, " -> "))
}

// SortTopological reorders Nodes so every node follows the producers of its
// inputs, keeping the existing order where possible (passes that append
// nodes call it). On a cycle it returns an error wrapping ErrCyclicGraph and
// leaves the graph unchanged.
func (g *Graph) SortTopological() error {
	order, cycle, ok := g.topoOrder()
	if !ok {
		return g.cycleError(cycle)
	}
	nodes := make([]*Node, len(order))
	for k, i := range order {
		nodes[k] = g.Nodes[i]
	}
	g.Nodes = nodes
	return nil
}

// Namer hands out names not yet used in a graph. It snapshots the graph's
// names when made; names it returns are reserved.
type Namer struct {
	used map[string]bool
	next map[string]int
}

// Namer returns a Namer knowing every value, initializer and node name in g.
func (g *Graph) Namer() *Namer {
	used := map[string]bool{}
	for _, v := range g.Inputs {
		used[v.Name] = true
	}
	for _, v := range g.Outputs {
		used[v.Name] = true
	}
	for name := range g.Initializers {
		used[name] = true
	}
	for name := range g.Values {
		used[name] = true
	}
	for _, n := range g.Nodes {
		used[n.Name] = true
		for _, s := range n.Inputs {
			used[s] = true
		}
		for _, s := range n.Outputs {
			used[s] = true
		}
	}
	return &Namer{used: used, next: map[string]int{}}
}

// Fresh returns base if it is unused, else base_1, base_2, ...; the name is
// reserved.
func (nm *Namer) Fresh(base string) string {
	name := base
	for name == "" || nm.used[name] {
		nm.next[base]++
		name = fmt.Sprintf("%s_%d", base, nm.next[base])
	}
	nm.used[name] = true
	return name
}

// UniqueName returns a name not used anywhere in g, derived from base.
// Passes creating many names should use one Namer instead.
func (g *Graph) UniqueName(base string) string { return g.Namer().Fresh(base) }

func sortedAttrNames(m map[string]Attr) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

package passes

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// DeduplicateNodes keeps one node per computation: a node with the same
// op, attributes and inputs as an earlier one (inputs compared after the
// renames this pass made, and small initializers by value: dtype, shape
// and bits, since exporters write one copy of a constant per layer) is
// dropped, and its readers read the earlier node's outputs. Every op in
// the table is a function of its inputs and attributes alone, so the
// values are the same, bit for bit. The hub code of NomicBERT exports its
// rotary tables once per layer (Range, Einsum, Cos, Sin, einops' repeat):
// they become one computation, as the HF frontend builds them. Not merged:
// nodes with tensor attributes, with no outputs, or whose outputs are graph
// outputs (their names are the graph's interface).
var DeduplicateNodes = Pass{Name: "DeduplicateNodes", Run: deduplicateNodes}

// smallConstElements is the size up to which an initializer is compared by
// value (scalars, shapes, axes, inverse-frequency vectors); larger ones,
// weights, by name: comparing them would cost more than it finds.
const smallConstElements = 1024

func deduplicateNodes(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	isOutput := map[string]bool{}
	for _, o := range g.Outputs {
		isOutput[o.Name] = true
	}
	constKeys := map[string]string{} // initializer name -> its value's key
	inputKey := func(name string) string {
		if k, ok := constKeys[name]; ok {
			return k
		}
		t := g.Initializers[name]
		if t == nil || t.Len() > smallConstElements {
			return "v:" + name
		}
		k, ok := constValueKey(t)
		if !ok {
			return "v:" + name
		}
		constKeys[name] = "c:" + k
		return "c:" + k
	}
	return keepFirst(g, &cur, func(n *compiler.Node) (string, bool) { return nodeKey(n, inputKey, isOutput) }), nil
}

// keepFirst drops every node whose key (where key reports one) equals an
// earlier node's, its readers reading that node's outputs instead; keys
// are taken after the renames, so chains of copies collapse in one pass.
// Keys must count the outputs. It reports whether it dropped any.
func keepFirst(g *compiler.Graph, cur *cursor, key func(n *compiler.Node) (string, bool)) bool {
	first := map[string]*compiler.Node{}
	rename := map[string]string{}
	kept := make([]*compiler.Node, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		cur.n = n
		for i, in := range n.Inputs {
			if to, ok := rename[in]; ok {
				n = renamedInput(n, i, to)
			}
		}
		k, ok := key(n)
		if !ok {
			kept = append(kept, n)
			continue
		}
		if m, dup := first[k]; dup {
			for i, o := range n.Outputs {
				if o != "" {
					rename[o] = m.Outputs[i]
				}
			}
			continue
		}
		first[k] = n
		kept = append(kept, n)
	}
	if len(kept) == len(g.Nodes) {
		return false
	}
	g.Nodes = kept
	removeDead(g)
	return true
}

// nodeKey is a key equal for nodes computing the same outputs, and false
// for a node the pass leaves alone.
func nodeKey(n *compiler.Node, inputKey func(string) string, isOutput map[string]bool) (string, bool) {
	if len(n.Outputs) == 0 {
		return "", false
	}
	for _, o := range n.Outputs {
		if isOutput[o] {
			return "", false
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d", n.Op, len(n.Outputs))
	for _, in := range n.Inputs {
		b.WriteString("|")
		if in != "" {
			b.WriteString(inputKey(in))
		}
	}
	for _, name := range sortedAttrNames(n) {
		a := n.Attrs[name]
		fmt.Fprintf(&b, "|%s=%d:", name, a.Kind)
		switch a.Kind {
		case compiler.AttrInt:
			fmt.Fprint(&b, a.Int)
		case compiler.AttrFloat:
			fmt.Fprint(&b, math.Float32bits(a.Float))
		case compiler.AttrString:
			fmt.Fprintf(&b, "%q", a.String)
		case compiler.AttrInts:
			fmt.Fprint(&b, a.Ints)
		case compiler.AttrFloats:
			for _, f := range a.Floats {
				fmt.Fprint(&b, math.Float32bits(f), ",")
			}
		case compiler.AttrStrings:
			fmt.Fprintf(&b, "%q", a.Strings)
		default: // a tensor (or a kind added later): not compared
			return "", false
		}
	}
	return b.String(), true
}

func sortedAttrNames(n *compiler.Node) []string {
	names := make([]string, 0, len(n.Attrs))
	for name := range n.Attrs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// constValueKey identifies a tensor's dtype, shape and bits (a float's
// bits, so that -0 and 0, or two NaNs, stay apart).
func constValueKey(t *compiler.Tensor) (string, bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "%v%v:", t.DType, t.Shape)
	var data any
	switch t.DType {
	case compiler.Float32:
		bits := make([]uint32, len(t.F32))
		for i, f := range t.F32 {
			bits[i] = math.Float32bits(f)
		}
		data = bits
	case compiler.Float64:
		bits := make([]uint64, len(t.F64))
		for i, f := range t.F64 {
			bits[i] = math.Float64bits(f)
		}
		data = bits
	case compiler.Int64:
		data = t.I64
	case compiler.Int32:
		data = t.I32
	case compiler.Int8:
		data = t.I8
	case compiler.Uint8:
		data = t.U8
	case compiler.Bool:
		data = t.Bool
	default:
		return "", false
	}
	fmt.Fprint(&b, data)
	return b.String(), true
}

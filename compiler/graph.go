package compiler

import (
	"fmt"
	"sort"
)

// Dim is one dimension of a value's shape: a known Size, or a symbolic
// dimension named by Param ("batch", "sequence") whose size is fixed only at
// run time. Size is -1 when the dimension is symbolic or unknown.
type Dim struct {
	Size  int64
	Param string
}

// Known reports whether the dimension has a static size.
func (d Dim) Known() bool { return d.Param == "" && d.Size >= 0 }

func (d Dim) String() string {
	switch {
	case d.Param != "":
		return d.Param
	case d.Size < 0:
		return "?"
	}
	return fmt.Sprint(d.Size)
}

// Shape is a value's (possibly symbolic) shape. A nil Shape on a Value means
// the rank is unknown; an empty non-nil Shape is a scalar.
type Shape []Dim

// StaticShape builds a Shape of known sizes.
func StaticShape(sizes ...int64) Shape {
	s := make(Shape, len(sizes))
	for i, v := range sizes {
		s[i] = Dim{Size: v}
	}
	return s
}

// Value describes a named edge of the graph: a graph input or output, or an
// intermediate whose type and shape are known (from the model file's
// value_info or from shape inference).
type Value struct {
	Name  string
	DType DType
	Shape Shape
}

// Node is one operation. Op is the ONNX op type (or an sqc op after
// rewriting); Inputs and Outputs name values, with "" marking an omitted
// optional input, as in ONNX.
type Node struct {
	Name    string
	Op      string
	Inputs  []string
	Outputs []string
	Attrs   Attrs
}

// Graph is a whole model: a DAG of Nodes kept in topological order.
type Graph struct {
	Name  string
	Opset int64

	Inputs  []*Value
	Outputs []*Value
	// Initializers hold constant tensors (weights) by value name.
	Initializers map[string]*Tensor
	// Nodes are in topological order: every node's inputs are produced by
	// an earlier node, a graph input or an initializer.
	Nodes []*Node
	// Values holds type and shape of intermediate values where known.
	Values map[string]*Value
	// Meta carries model facts a frontend knows (source file, model_type,
	// labels as "id2label.0" = "negative", ...). Keys
	// print sorted.
	Meta map[string]string

	// elided maps the content hash of initializer data that ParseText
	// filled in for elided(...) to the hash the text gave, so that the
	// graph prints as it was parsed.
	elided map[string]string
}

// NewGraph returns an empty graph with its maps made.
func NewGraph(name string) *Graph {
	return &Graph{
		Name:         name,
		Initializers: map[string]*Tensor{},
		Values:       map[string]*Value{},
		Meta:         map[string]string{},
	}
}

// InitializerNames returns the initializer names sorted, for deterministic
// iteration.
func (g *Graph) InitializerNames() []string {
	names := make([]string, 0, len(g.Initializers))
	for n := range g.Initializers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// AttrInt returns the integer attribute name, or def when absent.
func (n *Node) AttrInt(name string, def int64) int64 { return n.Attrs.Int(name, def) }

// AttrFloat returns the float attribute name, or def when absent.
func (n *Node) AttrFloat(name string, def float32) float32 { return n.Attrs.Float(name, def) }

// AttrInts returns the ints attribute name, or nil when absent.
func (n *Node) AttrInts(name string) ([]int64, bool) { return n.Attrs.Ints(name) }

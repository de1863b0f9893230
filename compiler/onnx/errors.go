package onnx

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// Causes specific to ONNX input. They are wrapped in compiler.InputError
// like compiler's own sentinels, so errors.Is(err, compiler.ErrBadInput)
// holds for them too.
var (
	// ErrUnsupportedDType: an element type sqc does not handle (float16,
	// bfloat16, string, uint16, complex, ...).
	ErrUnsupportedDType = errors.New("unsupported dtype")
	// ErrUnsupportedFeature: a valid ONNX construct sqc does not handle
	// (sparse tensors, sequence or map types, graph-valued attributes, ...).
	ErrUnsupportedFeature = errors.New("unsupported ONNX feature")
)

// UnsupportedNode is one node whose op sqc cannot compile.
type UnsupportedNode struct {
	Node   string // node name, or "#<index>" when the node is unnamed
	Op     string // op_type
	Domain string // "" for the default ONNX domain
	Opset  int64  // opset of the node's domain (0 when the model imports none)
}

func (u UnsupportedNode) String() string {
	op := u.Op
	if u.Domain != "" {
		op = u.Domain + "." + u.Op
	}
	return fmt.Sprintf("node %s: %s (opset %d)", u.Node, op, u.Opset)
}

// UnsupportedOpsError lists every unsupported node of a model at once, so a
// user sees the whole gap in one run. It wraps compiler.ErrUnsupportedOp.
type UnsupportedOpsError struct {
	Nodes []UnsupportedNode
}

func (e *UnsupportedOpsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v in %d node(s): ", compiler.ErrUnsupportedOp, len(e.Nodes))
	for i, n := range e.Nodes {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(n.String())
	}
	return b.String()
}

func (e *UnsupportedOpsError) Unwrap() error { return compiler.ErrUnsupportedOp }

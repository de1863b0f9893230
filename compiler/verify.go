package compiler

import (
	"errors"
	"fmt"
)

// Verify checks that g is well formed and returns every problem found,
// joined (errors.Join), or nil. Each problem is an *InputError naming the
// model file (Meta["source"], when set) and the node (`node "name" (Op)`, or `node #i (Op)` when unnamed) or value, and
// wraps a sentinel where one fits (ErrUnsupportedOp, ErrMissingTensor,
// ErrDuplicate, ErrCyclicGraph, ErrDTypeMismatch, ErrShapeMismatch), so
// errors.Is works on the result.
//
// Checked: graph inputs and outputs are named, typed and unique; every
// initializer is consistent (Tensor.Check); each value has one producer;
// every op is in the op table, with the right arity and attribute kinds and
// the opset's form; every input is defined before use (Nodes are in
// topological order) and the graph has no cycle; the op table's dtype rules
// hold along the graph, and agree with declared Values and outputs; every
// graph output is produced. Shapes are checked by InferShapes, not here.
//
// Verify is VerifyAt(VerifyStructure); VerifyAt(VerifyQuantized) checks
// more of quantised graphs (verify_quant.go).
func (g *Graph) Verify() error { return g.VerifyAt(VerifyStructure) }

// VerifyLevel is how much VerifyAt checks.
type VerifyLevel int

const (
	// VerifyStructure: a well-formed graph, which the FP32 interpreter
	// can run (Verify).
	VerifyStructure VerifyLevel = iota
	// VerifyQuantized adds, for graphs after quantisation, what the INT8
	// engine and generated code rely on: every quantised operand has its
	// scales and zero point, and they have the dtypes and shapes the INT8
	// kernels take (see checkQuantized).
	VerifyQuantized
)

// VerifyAt checks g at the given level; see Verify for the form of the
// result.
func (g *Graph) VerifyAt(level VerifyLevel) error {
	v := verifier{g: g, dtypes: map[string]DType{}}
	v.checkInterface()
	v.checkNodes()
	if level >= VerifyQuantized {
		v.checkQuantized()
	}
	return errors.Join(v.errs...)
}

type verifier struct {
	g      *Graph
	errs   []error
	dtypes map[string]DType // dtype of every value defined so far
}

func (v *verifier) fail(object string, err error) {
	v.errs = append(v.errs, BadInput(v.g.Meta["source"], object, err))
}

func (v *verifier) failf(object, format string, args ...any) {
	v.fail(object, fmt.Errorf(format, args...))
}

// checkInterface covers inputs, initializers and outputs' declarations.
func (v *verifier) checkInterface() {
	g := v.g
	if g.Opset < 0 {
		v.failf("graph", "opset %d", g.Opset)
	}
	for i, in := range g.Inputs {
		obj := fmt.Sprintf("input %q", in.Name)
		switch {
		case in.Name == "":
			v.failf(fmt.Sprintf("input #%d", i), "unnamed")
			continue
		case in.DType == Undefined:
			v.failf(obj, "%w: no dtype", ErrDTypeMismatch)
		}
		if _, dup := v.dtypes[in.Name]; dup {
			v.failf(obj, "%w: graph input declared twice", ErrDuplicate)
		}
		v.dtypes[in.Name] = in.DType
	}
	for _, name := range g.InitializerNames() {
		t := g.Initializers[name]
		obj := fmt.Sprintf("initializer %q", name)
		switch {
		case name == "":
			v.failf("initializer \"\"", "unnamed")
		case t == nil:
			v.failf(obj, "%w: nil tensor", ErrMissingTensor)
			continue
		case t.DType == Undefined || t.DType.Size() == 0:
			v.failf(obj, "%w: dtype %s", ErrDTypeMismatch, t.DType)
		default:
			if err := t.Check(); err != nil {
				v.fail(obj, fmt.Errorf("%w: %w", ErrShapeMismatch, err))
			}
		}
		// An initializer may double as a graph input (its default), as
		// ONNX before IR version 4 required; the types must agree.
		if dt, isInput := v.dtypes[name]; isInput && dt != t.DType {
			v.failf(obj, "%w: %s, but graph input of that name is %s", ErrDTypeMismatch, t.DType, dt)
		}
		v.dtypes[name] = t.DType
	}
	seen := map[string]bool{}
	for i, out := range g.Outputs {
		if out.Name == "" {
			v.failf(fmt.Sprintf("output #%d", i), "unnamed")
			continue
		}
		if seen[out.Name] {
			v.failf(fmt.Sprintf("output %q", out.Name), "%w: graph output listed twice", ErrDuplicate)
		}
		seen[out.Name] = true
	}
}

func (v *verifier) checkNodes() {
	g := v.g
	// Producers by name, to tell "defined later" from "never defined".
	producedBy := map[string]int{}
	for i, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o == "" {
				continue
			}
			if prev, dup := producedBy[o]; dup {
				v.failf(nodeLabel(i, n), "%w: output %q is also produced by %s", ErrDuplicate, o, nodeLabel(prev, g.Nodes[prev]))
				continue
			}
			producedBy[o] = i
			if _, isInput := v.dtypes[o]; isInput {
				v.failf(nodeLabel(i, n), "%w: output %q is also a graph input or initializer", ErrDuplicate, o)
			}
		}
	}
	if _, cycle, ok := g.topoOrder(); !ok {
		v.fail("graph", g.cycleError(cycle))
	}
	for i, n := range g.Nodes {
		v.checkNode(i, n, producedBy)
	}
	for _, out := range g.Outputs {
		if out.Name == "" {
			continue
		}
		obj := fmt.Sprintf("output %q", out.Name)
		dt, ok := v.dtypes[out.Name]
		switch {
		case !ok:
			v.failf(obj, "%w: graph output is not produced", ErrMissingTensor)
		case dt != Undefined && out.DType != Undefined && dt != out.DType:
			v.failf(obj, "%w: declared %s, computed %s", ErrDTypeMismatch, out.DType, dt)
		}
	}
}

func (v *verifier) checkNode(i int, n *Node, producedBy map[string]int) {
	g := v.g
	label := nodeLabel(i, n)
	in := make([]DType, len(n.Inputs))
	for k, name := range n.Inputs {
		if name == "" {
			continue
		}
		dt, ok := v.dtypes[name]
		p, produced := producedBy[name]
		switch {
		case ok:
			in[k] = dt
		case produced && p == i:
			v.failf(label, "input %q is the node's own output", name)
		case produced:
			v.failf(label, "input %q is used before %s defines it (nodes not in topological order)", name, nodeLabel(p, g.Nodes[p]))
		default:
			v.failf(label, "%w: input %q is not defined", ErrMissingTensor, name)
		}
	}
	define := func(out []DType) {
		for k, o := range n.Outputs {
			if o == "" {
				continue
			}
			if _, done := v.dtypes[o]; done {
				continue // duplicate, reported already
			}
			dt := Undefined
			if k < len(out) {
				dt = out[k]
			}
			if decl, ok := g.Values[o]; ok && decl != nil && decl.DType != Undefined {
				if dt != Undefined && decl.DType != dt {
					v.failf(label, "%w: output %q declared %s, op gives %s", ErrDTypeMismatch, o, decl.DType, dt)
				}
				if dt == Undefined {
					dt = decl.DType
				}
			}
			v.dtypes[o] = dt
		}
	}
	op, ok := LookupOp(n.Op)
	if !ok {
		v.failf(label, "%w: %q is not in the op table", ErrUnsupportedOp, n.Op)
		define(nil)
		return
	}
	if err := op.CheckArity(n); err != nil {
		v.fail(label, err)
		define(nil)
		return
	}
	if err := op.CheckAttrs(n, g.Opset); err != nil {
		v.fail(label, err)
	}
	out, err := op.InferDTypes(n, in)
	if err != nil {
		v.fail(label, err)
	}
	define(out)
}

package compiler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The op table: one OpDef per op the IR accepts, the single source of truth
// for arity, attributes, dtype rules, shape rules and meaning. ONNX ops are
// defined in ops_onnx.go, sqc's own fused ops (domain "sqc", names prefixed
// "sqc.") in ops_sqc.go; a pass that needs a new op adds its OpDef there.
//
// Opset handling: the table describes each ONNX op across opsets 7-18. Where
// an op's interface changed (axes moving from attribute to input for
// Unsqueeze/Squeeze/ReduceSum at 13 and ReduceMean at 18, Slice's inputs at
// 10, Softmax's default axis at 13), the OpDef's Check enforces the form the
// graph's opset requires; a graph with Opset 0 (unspecified, e.g. built
// directly by a frontend or a test) accepts either form. Ops newer than a
// graph's opset (LayerNormalization in an opset-14 graph) are accepted,
// because sqc's fusion passes introduce them.

// Variadic is MaxInputs for ops that take any number of inputs (Concat).
const Variadic = -1

// DomainSqc is the domain of sqc's own ops; their names start "sqc.".
const DomainSqc = "sqc"

// AttrSpec declares one attribute an op accepts.
type AttrSpec struct {
	Name     string
	Kind     AttrKind
	Required bool
}

// DTypeRule states which input dtypes an op allows and what output dtypes
// result, in the style of ONNX type constraints. Each entry of In and Out is
// a type variable ("T"), a fixed dtype name ("i64", "bool"), "" (any dtype,
// unconstrained) or, in Out only, "attr" (computed by OutFromAttr). Inputs
// sharing a type variable must have the same dtype; Vars lists each
// variable's allowed dtypes (absent: any). For variadic ops the last entry
// of In repeats.
type DTypeRule struct {
	In          []string
	Out         []string
	Vars        map[string][]DType
	OutFromAttr func(n *Node) (DType, error)
	// AttrElse, if set, is the Out entry used where OutFromAttr returns
	// Undefined (sqc.LayerNormDual's y_q: u8 when the node writes it
	// quantised, else the input's type variable).
	AttrElse string
}

// InferInput is what a shape rule knows about one node input.
type InferInput struct {
	Present bool    // false for an omitted optional input ("" or beyond the list)
	DType   DType   // Undefined when unknown
	Shape   Shape   // nil when the rank is unknown
	Const   *Tensor // the value, when it is a known constant (initializer, Constant, folded)
	Sym     []SymInt
	// Sym, when non-nil, holds the elements (row-major) of a small integer
	// or bool tensor whose static shape is Shape, possibly symbolic: for
	// Shape(x) with x: f32[batch, 128] it is {batch, 128}.
}

// InferArgs is the input of a shape rule.
type InferArgs struct {
	Node  *Node
	Opset int64
	In    []InferInput // one per declared node input
}

// Inferred is a shape rule's result for one output. DType is filled from the
// op's DTypeRule by OpDef.InferShapes; shape rules may leave it Undefined.
type Inferred struct {
	DType DType
	Shape Shape // nil: rank unknown
	Sym   []SymInt
	Const *Tensor
}

// ShapeFunc computes output shapes (and, for small integer results, their
// symbolic contents). It returns one Inferred per node output.
type ShapeFunc func(a *InferArgs) ([]Inferred, error)

// OpDef describes one op.
type OpDef struct {
	Name   string // "MatMul", or "sqc.Linear" for sqc ops
	Domain string // "" for the default ONNX domain, DomainSqc for sqc ops
	Doc    string // one line: what the op computes
	// Since is the first ONNX opset with the semantics described here
	// (0 for sqc ops). Informational: see the package note on opsets.
	Since int64

	MinInputs, MaxInputs   int // MaxInputs may be Variadic
	MinOutputs, MaxOutputs int

	Attrs  []AttrSpec
	DTypes DTypeRule
	Shape  ShapeFunc
	// Elementwise is set when each output element is a function of the
	// inputs' elements at the same index alone, numpy-broadcast (size-1
	// dims repeat): no element reads a neighbour, a reduction or the
	// shape. Passes that reason about where a value comes from
	// (MarkPositionOnlyBias) rely on it.
	Elementwise bool
	// Check, when set, validates attributes and opset-dependent forms
	// beyond what Attrs and the arity bounds express.
	Check func(n *Node, opset int64) error
}

// Attr returns the spec of the named attribute.
func (op *OpDef) Attr(name string) (AttrSpec, bool) {
	for _, a := range op.Attrs {
		if a.Name == name {
			return a, true
		}
	}
	return AttrSpec{}, false
}

// opTable builds the table once; the map is never modified afterwards.
var opTable = sync.OnceValue(func() map[string]*OpDef {
	m := map[string]*OpDef{}
	for _, list := range [][]*OpDef{onnxOps(), onnxQuantOps(), sqcOps()} {
		for _, op := range list {
			if _, dup := m[op.Name]; dup {
				panic("compiler: op " + op.Name + " defined twice") // programming error, caught by tests
			}
			m[op.Name] = op
		}
	}
	return m
})

// LookupOp returns the definition of the named op. The returned OpDef is
// shared: treat it as read-only.
func LookupOp(name string) (*OpDef, bool) {
	op, ok := opTable()[name]
	return op, ok
}

// Ops returns every op definition sorted by name.
func Ops() []*OpDef {
	m := opTable()
	out := make([]*OpDef, 0, len(m))
	for _, op := range m {
		out = append(out, op)
	}
	slices.SortFunc(out, func(a, b *OpDef) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// CheckArity checks the node's input and output counts, that required
// inputs are not omitted and that outputs are named.
func (op *OpDef) CheckArity(n *Node) error {
	var errs []error
	nin := len(n.Inputs)
	if nin < op.MinInputs || (op.MaxInputs != Variadic && nin > op.MaxInputs) {
		errs = append(errs, fmt.Errorf("takes %s inputs, has %d", rangeString(op.MinInputs, op.MaxInputs), nin))
	}
	for i, in := range n.Inputs {
		if in == "" && i < op.MinInputs {
			errs = append(errs, fmt.Errorf("required input %d is omitted", i))
		}
	}
	nout := len(n.Outputs)
	if nout < op.MinOutputs || nout > op.MaxOutputs {
		errs = append(errs, fmt.Errorf("has %s outputs, has %d", rangeString(op.MinOutputs, op.MaxOutputs), nout))
	}
	for i, out := range n.Outputs {
		if out == "" && i < op.MinOutputs {
			errs = append(errs, fmt.Errorf("required output %d is unnamed", i))
		}
	}
	return errors.Join(errs...)
}

func rangeString(lo, hi int) string {
	switch {
	case hi == Variadic:
		return fmt.Sprintf("at least %d", lo)
	case lo == hi:
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

// CheckAttrs checks attribute names and kinds against the spec, that
// required attributes are present, then runs the op's Check.
func (op *OpDef) CheckAttrs(n *Node, opset int64) error {
	var errs []error
	for _, name := range sortedAttrNames(n.Attrs) {
		a := n.Attrs[name]
		spec, ok := op.Attr(name)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("unknown attribute %q", name))
		case a.Kind != spec.Kind:
			errs = append(errs, fmt.Errorf("attribute %q is %s, want %s", name, a.Kind, spec.Kind))
		case a.Kind == AttrTensor && a.Tensor == nil:
			errs = append(errs, fmt.Errorf("attribute %q has no tensor", name))
		case a.Kind == AttrTensor:
			if err := a.Tensor.Check(); err != nil {
				errs = append(errs, fmt.Errorf("attribute %q: %w", name, err))
			}
		}
	}
	for _, spec := range op.Attrs {
		if _, ok := n.Attrs[spec.Name]; spec.Required && !ok {
			errs = append(errs, fmt.Errorf("missing required attribute %q", spec.Name))
		}
	}
	if len(errs) == 0 && op.Check != nil {
		if err := op.Check(n, opset); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// InferDTypes applies the dtype rule. in holds the input dtypes (Undefined
// for unknown or omitted inputs, which constrain nothing); the result has
// one dtype per node output, Undefined where it cannot be determined.
func (op *OpDef) InferDTypes(n *Node, in []DType) ([]DType, error) {
	r := op.DTypes
	bound := map[string]DType{}
	var errs []error
	for i, dt := range in {
		if dt == Undefined || len(r.In) == 0 {
			continue
		}
		v := r.In[min(i, len(r.In)-1)]
		if v == "" {
			continue
		}
		if fixed, err := ParseDType(v); err == nil {
			if dt != fixed {
				errs = append(errs, fmt.Errorf("%w: input %d is %s, want %s", ErrDTypeMismatch, i, dt, fixed))
			}
			continue
		}
		if allowed, ok := r.Vars[v]; ok && !slices.Contains(allowed, dt) {
			errs = append(errs, fmt.Errorf("%w: input %d is %s, %s must be one of %s", ErrDTypeMismatch, i, dt, v, dtypeList(allowed)))
			continue
		}
		if prev, ok := bound[v]; ok && prev != dt {
			errs = append(errs, fmt.Errorf("%w: input %d is %s but an earlier %s input is %s", ErrDTypeMismatch, i, dt, v, prev))
			continue
		}
		bound[v] = dt
	}
	out := make([]DType, len(n.Outputs))
	for i := range out {
		if len(r.Out) == 0 {
			break
		}
		v := r.Out[min(i, len(r.Out)-1)]
		if v == "attr" {
			dt, err := r.OutFromAttr(n)
			if err != nil {
				errs = append(errs, err)
			}
			if dt != Undefined || r.AttrElse == "" {
				out[i] = dt
				continue
			}
			v = r.AttrElse
		}
		if fixed, err := ParseDType(v); err == nil {
			out[i] = fixed
			continue
		}
		out[i] = bound[v]
	}
	return out, errors.Join(errs...)
}

func dtypeList(ds []DType) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, ", ")
}

// InferShapes runs the dtype and shape rules for node n given what is known
// about its inputs (in has one entry per n.Inputs; omitted inputs have
// Present false). It returns one Inferred per output.
func (op *OpDef) InferShapes(n *Node, opset int64, in []InferInput) ([]Inferred, error) {
	// Shape rules index their inputs by position: a node of the wrong
	// arity (from a corrupt or hand-written file) is an error, not a panic.
	if err := op.CheckArity(n); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	dts := make([]DType, len(in))
	for i, x := range in {
		if x.Present {
			dts[i] = x.DType
		}
	}
	outDT, err := op.InferDTypes(n, dts)
	if err != nil {
		return nil, err
	}
	var res []Inferred
	if op.Shape != nil {
		res, err = op.Shape(&InferArgs{Node: n, Opset: opset, In: in})
		if err != nil {
			return nil, err
		}
	}
	if len(res) < len(n.Outputs) {
		res = append(res, make([]Inferred, len(n.Outputs)-len(res))...)
	}
	res = res[:len(n.Outputs)]
	for i := range res {
		if res[i].DType == Undefined {
			res[i].DType = outDT[i]
		}
	}
	return res, nil
}

package interp

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// Options tune one Run. The zero value (or a nil *Options) is valid.
type Options struct {
	// OnValue, if set, is called for every value a node produces, in
	// execution order, right after the node runs (calibration observes
	// activations through it). Graph inputs and initializers are not
	// reported. The tensor may share storage with initializers or inputs:
	// read it, copy it if it must outlive the call, never modify it. An
	// error stops the run and is returned, wrapped.
	OnValue func(name string, t *compiler.Tensor) error

	// Threads bounds the goroutines one kernel uses; 0 means
	// runtime.GOMAXPROCS(0).
	Threads int

	// MaxElements bounds the element count of a tensor whose shape comes
	// from operand values (Expand, ConstantOfShape, Range), so that a bad
	// shape operand fails at once instead of exhausting memory; 0 means
	// 2^31, the bound on every tensor.
	MaxElements int64
}

// Interpreter is a validated graph ready to run. It holds no per-run
// state, so Run may be called from many goroutines at once.
type Interpreter struct {
	g      *compiler.Graph
	source string // model file for error messages, from Graph.Meta["source"]
	steps  []step
	inits  map[string]*compiler.Tensor
}

// step is one node with its kernel and the values that die after it.
type step struct {
	node    *compiler.Node
	label   string // `node "name" (Op)` for errors
	kernel  kernelSpec
	release []string
}

// Run validates g and runs it once; see New and Interpreter.Run.
func Run(g *compiler.Graph, inputs map[string]*compiler.Tensor, opts *Options) (map[string]*compiler.Tensor, error) {
	it, err := New(g)
	if err != nil {
		return nil, err
	}
	return it.Run(inputs, opts)
}

// New checks that g can be interpreted: initializers are well formed, every
// op has a kernel (one error lists all that do not), every node's arity
// fits its op, every input is defined before use, every value is produced
// once, and every graph output is defined. g must not be modified while
// the Interpreter is in use.
func New(g *compiler.Graph) (*Interpreter, error) {
	if g == nil {
		return nil, fmt.Errorf("interp: %w: nil graph", compiler.ErrInvalidRequest)
	}
	it := &Interpreter{g: g, source: g.Meta["source"], inits: g.Initializers}
	bad := func(object string, err error) error { return compiler.BadInput(it.source, object, err) }

	defined := map[string]bool{}
	for _, name := range g.InitializerNames() {
		t := g.Initializers[name]
		if t == nil {
			return nil, bad("initializer "+name, fmt.Errorf("%w: nil tensor", compiler.ErrMalformed))
		}
		if err := t.Check(); err != nil {
			return nil, bad("initializer "+name, fmt.Errorf("%w: %v", compiler.ErrMalformed, err))
		}
		defined[name] = true
	}
	for _, v := range g.Inputs {
		defined[v.Name] = true
	}

	var unsupported []string
	for i, n := range g.Nodes {
		label := fmt.Sprintf("node %q (%s)", n.Name, n.Op)
		if n.Name == "" {
			label = fmt.Sprintf("node #%d (%s)", i, n.Op)
		}
		spec, ok := kernelFor(n.Op)
		if !ok {
			unsupported = append(unsupported, label)
			for _, out := range n.Outputs {
				defined[out] = true // so later nodes report only their own faults
			}
			continue
		}
		if len(n.Inputs) < spec.MinIn || (spec.MaxIn >= 0 && len(n.Inputs) > spec.MaxIn) {
			return nil, bad(label, fmt.Errorf("%w: %d inputs, %s takes %s", compiler.ErrMalformed, len(n.Inputs), n.Op, spec.Arity))
		}
		if len(n.Outputs) == 0 || len(n.Outputs) > spec.MaxOut {
			return nil, bad(label, fmt.Errorf("%w: %d outputs, %s has at most %d", compiler.ErrMalformed, len(n.Outputs), n.Op, spec.MaxOut))
		}
		for j, in := range n.Inputs {
			switch {
			case in == "" && j < spec.MinIn:
				return nil, bad(label, fmt.Errorf("%w: required input %d is empty", compiler.ErrMissingTensor, j))
			case in != "" && !defined[in]:
				return nil, bad(label, fmt.Errorf("%w: input %q is not a graph input, an initializer or an earlier node's output", compiler.ErrMissingTensor, in))
			}
		}
		for _, out := range n.Outputs {
			if out == "" {
				continue
			}
			if defined[out] {
				return nil, bad(label, fmt.Errorf("%w: output %q is defined twice", compiler.ErrDuplicate, out))
			}
			defined[out] = true
		}
		it.steps = append(it.steps, step{node: n, label: label, kernel: spec})
	}
	if len(unsupported) > 0 {
		return nil, bad("", fmt.Errorf("%w: no interpreter kernel for %s", compiler.ErrUnsupportedOp, strings.Join(unsupported, ", ")))
	}
	for _, v := range g.Outputs {
		if !defined[v.Name] {
			return nil, bad("output "+v.Name, fmt.Errorf("%w: graph output is never produced", compiler.ErrMissingTensor))
		}
	}

	// Free each activation after its last reader, keeping graph outputs.
	keep := map[string]bool{}
	for _, v := range g.Outputs {
		keep[v.Name] = true
	}
	last := map[string]int{}
	for i, s := range it.steps {
		for _, name := range s.node.Inputs {
			last[name] = i
		}
		for _, name := range s.node.Outputs {
			if _, read := last[name]; !read {
				last[name] = i // produced but never read: free at once
			}
		}
	}
	for name, i := range last {
		if name != "" && !keep[name] && it.inits[name] == nil {
			it.steps[i].release = append(it.steps[i].release, name)
		}
	}
	return it, nil
}

// Run executes the graph on inputs (by graph input name; an input that is
// also an initializer may be omitted and defaults to it). Inputs are
// checked against the graph's declared dtypes and shapes, symbolic dims
// ("batch", "sequence") taking one size across all inputs. It returns every
// graph output as a fresh tensor.
func (it *Interpreter) Run(inputs map[string]*compiler.Tensor, opts *Options) (map[string]*compiler.Tensor, error) {
	if opts == nil {
		opts = &Options{}
	}
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	limit := opts.MaxElements
	if limit <= 0 || limit > ops.MaxElements {
		limit = ops.MaxElements
	}
	env, err := it.bindInputs(inputs)
	if err != nil {
		return nil, err
	}
	lookup := func(name string) *compiler.Tensor {
		if t, ok := env[name]; ok {
			return t
		}
		return it.inits[name]
	}
	for _, s := range it.steps {
		n := s.node
		c := &call{node: n, in: make([]*compiler.Tensor, len(n.Inputs)), opset: it.g.Opset, threads: threads, maxElements: limit}
		for j, name := range n.Inputs {
			if name != "" {
				c.in[j] = lookup(name)
			}
		}
		outs, err := execute(s.kernel.fn, c)
		if err != nil {
			if errors.Is(err, compiler.ErrInternal) { // the interpreter's fault, not the input's
				return nil, fmt.Errorf("%s: %w", strings.TrimPrefix(it.source+": "+s.label, ": "), err)
			}
			return nil, compiler.BadInput(it.source, s.label, err)
		}
		for j, name := range n.Outputs {
			if name == "" {
				continue
			}
			var t *compiler.Tensor
			if j < len(outs) {
				t = outs[j]
			}
			if t == nil {
				return nil, compiler.BadInput(it.source, s.label, fmt.Errorf("%w: output %d (%q) is not produced by the interpreter's %s", compiler.ErrUnsupportedOp, j, name, n.Op))
			}
			if err := t.Check(); err != nil {
				return nil, fmt.Errorf("interp: %s: internal error: output %q: %v", s.label, name, err)
			}
			if v := it.g.Values[name]; v != nil && v.DType != compiler.Undefined && v.DType != t.DType {
				return nil, compiler.BadInput(it.source, s.label, fmt.Errorf("%w: output %q is %s but the graph declares %s", compiler.ErrDTypeMismatch, name, t.DType, v.DType))
			}
			env[name] = t
			if opts.OnValue != nil {
				if err := opts.OnValue(name, t); err != nil {
					return nil, fmt.Errorf("interp: OnValue(%q): %w", name, err)
				}
			}
		}
		for _, name := range s.release {
			delete(env, name)
		}
	}
	out := make(map[string]*compiler.Tensor, len(it.g.Outputs))
	for _, v := range it.g.Outputs {
		t := lookup(v.Name)
		if v.DType != compiler.Undefined && t.DType != v.DType {
			return nil, compiler.BadInput(it.source, "output "+v.Name, fmt.Errorf("%w: computed %s, the graph declares %s", compiler.ErrDTypeMismatch, t.DType, v.DType))
		}
		out[v.Name] = ops.CopyOf(t)
	}
	return out, nil
}

// execute runs one kernel, turning a panic (a kernel bug on input its
// checks missed) into an error so bad input never crashes the caller.
func execute(fn kernelFunc, c *call) (outs []*compiler.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			outs, err = nil, fmt.Errorf("%w: %v", compiler.ErrInternal, r)
		}
	}()
	return fn(c)
}

// bindInputs checks the caller's inputs against the graph's declarations
// and returns the initial environment.
func (it *Interpreter) bindInputs(inputs map[string]*compiler.Tensor) (map[string]*compiler.Tensor, error) {
	env := make(map[string]*compiler.Tensor, len(inputs)+len(it.steps))
	bad := func(name string, format string, args ...any) error {
		return compiler.BadInput("", "input "+name, fmt.Errorf("%w: "+format, append([]any{compiler.ErrInvalidRequest}, args...)...))
	}
	declared := map[string]bool{}
	symbols := map[string]int64{}
	symbolFrom := map[string]string{}
	for _, v := range it.g.Inputs {
		declared[v.Name] = true
		t, ok := inputs[v.Name]
		if !ok || t == nil {
			if it.inits[v.Name] != nil {
				continue // defaults to the initializer
			}
			return nil, bad(v.Name, "missing")
		}
		if err := t.Check(); err != nil {
			return nil, bad(v.Name, "%v", err)
		}
		if v.DType != compiler.Undefined && t.DType != v.DType {
			return nil, bad(v.Name, "dtype %s, the graph wants %s", t.DType, v.DType)
		}
		if v.Shape != nil {
			if len(t.Shape) != len(v.Shape) {
				return nil, bad(v.Name, "shape %v, the graph wants %s", t.Shape, v.Shape)
			}
			for i, d := range v.Shape {
				size := t.Shape[i]
				switch {
				case d.Param != "":
					if prev, seen := symbols[d.Param]; seen && prev != size {
						return nil, bad(v.Name, "dim %d (%s) is %d but %s has %s = %d", i, d.Param, size, symbolFrom[d.Param], d.Param, prev)
					}
					symbols[d.Param], symbolFrom[d.Param] = size, v.Name
				case d.Size >= 0 && d.Size != size:
					return nil, bad(v.Name, "shape %v, the graph wants %s", t.Shape, v.Shape)
				}
			}
		}
		env[v.Name] = t
	}
	var extra []string
	for name := range inputs {
		if !declared[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return nil, bad(extra[0], "not a graph input (the graph's inputs are %s)", inputNames(it.g))
	}
	return env, nil
}

func inputNames(g *compiler.Graph) string {
	names := make([]string, len(g.Inputs))
	for i, v := range g.Inputs {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

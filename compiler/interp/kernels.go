package interp

import (
	"fmt"
	"sort"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// call is one node's execution: its node, its input tensors (nil for an
// omitted optional input), the graph's opset, the goroutine budget and the
// size bound of Options.MaxElements.
type call struct {
	node        *compiler.Node
	in          []*compiler.Tensor
	opset       int64
	threads     int
	maxElements int64
}

// generic evaluates op, with the node's attributes, on in through the
// generic kernels (runtime/ops), which the INT8 engine and generated
// packages share.
func (c *call) generic(op string, in []*compiler.Tensor) ([]*compiler.Tensor, error) {
	n := &ops.Node{Op: op, Attrs: c.node.Attrs, Opset: c.opset}
	return n.Eval(in, ops.Options{Threads: c.threads, MaxElements: c.maxElements})
}

// kernelFunc computes a node's outputs, one per node output (nil for an
// optional output nobody asked for). Kernels never modify their inputs;
// an output may share an input's storage (Reshape, Identity, ...).
type kernelFunc func(c *call) ([]*compiler.Tensor, error)

// kernelSpec is a kernel with the arity New checks (ops.Arity).
type kernelSpec struct {
	fn kernelFunc
	ops.Arity
}

// sqcKernels are the kernels of sqc's own ops that runtime/ops does not
// have: the fused ops the passes introduce. The files defining them add
// them at package initialisation (sqcKernel), before anything reads the
// table.
var sqcKernels = map[string]kernelSpec{}

// sqcKernel is op's kernel fn with the arity of op's definition in the op
// table, the one place that states it.
func sqcKernel(op string, fn kernelFunc) kernelSpec {
	def, ok := compiler.LookupOp(op)
	if !ok {
		panic("interp: " + op + " is not in the op table") // a programming error, found by every test run
	}
	return kernelSpec{fn, ops.Arity{MinIn: def.MinInputs, MaxIn: def.MaxInputs, MaxOut: def.MaxOutputs}}
}

// genericAliases name the runtime/ops kernel an sqc op of the same
// meaning runs on.
var genericAliases = map[string]string{"sqc.Gelu": "Gelu", "sqc.Silu": "Silu", "sqc.Linear": "Linear"}

// kernelFor returns op's kernel: its sqc kernel, or the generic one.
func kernelFor(op string) (kernelSpec, bool) {
	if k, ok := sqcKernels[op]; ok {
		return k, true
	}
	name := op
	if alias, ok := genericAliases[op]; ok {
		name = alias
	}
	a, ok := ops.ArityOf(name)
	if !ok {
		return kernelSpec{}, false
	}
	return kernelSpec{fn: func(c *call) ([]*compiler.Tensor, error) { return c.generic(name, c.in) }, Arity: a}, true
}

// Supports reports whether the interpreter has a kernel for op.
func Supports(op string) bool {
	_, ok := kernelFor(op)
	return ok
}

// Ops lists the ops the interpreter executes, sorted.
func Ops() []string {
	all := ops.Ops()
	for op := range sqcKernels {
		all = append(all, op)
	}
	for op := range genericAliases {
		all = append(all, op)
	}
	sort.Strings(all)
	return all
}

func unsupported(dt compiler.DType) error {
	return fmt.Errorf("%w: not defined for %s", compiler.ErrDTypeMismatch, dt)
}

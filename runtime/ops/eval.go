package ops

import (
	"fmt"
	"runtime"
	"sort"
)

// Node is one generic op to evaluate: its ONNX op type, attributes and the
// opset whose meaning applies (0: the newest). The FP32 interpreter builds
// one per graph node; the INT8 engine and generated packages keep one per
// step outside sqc's fused vocabulary.
type Node struct {
	Op    string
	Attrs Attrs
	Opset int64
}

// Options bound one Eval. The zero value is valid.
type Options struct {
	// Threads bounds the goroutines one kernel uses; 0 means
	// runtime.GOMAXPROCS(0).
	Threads int
	// MaxElements bounds the element count of a tensor whose shape comes
	// from operand values (Expand, ConstantOfShape, Range), so that a bad
	// shape operand fails at once instead of exhausting memory; 0 (or more
	// than MaxElements) means MaxElements.
	MaxElements int64
}

// MaxElements bounds the element count of every tensor a kernel makes.
const MaxElements = maxElements

// Supports reports whether op has a kernel.
func Supports(op string) bool {
	_, ok := kernels[op]
	return ok
}

// Ops lists the ops with a kernel, sorted.
func Ops() []string {
	ops := make([]string, 0, len(kernels))
	for op := range kernels {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return ops
}

// Arity is how many inputs and outputs a node of op may have: the first
// MinIn inputs are required, at most MaxIn may be given (-1: any number),
// and at most MaxOut outputs may be named.
type Arity struct{ MinIn, MaxIn, MaxOut int }

// String is the input count in words ("2", "1 to 3", "at least 1").
func (a Arity) String() string {
	switch {
	case a.MaxIn < 0:
		return fmt.Sprintf("at least %d", a.MinIn)
	case a.MinIn == a.MaxIn:
		return fmt.Sprint(a.MinIn)
	}
	return fmt.Sprintf("%d to %d", a.MinIn, a.MaxIn)
}

// ArityOf returns op's arity, or false when op has no kernel.
func ArityOf(op string) (Arity, bool) {
	k, ok := kernels[op]
	return Arity{k.minIn, k.maxIn, k.maxOut}, ok
}

// Eval computes n on in (one tensor per node input, nil for an omitted
// optional one) and returns one tensor per output the op defines (nil for
// an optional output it does not compute). It never modifies its inputs;
// an output may share an input's storage (Reshape, Identity, ...), so
// treat outputs as read-only unless Clone'd. Bad operands give an error
// wrapping ErrShapeMismatch, ErrDTypeMismatch, ErrMalformed or
// ErrUnsupportedOp; a kernel panic (a bug) one wrapping ErrInternal.
func (n *Node) Eval(in []*Tensor, opts Options) ([]*Tensor, error) {
	k, ok := kernels[n.Op]
	if !ok {
		return nil, fmt.Errorf("%w: no generic kernel for %s", ErrUnsupportedOp, n.Op)
	}
	if len(in) < k.minIn || (k.maxIn >= 0 && len(in) > k.maxIn) {
		return nil, fmt.Errorf("%w: %d inputs, %s takes %s", ErrMalformed, len(in), n.Op, Arity{k.minIn, k.maxIn, k.maxOut})
	}
	for j := range k.minIn {
		if in[j] == nil {
			return nil, fmt.Errorf("%w: %s: required input %d is missing", ErrMalformed, n.Op, j)
		}
	}
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	limit := opts.MaxElements
	if limit <= 0 || limit > maxElements {
		limit = maxElements
	}
	return execute(k.fn, &call{node: n, in: in, opset: n.Opset, threads: threads, maxElements: limit})
}

// execute runs one kernel, turning a panic (a kernel bug on input its
// checks missed) into an error so bad input never crashes the caller.
func execute(fn kernelFunc, c *call) (outs []*Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			outs, err = nil, fmt.Errorf("%w: %v", ErrInternal, r)
		}
	}()
	return fn(c)
}

package exec

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// OpStep runs one node outside sqc's fused vocabulary (shape plumbing,
// Cast, Where, Expand, ...) on runtime/ops's generic kernels: the same
// kernels the FP32 interpreter evaluates it with and the generated
// package calls (ops.Node.Eval), so all three agree bit for bit. Its
// results are tensors the kernel makes, which may share storage with its
// inputs, so its slots keep buffers of their own (reuse.go) and the step
// allocates when it runs.
type OpStep struct {
	Name    string    // the graph node's name
	Op      *ops.Node // op type, attributes (shared with the graph, read-only) and opset
	Inputs  []SlotID  // one per node input (NoSlot where omitted)
	Outputs []SlotID  // one per node output (NoSlot where unnamed)

	in []*compiler.Tensor // operands, rebound on every run
}

func (s *OpStep) Operands() Operands { return operands(s.Inputs, s.Outputs...) }

// cost is the generic kernel's operands: its arithmetic is not counted.
func (s *OpStep) cost(p *Program) Cost {
	return Cost{Kind: KindGeneric, Label: s.Call(), Bytes: p.operandBytes(s)}
}

func (s *OpStep) Call() string   { return "ops." + s.Op.Op }
func (s *OpStep) Source() string { return s.Name }

func (s *OpStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s)", slotNames(sl, s.Outputs...), s.Call(), slotNames(sl, s.Inputs...))
}

// newOpStep is the generic step of node n of g, or an error naming what
// runtime/ops cannot run.
func newOpStep(g *compiler.Graph, n *compiler.Node, inputs, outputs []SlotID) (*OpStep, error) {
	a, ok := ops.ArityOf(n.Op)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %s has neither a fused kernel nor a generic one (runtime/ops)", compiler.ErrUnsupportedOp, n.Op)
	case len(n.Inputs) < a.MinIn || (a.MaxIn >= 0 && len(n.Inputs) > a.MaxIn):
		return nil, fmt.Errorf("%w: %d inputs, %s takes %s", compiler.ErrMalformed, len(n.Inputs), n.Op, a)
	case len(n.Outputs) > a.MaxOut:
		return nil, fmt.Errorf("%w: %d outputs, %s has at most %d", compiler.ErrMalformed, len(n.Outputs), n.Op, a.MaxOut)
	}
	return &OpStep{
		Name: n.Name, Op: &ops.Node{Op: n.Op, Attrs: n.Attrs, Opset: g.Opset},
		Inputs: inputs, Outputs: outputs, in: make([]*compiler.Tensor, len(inputs)),
	}, nil
}

func (s *OpStep) run(p *Program) error {
	for i, id := range s.Inputs {
		s.in[i] = nil
		if id != NoSlot {
			s.in[i] = p.bufs[id]
		}
	}
	out, err := s.Op.Eval(s.in, ops.Options{Threads: p.pool.Workers()})
	clear(s.in) // hold none of the caller's tensors between runs
	if err != nil {
		return err
	}
	for i, id := range s.Outputs {
		if id == NoSlot {
			continue
		}
		if i >= len(out) || out[i] == nil {
			return fmt.Errorf("%w: %s does not compute output %d", compiler.ErrUnsupportedOp, s.Op.Op, i)
		}
		p.setResult(id, out[i]) // reuse.go
	}
	return nil
}

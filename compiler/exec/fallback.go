package exec

import (
	"fmt"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
)

// InterpStep runs one node with the FP32 interpreter: ops that have no
// runtime kernel (shape plumbing outside the encoder). The code generator
// cannot emit these; a graph it compiles must have none left.
type InterpStep struct {
	Node    *compiler.Node
	Inputs  []SlotID // one per node input (NoSlot where omitted)
	Outputs []SlotID // one per node output (NoSlot where unnamed)

	it    *interp.Interpreter
	names []string // input name of the one-node graph per Inputs entry ("" for initializers and omitted inputs)
	in    map[string]*compiler.Tensor
}

func (s *InterpStep) Call() string   { return "interp." + s.Node.Op }
func (s *InterpStep) Source() string { return s.Node.Name }

func (s *InterpStep) Describe(sl []*Slot) string {
	outs := make([]string, len(s.Outputs))
	for i, id := range s.Outputs {
		outs[i] = slotName(sl, id)
	}
	ins := make([]string, len(s.Inputs))
	for i, id := range s.Inputs {
		ins[i] = slotName(sl, id)
	}
	return fmt.Sprintf("%s = %s(%s)", strings.Join(outs, ", "), s.Call(), strings.Join(ins, ", "))
}

// newInterpStep builds the one-node graph of n: its non-constant inputs
// become graph inputs, its constant ones initializers shared with g.
func newInterpStep(g *compiler.Graph, n *compiler.Node, inputs, outputs []SlotID, dtypeOf func(string) compiler.DType) (*InterpStep, error) {
	sub := compiler.NewGraph(g.Name + "/" + n.Name)
	sub.Opset = g.Opset
	sub.Nodes = []*compiler.Node{n}
	s := &InterpStep{Node: n, Inputs: inputs, Outputs: outputs, names: make([]string, len(n.Inputs)), in: map[string]*compiler.Tensor{}}
	seen := map[string]bool{}
	for i, name := range n.Inputs {
		switch {
		case name == "":
		case g.Initializers[name] != nil && !isGraphInput(g, name):
			sub.Initializers[name] = g.Initializers[name]
		default:
			s.names[i] = name
			if !seen[name] {
				seen[name] = true
				sub.Inputs = append(sub.Inputs, &compiler.Value{Name: name, DType: dtypeOf(name)})
			}
		}
	}
	for _, name := range n.Outputs {
		if name != "" {
			sub.Outputs = append(sub.Outputs, &compiler.Value{Name: name})
		}
	}
	it, err := interp.New(sub)
	if err != nil {
		return nil, err
	}
	s.it = it
	return s, nil
}

func isGraphInput(g *compiler.Graph, name string) bool {
	for _, v := range g.Inputs {
		if v.Name == name {
			return true
		}
	}
	return false
}

func (s *InterpStep) run(p *Program) error {
	clear(s.in)
	for i, name := range s.names {
		if name != "" {
			s.in[name] = p.bufs[s.Inputs[i]]
		}
	}
	out, err := s.it.Run(s.in, &interp.Options{Threads: p.pool.Workers()})
	clear(s.in)
	if err != nil {
		return err
	}
	for i, name := range s.Node.Outputs {
		if name != "" {
			p.bufs[s.Outputs[i]] = out[name] // fresh tensors the interpreter hands over
		}
	}
	return nil
}

package bench

import (
	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
)

// int8Engine is sqc's in-process INT8 engine (compiler/exec): the same
// runtime calls, in the same order, as a generated package.
type int8Engine struct {
	prog *exec.Program
}

// NewINT8 compiles g, a quantised graph (after Model.Quantize), with
// compiler/exec. opts.ISA caps the GEMM kernel family.
func NewINT8(g *compiler.Graph, opts EngineOptions) (Engine, error) {
	prog, err := exec.Compile(g, exec.Options{Threads: opts.Threads, ISA: opts.ISA, SeparateEpilogue: opts.SeparateEpilogue, FinishOrder: opts.FinishOrder, ProfileGEMM: opts.ProfileGEMM})
	if err != nil {
		return nil, err
	}
	return &int8Engine{prog: prog}, nil
}

// Program is the compiled program (for per-step profiling).
func (e *int8Engine) Program() *exec.Program { return e.prog }

func (e *int8Engine) Run(in map[string]*compiler.Tensor) (map[string]*compiler.Tensor, error) {
	return e.prog.Run(in)
}

// RunInto writes the outputs into out's tensors, reusing them: with the
// same map every call, a forward pass allocates nothing in steady state.
func (e *int8Engine) RunInto(in, out map[string]*compiler.Tensor) error {
	return e.prog.RunInto(in, out)
}

func (e *int8Engine) Describe() string {
	return "INT8 compiler/exec: " + e.prog.Engine().Describe()
}

func (e *int8Engine) Close() { e.prog.Close() }

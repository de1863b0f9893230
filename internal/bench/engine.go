package bench

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Engine runs complete forward passes of one model.
type Engine interface {
	// Run executes one forward pass on prepared inputs and returns the
	// graph outputs.
	Run(inputs map[string]*compiler.Tensor) (map[string]*compiler.Tensor, error)
	// Describe names the engine, precision and kernel family, in one line.
	Describe() string
	// Close releases worker threads and buffers.
	Close()
}

// EngineOptions configure NewFP32 and NewINT8.
type EngineOptions struct {
	Threads int    // worker goroutines (<= 0: GOMAXPROCS)
	ISA     string // INT8 kernel ceiling: amx, vnni, avx2, go; "" = fastest (or SQC_ISA)
	// SeparateEpilogue keeps the GEMM epilogue out of the AMX kernel call
	// (exec.Options.SeparateEpilogue).
	SeparateEpilogue bool
	// FinishOrder forces the block order of the GEMMs with a fused
	// LayerNorm (exec.Options.FinishOrder); the zero value is the planner's.
	FinishOrder qgemm.FinishOrder
	// ProfileGEMM makes the GEMM engine time its parts
	// (exec.Options.ProfileGEMM), for sqc roofline.
	ProfileGEMM bool
}

// fp32Engine is the reference interpreter on the FP32 graph.
type fp32Engine struct {
	it   *interp.Interpreter
	opts interp.Options
}

// NewFP32 returns the FP32 reference interpreter (compiler/interp) on g,
// sqc's FP32 baseline.
func NewFP32(g *compiler.Graph, opts EngineOptions) (Engine, error) {
	it, err := interp.New(g)
	if err != nil {
		return nil, err
	}
	return &fp32Engine{it: it, opts: interp.Options{Threads: opts.Threads}}, nil
}

func (e *fp32Engine) Run(in map[string]*compiler.Tensor) (map[string]*compiler.Tensor, error) {
	return e.it.Run(in, &e.opts)
}

func (e *fp32Engine) Describe() string {
	return fmt.Sprintf("FP32 reference interpreter (compiler/interp), %s", threadsText(e.opts.Threads))
}

func (e *fp32Engine) Close() {}

func threadsText(n int) string {
	if n <= 0 {
		return "GOMAXPROCS threads"
	}
	if n == 1 {
		return "1 thread"
	}
	return fmt.Sprintf("%d threads", n)
}

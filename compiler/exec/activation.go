package exec

import (
	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/pool"
)

// Activation functions of ActivationStep (its Func).
const (
	ActGelu     = "gelu"      // internal/gelu's float32 GELU (the GEMM epilogue's)
	ActGeluTanh = "gelu_tanh" // internal/gelu's float32 tanh-GELU (the GEMM epilogue's)
	ActTanh     = "tanh"
	ActRelu     = "relu" // qgemm.Relu (the GEMM epilogue's)
	ActSilu     = "silu" // internal/expf's float32 SiLU (the GEMM epilogue's)
)

// Activation is one elementwise activation a standalone step computes:
// everything the engine, the code generator and the roofline know of it.
type Activation struct {
	Func string // ActGelu, ActGeluTanh, ActTanh, ActRelu or ActSilu
	Op   string // the graph op it lowers
	// Approximate is the sqc.Gelu approximate attribute it lowers
	// (compiler.GeluApproximate; "" for the other ops).
	Approximate string
	// NN is the runtime/nn function (generated code calls nn.NN), Run
	// that function.
	NN  string
	Run func(p *pool.Pool, dst, src []float32)
	// OpsPerElement is its arithmetic per element, as the kernel's
	// formula does it (not instructions), for the roofline.
	OpsPerElement int
}

// activations is every activation an ActivationStep computes (a constant
// table: read, never written).
var activations = [...]Activation{
	{Func: ActGelu, Op: "sqc.Gelu", Approximate: compiler.GeluExact, NN: "GeluParallel", Run: nn.GeluParallel, OpsPerElement: 12},            // erf polynomial, 0.5*x*(1+erf)
	{Func: ActGeluTanh, Op: "sqc.Gelu", Approximate: compiler.GeluTanh, NN: "GeluTanhParallel", Run: nn.GeluTanhParallel, OpsPerElement: 12}, // the same polynomial, another table
	{Func: ActTanh, Op: "Tanh", NN: "TanhSliceParallel", Run: nn.TanhSliceParallel, OpsPerElement: 10},
	{Func: ActRelu, Op: "Relu", NN: "ReluParallel", Run: nn.ReluParallel, OpsPerElement: 1},
	{Func: ActSilu, Op: "sqc.Silu", NN: "SiluParallel", Run: nn.SiluParallel, OpsPerElement: 15}, // exp: 9 Horner steps and 2^k; then 1+t, x*t, the division
}

// activationFor returns the activation that lowers node n: its op and,
// for sqc.Gelu, its approximate attribute.
func activationFor(n *compiler.Node) (Activation, bool) {
	approximate := ""
	if n.Op == "sqc.Gelu" {
		approximate = compiler.GeluApproximate(n)
	}
	for _, a := range activations {
		if a.Op == n.Op && a.Approximate == approximate {
			return a, true
		}
	}
	return Activation{}, false
}

// Activation is the step's function.
func (s *ActivationStep) Activation() Activation {
	for _, a := range activations {
		if a.Func == s.Func {
			return a
		}
	}
	return Activation{}
}

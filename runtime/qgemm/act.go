package qgemm

import (
	"fmt"
	"math"
	"strings"

	"github.com/sqc-dev/sqc/internal/expf"
	"github.com/sqc-dev/sqc/internal/gelu"
)

// This file is the one place that defines the epilogue's activations: an
// activation added here (its constant, name and float32 function) runs in
// every GEMM at once, on the pure-Go epilogue and, until asmgen/qgemm gives
// it an AVX-512 loop (its epilogueActs), on the Go fallback of the assembly
// epilogue; TestEpilogueAsmCoversEveryAct asks for that loop.

// Act is the activation the epilogue applies between the bias and the
// residual.
type Act uint8

// Activations the epilogue can apply. The values are the act codes of the
// assembly epilogue (asmgen/qgemm's epilogueActs) and part of no file
// format: use String and ParseAct to name them.
const (
	ActNone     Act = iota
	ActGelu         // erf GELU: 0.5*x*(1+erf(x/sqrt2))
	ActRelu         // max(x, 0) with -0 giving +0 and NaN kept (PyTorch's relu)
	ActGeluTanh     // tanh GELU: 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3)))
	// ActGeluU8 and ActGeluTanhU8 are the two GELUs to u8 precision:
	// internal/gelu's short tables (GeluShort, GeluTanhShort; absolute
	// error below gelu.ShortMaxError), for an epilogue whose output is u8
	// with a code step of at least gelu.ShortMinStep, and only there
	// (GEMM rejects them with a float32 output). Fewer vector operations
	// than the full ones, for epilogues that bound a GEMM
	// (passes.ShortenGeluForU8 chooses them).
	ActGeluU8
	ActGeluTanhU8
	// ActSilu is x·sigmoid(x) (internal/expf.Silu): NomicBERT's SwiGLU
	// gate.
	ActSilu

	actCount // one past the last activation
)

// String returns the activation's name, the act attribute of sqc.QLinear
// ("none", "gelu", "relu", "gelu_tanh", "gelu_u8", "gelu_tanh_u8",
// "silu"), or
// "Act(n)" for a value that is no activation.
func (a Act) String() string {
	switch a {
	case ActNone:
		return "none"
	case ActGelu:
		return "gelu"
	case ActRelu:
		return "relu"
	case ActGeluTanh:
		return "gelu_tanh"
	case ActGeluU8:
		return "gelu_u8"
	case ActGeluTanhU8:
		return "gelu_tanh_u8"
	case ActSilu:
		return "silu"
	}
	return fmt.Sprintf("Act(%d)", uint8(a))
}

// Apply is the activation's float32 function, bit for bit what every
// epilogue writes (the identity for ActNone and for a value that is no
// activation, which GEMM rejects).
func (a Act) Apply(x float32) float32 {
	v := [1]float32{x}
	a.ApplyAll(v[:])
	return v[0]
}

// ApplyAll applies the activation to every element of v in place: a loop
// per activation, so that the pure-Go epilogue pays no switch or call per
// element where the function is small. GELU, erf or tanh, is
// internal/gelu's, whose AVX-512 form asmgen/geluavo emits; SiLU is
// internal/expf's, whose forms asmgen/expavo emits.
func (a Act) ApplyAll(v []float32) {
	switch a {
	case ActGelu:
		for i, x := range v {
			v[i] = gelu.Gelu(x)
		}
	case ActRelu:
		for i, x := range v {
			v[i] = Relu(x)
		}
	case ActGeluTanh:
		for i, x := range v {
			v[i] = gelu.GeluTanh(x)
		}
	case ActGeluU8:
		for i, x := range v {
			v[i] = gelu.GeluShort(x)
		}
	case ActGeluTanhU8:
		for i, x := range v {
			v[i] = gelu.GeluTanhShort(x)
		}
	case ActSilu:
		for i, x := range v {
			v[i] = expf.Silu(x)
		}
	}
}

// U8Only reports whether the activation is only valid with a u8 output
// whose code step is at least gelu.ShortMinStep.
func (a Act) U8Only() bool { return a == ActGeluU8 || a == ActGeluTanhU8 }

// Short returns the activation to u8 precision that a u8 output with code
// step (quantisation scale) step may use instead of a, if there is one:
// the short GELU of a full one, where step >= gelu.ShortMinStep.
func (a Act) Short(step float32) (Act, bool) {
	if !(step >= gelu.ShortMinStep) {
		return a, false
	}
	switch a {
	case ActGelu:
		return ActGeluU8, true
	case ActGeluTanh:
		return ActGeluTanhU8, true
	}
	return a, false
}

// ParseAct returns the activation that String names s.
func ParseAct(s string) (Act, error) {
	names := make([]string, actCount)
	for a := range actCount {
		if a.String() == s {
			return a, nil
		}
		names[a] = a.String()
	}
	return ActNone, fmt.Errorf("qgemm: unknown activation %q (want one of %s)", s, strings.Join(names, ", "))
}

// Relu is the epilogue's ReLU (ActRelu): max(x, 0) with -0 giving +0 and
// NaN kept (its bits unchanged), as PyTorch's relu; runtime/nn.Relu runs
// it. Its AVX-512 form is a compare and a zeroing move (epilogueRelu in
// asmgen/qgemm says why not MAXPS).
func Relu(x float32) float32 {
	// On the bits, so that the compiler selects with a conditional move:
	// the sign of x is data, and a branch on it mispredicts about half the
	// time.
	bits := math.Float32bits(x)
	if x <= 0 { // false for NaN
		bits = 0
	}
	return math.Float32frombits(bits)
}

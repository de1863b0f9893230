package compiler

import "fmt"

// sqc's own ops (domain "sqc"), produced by canonicalisation and fusion
// passes. To add one: append an OpDef to the list below with Name
// "sqc.<Op>", Domain DomainSqc, Since 0, arity, attributes, dtype and shape
// rules and a one-line Doc. Keep the Doc exact enough that the FP32
// interpreter can implement the op from it alone.

func sqcOps() []*OpDef {
	return []*OpDef{
		{
			Name: "sqc.Gelu", Domain: DomainSqc,
			Doc: "Y = 0.5 * X * (1 + erf(X / sqrt(2))) elementwise (approximate \"none\", the default: exact erf-form GELU, sqc's canonical form of the Div/Erf/Add/Mul/Mul pattern), " +
				"or Y = 0.5 * X * (1 + tanh(sqrt(2/pi) * (X + 0.044715 * X^3))) (approximate \"tanh\": HF gelu_new / gelu_pytorch_tanh), as ONNX Gelu-20.",
			MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 1,
			Attrs:  []AttrSpec{{Name: "approximate", Kind: AttrString}},
			DTypes: DTypeRule{In: []string{"T"}, Out: []string{"T"}, Vars: map[string][]DType{"T": floatTypes()}},
			Shape:  sameShapeRule,
			Check:  geluCheck,
		},
		{
			Name: "sqc.Silu", Domain: DomainSqc,
			Doc:       "Y = X * sigmoid(X) = X / (1 + exp(-X)) elementwise (SiLU, PyTorch's silu: sqc's canonical form of Mul(X, Sigmoid(X))).",
			MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 1,
			DTypes: DTypeRule{In: []string{"T"}, Out: []string{"T"}, Vars: map[string][]DType{"T": floatTypes()}},
			Shape:  sameShapeRule,
		},
		{
			Name: "sqc.Linear", Domain: DomainSqc,
			Doc:       "Y = X @ W + B with X [..., in], W [in, out] (already transposed from torch's [out, in]) and optional B [out]; Y is [..., out].",
			MinInputs: 2, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 1,
			DTypes: DTypeRule{In: []string{"T", "T", "T"}, Out: []string{"T"}, Vars: map[string][]DType{"T": floatTypes()}},
			Shape:  linearShape,
		},
		attentionMaskOp(), // ops_sqc_attention.go
		attentionOp(),
		qlinearOp(),       // ops_sqc_quant.go
		quantizeOp(),      // ops_sqc_quantize.go
		embeddingsOp(),    // ops_sqc_embed.go
		layerNormDualOp(), // ops_sqc_layernorm.go
		layerNormU8Op(),
		rotaryOp(),           // ops_sqc_rotary.go
		maskedSumOp(),        // ops_sqc_pool.go
		disentangledBiasOp(), // ops_sqc_disentangled.go
	}
}

// sqc.Gelu's approximate values (ONNX Gelu-20's).
const (
	GeluExact = "none" // erf form, the default
	GeluTanh  = "tanh" // tanh approximation
)

// GeluApproximate returns a sqc.Gelu node's approximate attribute
// (absent: GeluExact).
func GeluApproximate(n *Node) string { return attrString(n, "approximate", GeluExact) }

func geluCheck(n *Node, _ int64) error {
	switch a := GeluApproximate(n); a {
	case GeluExact, GeluTanh:
		return nil
	default:
		return fmt.Errorf("sqc.Gelu approximate = %q (want %q or %q)", a, GeluExact, GeluTanh)
	}
}

func linearShape(a *InferArgs) ([]Inferred, error) {
	x, w := a.in(0).Shape, a.in(1).Shape
	if err := requireRank("sqc.Linear weight", w, 2); err != nil {
		return nil, err
	}
	if b := a.in(2); b.Present {
		if err := requireRank("sqc.Linear bias", b.Shape, 1); err != nil {
			return nil, err
		}
		if w != nil && b.Shape != nil && !dimsMatch(b.Shape[0], w[1]) {
			return nil, fmt.Errorf("%w: sqc.Linear bias %s for weight %s", ErrShapeMismatch, b.Shape, w)
		}
	}
	if x == nil || w == nil {
		return one(nil), nil
	}
	if len(x) == 0 {
		return nil, fmt.Errorf("%w: sqc.Linear of a scalar", ErrShapeMismatch)
	}
	if !dimsMatch(x[len(x)-1], w[0]) {
		return nil, fmt.Errorf("%w: sqc.Linear input %s does not match weight %s", ErrShapeMismatch, x, w)
	}
	out := x.Clone()
	out[len(out)-1] = w[1]
	return one(out), nil
}

package compiler

import (
	"fmt"
	"math"
)

// OpDef of sqc.LayerNormDual, made by the passes package's
// MergeSmoothedLayerNorms from the two LayerNormalizations of one input
// that SmoothQuant leaves in BERT's post-LN blocks: the original (its
// output is the residual stream) and the twin with gamma/s and beta/s
// that feeds the quantised Q/K/V or FFN-input GEMMs (listed in sqcOps).
//
// sqc.LayerNormDual(x, scale, scale_q[, bias, bias_q]) {epsilon}: x is
// [..., N], the four parameters [N]; bias and bias_q are both given or both
// omitted. y and y_q have x's shape. Each output is exactly ONNX
// LayerNormalization over the last axis (axis -1, stash_type 1) with that
// epsilon (default 1e-5):
//
//	y   = LayerNormalization(x, scale,   bias)
//	y_q = LayerNormalization(x, scale_q, bias_q)
//
// Both use the same row statistics, so a kernel computes the mean and
// 1/sqrt(var + epsilon) once per row and writes both outputs from one pass
// over it; per element, with the statistics in float64 and the rest in
// float32, each operation rounded (internal/lnstats: the FP32
// interpreter's and runtime/nn's formula),
//
//	z     = ((x_j - mean_hi) - mean_lo) * inv   (mean as two float32)
//	y_j   = z * scale_j   + bias_j
//	y_q_j = z * scale_q_j + bias_q_j
//
// which is what two separate LayerNormalizations compute, bit for bit.
//
// With out_scale s and out_zero_point z (passes.WriteU8Directly), y_q is
// u8: y_q_j = qgemm.QuantizeU8(z*scale_q_j + bias_q_j, float32(1)/s, z),
// the quantised input of the sqc.QLinear nodes reading it.
//
// in_producer 1 (passes.FuseLayerNormIntoQLinear) changes no value; see
// InProducer.
func layerNormDualOp() *OpDef {
	return &OpDef{
		Name: "sqc.LayerNormDual", Domain: DomainSqc,
		Doc: "Y = LayerNormalization(X, Scale, B) and YQ = LayerNormalization(X, ScaleQ, BQ) over the last axis (stash_type 1, epsilon default 1e-5), " +
			"inputs (X, Scale, ScaleQ[, B, BQ]) with X [..., N], the parameters [N], B and BQ both given or both omitted; Y and YQ have X's shape. " +
			"Per row, mean and inv = 1/sqrt(var + epsilon) in float64 (computed once), then in float32 as internal/lnstats orders it z = (x - mean)*inv, Y = z*Scale + B, YQ = z*ScaleQ + BQ.",
		MinInputs: 3, MaxInputs: 5, MinOutputs: 2, MaxOutputs: 2,
		Attrs: []AttrSpec{{Name: "epsilon", Kind: AttrFloat}, {Name: "out_scale", Kind: AttrFloat}, {Name: "out_zero_point", Kind: AttrInt},
			{Name: inProducerAttr, Kind: AttrInt}},
		// y_q is u8 when the node writes it quantised (U8Output).
		DTypes: DTypeRule{In: []string{"T", "T", "T", "T", "T"}, Out: []string{"T", "attr"}, OutFromAttr: u8OutputDType(Undefined), AttrElse: "T",
			Vars: map[string][]DType{"T": floatTypes()}},
		Shape: layerNormDualShape,
		Check: layerNormDualCheck,
	}
}

func layerNormDualCheck(n *Node, _ int64) error {
	if err := checkInProducer(n); err != nil {
		return err
	}
	bias := len(n.Inputs) > 3 && n.Inputs[3] != ""
	biasQ := len(n.Inputs) > 4 && n.Inputs[4] != ""
	if bias != biasQ {
		return fmt.Errorf("bias and bias_q must both be given or both omitted (bias %t, bias_q %t)", bias, biasQ)
	}
	if _, _, ok := U8Output(n); ok {
		if err := checkU8Params(n, "out_scale", "out_zero_point"); err != nil {
			return err
		}
	}
	if eps := n.AttrFloat("epsilon", 1e-5); !(eps >= 0) || math.IsInf(float64(eps), 0) {
		return fmt.Errorf("epsilon is %v, want finite and >= 0", eps)
	}
	return nil
}

func layerNormDualShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0).Shape
	if x != nil && len(x) == 0 {
		return nil, fmt.Errorf("%w: sqc.LayerNormDual of a scalar", ErrShapeMismatch)
	}
	for i, what := range []string{1: "scale", 2: "scale_q", 3: "bias", 4: "bias_q"} {
		if i == 0 || !a.present(i) {
			continue
		}
		s := a.in(i).Shape
		if err := requireRank("sqc.LayerNormDual "+what, s, 1); err != nil {
			return nil, err
		}
		if x != nil && s != nil && !dimsMatch(s[0], x[len(x)-1]) {
			return nil, fmt.Errorf("%w: sqc.LayerNormDual %s %s for input %s", ErrShapeMismatch, what, s, x)
		}
	}
	return []Inferred{{Shape: x.Clone()}, {Shape: x.Clone()}}, nil
}

// OpDef of sqc.LayerNorm, a LayerNormalization that also writes its
// output quantised, made by passes.WriteU8Directly when static sqc.QLinear
// nodes read it (listed in sqcOps).
//
// sqc.LayerNorm(x, scale[, bias]) {epsilon, out_scale, out_zero_point} ->
// (y_u8[, y]): x [..., N] f32, scale and bias [N]. y is ONNX
// LayerNormalization over the last axis (stash_type 1, epsilon default
// 1e-5) and y_u8 its quantised form, y_u8 = qgemm.QuantizeU8(y,
// float32(1)/out_scale, out_zero_point); y is omitted when nothing reads
// it in f32 (the INT8 engine then computes it only on the way to y_u8:
// nn.LayerNormU8 either way). in_producer 1 changes no value; see
// InProducer.
func layerNormU8Op() *OpDef {
	return &OpDef{
		Name: "sqc.LayerNorm", Domain: DomainSqc,
		Doc: "Y = LayerNormalization(X, Scale, B) over the last axis (stash_type 1, epsilon default 1e-5), X f32 [..., N], Scale and B [N]; " +
			"outputs (YU8[, Y]), YU8 = clamp(roundEven(clamp(Y*(1/out_scale), ±65536)) + out_zero_point, 0, 255) u8 with X's shape; Y optional.",
		MinInputs: 2, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 2,
		Attrs: []AttrSpec{{Name: "epsilon", Kind: AttrFloat}, {Name: "out_scale", Kind: AttrFloat, Required: true},
			{Name: "out_zero_point", Kind: AttrInt, Required: true}, {Name: inProducerAttr, Kind: AttrInt}},
		DTypes: DTypeRule{In: []string{"f32", "f32", "f32"}, Out: []string{"u8", "f32"}},
		Shape: func(a *InferArgs) ([]Inferred, error) {
			x := a.in(0).Shape
			if x != nil && len(x) == 0 {
				return nil, fmt.Errorf("%w: sqc.LayerNorm of a scalar", ErrShapeMismatch)
			}
			return []Inferred{{Shape: x.Clone()}, {Shape: x.Clone()}}, nil
		},
		Check: func(n *Node, _ int64) error {
			if err := checkInProducer(n); err != nil {
				return err
			}
			return checkU8Params(n, "out_scale", "out_zero_point")
		},
	}
}

// inProducerAttr is the attribute InProducer reads.
const inProducerAttr = "in_producer"

// InProducer reports whether an sqc.LayerNorm or sqc.LayerNormDual runs
// inside the sqc.QLinear that produces its input x: its in_producer
// attribute is 1 (set by passes.FuseLayerNormIntoQLinear). The INT8 engine
// then normalises each block of x's rows as soon as the GEMM has written
// it, while the rows are in cache, instead of in a step of its own
// (runtime/nn.LinearLayerNorm). It is a scheduling decision: every value
// is the same either way. The verifier checks the form it needs
// (checkInProducerEdge): x is the f32 output of an sqc.QLinear, read by
// this node alone and no graph output, and the node is one step (a dual
// LayerNorm writes y_q in u8).
func InProducer(n *Node) bool { return n.AttrInt(inProducerAttr, 0) == 1 }

// SetInProducer sets a LayerNorm's in_producer attribute to 1.
func SetInProducer(n *Node) {
	if n.Attrs == nil {
		n.Attrs = Attrs{}
	}
	n.Attrs[inProducerAttr] = IntAttr(1)
}

func checkInProducer(n *Node) error {
	if v := n.AttrInt(inProducerAttr, 0); v != 0 && v != 1 {
		return fmt.Errorf("%s is %d, want 0 or 1", inProducerAttr, v)
	}
	return nil
}

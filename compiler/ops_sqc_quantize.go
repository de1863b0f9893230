package compiler

import (
	"fmt"
	"math"
)

// OpDef of sqc.Quantize, the activation quantisation a quantised GEMM
// reads, made explicit by the passes package's MaterializeQuantize so that
// the IR (and `sqc inspect --int8`) shows every quantise the INT8 engine
// runs (listed in sqcOps).
//
// sqc.Quantize(x) {mode, scale, zero_point}: x f32 [..., K].
//
//	mode "static" (the default; scale s > 0 and finite, zero_point z in [0, 255]):
//	    y u8 [..., K],  y = qgemm.QuantizeU8(x, float32(1)/s, z)
//	mode "dynamic" (per token: each row r of x, the leading dims flattened):
//	    y u8 [..., K], row_scale f32 [...], row_zero_point i32 [...]
//	    (row_scale, row_zero_point) = nn.RowQuantParams(x[r]) and
//	    y[r] = qgemm.QuantizeU8(x[r], float32(1)/row_scale, row_zero_point)
//
// exactly the quantisation sqc.QLinear applies to an f32 input of the same
// act_mode, act_scale and act_zero_point (ops_sqc_quant.go), so a QLinear
// reading y computes what it computes reading x.
func quantizeOp() *OpDef {
	return &OpDef{
		Name: "sqc.Quantize", Domain: DomainSqc,
		Doc: "Static (mode \"static\", the default): Y u8 = clamp(roundEven(clamp(X*(1/scale), ±65536)) + zero_point, 0, 255), X f32 [..., K], Y [..., K]. " +
			"Dynamic (mode \"dynamic\", per token): per row lo = min(0, min X), hi = max(0, max X), s = (hi-lo)/255 (1 if 0), z = clamp(roundEven(-lo/s), 0, 255), " +
			"Y as static with s, z; outputs (Y, RowScale f32 [...], RowZeroPoint i32 [...]) with X's leading dims. Exactly sqc.QLinear's quantisation of its input.",
		MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 3,
		Attrs: []AttrSpec{
			{Name: "mode", Kind: AttrString},
			{Name: "scale", Kind: AttrFloat},
			{Name: "zero_point", Kind: AttrInt},
		},
		DTypes: DTypeRule{In: []string{"f32"}, Out: []string{"u8", "f32", "i32"}},
		Shape:  quantizeShape,
		Check:  quantizeCheck,
	}
}

// QuantizeMode returns an sqc.Quantize node's mode ("static" when absent).
func QuantizeMode(n *Node) string { return attrString(n, "mode", QLinearStatic) }

func quantizeCheck(n *Node, _ int64) error {
	switch mode := QuantizeMode(n); mode {
	case QLinearStatic:
		if len(n.Outputs) != 1 {
			return fmt.Errorf("static sqc.Quantize has one output, has %d", len(n.Outputs))
		}
		return checkU8Params(n, "scale", "zero_point")
	case QLinearDynamic:
		if len(n.Outputs) != 3 {
			return fmt.Errorf("dynamic sqc.Quantize has three outputs (y, row_scale, row_zero_point), has %d", len(n.Outputs))
		}
		if _, ok := n.Attrs["scale"]; ok {
			return fmt.Errorf("dynamic sqc.Quantize takes no scale")
		}
		if _, ok := n.Attrs["zero_point"]; ok {
			return fmt.Errorf("dynamic sqc.Quantize takes no zero_point")
		}
		return nil
	default:
		return fmt.Errorf("mode is %q, want %q or %q", mode, QLinearStatic, QLinearDynamic)
	}
}

// checkU8Params checks a static u8 quantisation's scale (present, > 0,
// finite) and zero point (present, 0..255), named by the two attributes.
func checkU8Params(n *Node, scale, zeroPoint string) error {
	_, hasScale := n.Attrs[scale]
	_, hasZero := n.Attrs[zeroPoint]
	if s := n.AttrFloat(scale, 0); !hasScale || !(s > 0) || math.IsInf(float64(s), 0) {
		return fmt.Errorf("%s must be > 0 and finite, has %v (present %t)", scale, s, hasScale)
	}
	if z := n.AttrInt(zeroPoint, 0); !hasZero || z < 0 || z > 255 {
		return fmt.Errorf("%s is %d (present %t), want 0..255", zeroPoint, z, hasZero)
	}
	return nil
}

func quantizeShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0).Shape
	if x != nil && len(x) == 0 {
		return nil, fmt.Errorf("%w: sqc.Quantize of a scalar", ErrShapeMismatch)
	}
	out := []Inferred{{Shape: x.Clone()}}
	if len(a.Node.Outputs) == 3 {
		var rows Shape
		if x != nil {
			rows = x[:len(x)-1].Clone()
		}
		out = append(out, Inferred{Shape: rows}, Inferred{Shape: rows.Clone()})
	}
	return out, nil
}

// U8Output reports the static quantisation a producer writes its output
// in (attributes out_scale and out_zero_point: sqc.QLinear's y,
// sqc.LayerNormDual's y_q), as passes.WriteU8Directly sets them: the
// output is then u8, the f32 form never exists.
func U8Output(n *Node) (scale float32, zeroPoint int32, ok bool) {
	if _, ok := n.Attrs["out_scale"]; !ok {
		return 0, 0, false
	}
	return n.AttrFloat("out_scale", 0), int32(n.AttrInt("out_zero_point", 0)), true
}

// SetU8Output makes n write its quantised output in the static form
// (scale, zeroPoint).
func SetU8Output(n *Node, scale float32, zeroPoint int32) {
	if n.Attrs == nil {
		n.Attrs = Attrs{}
	}
	n.Attrs["out_scale"] = FloatAttr(scale)
	n.Attrs["out_zero_point"] = IntAttr(int64(zeroPoint))
}

// u8OutputDType is the OutFromAttr of an output that is u8 when the node
// writes it quantised and otherwise f32 (or, with AttrElse, the rule's).
func u8OutputDType(otherwise DType) func(n *Node) (DType, error) {
	return func(n *Node) (DType, error) {
		if _, _, ok := U8Output(n); ok {
			return Uint8, checkU8Params(n, "out_scale", "out_zero_point")
		}
		return otherwise, nil
	}
}

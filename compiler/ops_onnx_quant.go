package compiler

import "fmt"

// The integer ops of models ONNX Runtime's quantiser has quantised
// already: dynamically (quantize_dynamic: transformers.js'
// model_quantized.onnx, optimum's dynamic quantisation)
// DynamicQuantizeLinear of the activations, MatMulInteger with the
// quantised weights, and DequantizeLinear after a Gather of a quantised
// embedding table; statically in the QDQ format (quantize_static, optimum's
// static quantisation) QuantizeLinear-DequantizeLinear pairs on the
// activations and DequantizeLinear of the quantised weights. The
// interpreter runs them as ONNX defines them (runtime/ops); the passes
// package's DequantizeIntegerOps rewrites them into the float ops they
// approximate, with the file's weights dequantised, which sqc then
// calibrates and quantises itself.

func onnxQuantOps() []*OpDef {
	return []*OpDef{
		{
			Name: "DynamicQuantizeLinear", Since: 11,
			Doc: "Y, Y_scale, Y_zero_point = the u8 quantisation of X over [min(0, min X), max(0, max X)]: scale = (max - min) / 255 (1 when max = min), " +
				"zero point = round(clamp(-min / scale, 0, 255)), Y = clamp(round(X / scale) + zero point, 0, 255), rounding half to even.",
			MinInputs: 1, MaxInputs: 1, MinOutputs: 3, MaxOutputs: 3,
			DTypes: DTypeRule{In: []string{"f32"}, Out: []string{"u8", "f32", "u8"}},
			Shape: func(a *InferArgs) ([]Inferred, error) {
				return []Inferred{{Shape: a.in(0).Shape.Clone()}, {Shape: Shape{}}, {Shape: Shape{}}}, nil
			},
		},
		{
			Name: "MatMulInteger", Since: 10,
			Doc: "Y = (A - a_zero_point) @ (B - b_zero_point) in int32, as numpy.matmul; a_zero_point is a scalar or one per row of A " +
				"(1-D, A 2-D), b_zero_point a scalar or one per column of B (1-D); absent zero points are 0.",
			MinInputs: 2, MaxInputs: 4, MinOutputs: 1, MaxOutputs: 1,
			DTypes: DTypeRule{In: []string{"T1", "T2", "T1", "T2"}, Out: []string{"i32"},
				Vars: map[string][]DType{"T1": {Uint8, Int8}, "T2": {Uint8, Int8}}},
			Shape: matMulShape,
		},
		{
			Name: "QuantizeLinear", Since: 10,
			Doc: "Y = clamp(round(X / y_scale) + y_zero_point) to Y's type (u8, or the zero point's: u8 or i8), rounding half to even; y_scale " +
				"(and y_zero_point, u8 0 when absent) a scalar or, from opset 13, one per index of X's axis (attribute, default 1); " +
				"blocked quantisation (block_size, opset 21) and output_dtype are not read.",
			MinInputs: 2, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 1,
			Attrs: []AttrSpec{{Name: "axis", Kind: AttrInt}, {Name: "saturate", Kind: AttrInt}, {Name: "block_size", Kind: AttrInt},
				{Name: "output_dtype", Kind: AttrInt}},
			DTypes: DTypeRule{In: []string{"f32", "f32", "T"}, Out: []string{"T"}, Vars: map[string][]DType{"T": {Uint8, Int8}}},
			Shape: func(a *InferArgs) ([]Inferred, error) {
				r := Inferred{Shape: a.in(0).Shape.Clone()}
				if !a.in(2).Present {
					r.DType = Uint8
				}
				return []Inferred{r}, nil
			},
			Check: func(n *Node, _ int64) error {
				for _, name := range []string{"block_size", "output_dtype"} {
					if v := n.AttrInt(name, 0); v != 0 {
						return fmt.Errorf("%s %d is not supported", name, v)
					}
				}
				return nil
			},
		},
		{
			Name: "DequantizeLinear", Since: 10,
			Doc: "Y = float32(X - x_zero_point) * x_scale, x_scale (and x_zero_point, 0 when absent) a scalar or, from opset 13, " +
				"one per index of X's axis (attribute, default 1); blocked quantisation (block_size, opset 21) is not read.",
			MinInputs: 2, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 1,
			Attrs:  []AttrSpec{{Name: "axis", Kind: AttrInt}, {Name: "block_size", Kind: AttrInt}},
			DTypes: DTypeRule{In: []string{"T", "f32", "T"}, Out: []string{"f32"}, Vars: map[string][]DType{"T": {Uint8, Int8, Int32}}},
			Shape:  sameShapeRule,
			Check: func(n *Node, _ int64) error {
				if b := n.AttrInt("block_size", 0); b != 0 {
					return fmt.Errorf("block_size %d: blocked dequantisation is not supported", b)
				}
				return nil
			},
		},
	}
}

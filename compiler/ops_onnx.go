package compiler

// ONNX (default domain) ops: every op torch.onnx.export emits for HF BERT,
// DistilBERT, RoBERTa and MiniLM encoders at opsets 11-23 (none of these
// changes meaning between 17 and 23 beyond new dtypes sqc does not read).
// Semantics are ONNX's; Doc notes where an op's interface differs between
// opsets. The function ops of newer opsets the dynamo exporter writes
// (Gelu, Attention) are not here: the ONNX frontend expands them.

func onnxOps() []*OpDef {
	return []*OpDef{
		elementwise("Add", "C = A + B with numpy broadcasting.", 7, numericTypes(), foldAdd),
		elementwise("Sub", "C = A - B with numpy broadcasting.", 7, numericTypes(), foldSub),
		elementwise("Mul", "C = A * B with numpy broadcasting.", 7, numericTypes(), foldMul),
		elementwise("Div", "C = A / B with numpy broadcasting; integer division truncates.", 7, numericTypes(), foldDiv),
		{
			Name: "Pow", Elementwise: true, Since: 7, Doc: "Z = X ** Y with numpy broadcasting; Y may have another numeric dtype (opset 12+).",
			MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
			DTypes: DTypeRule{In: []string{"T", "T1"}, Out: []string{"T"},
				Vars: map[string][]DType{"T": numericTypes(), "T1": numericTypes()}},
			Shape: broadcastRule(nil),
		},
		compare("Equal", "C = (A == B) elementwise with broadcasting; bool result.", 11, foldEqual),
		compare("Less", "C = (A < B) elementwise with broadcasting; bool result.", 9, foldLess),
		compare("Greater", "C = (A > B) elementwise with broadcasting; bool result.", 9, foldGreater),
		compare("GreaterOrEqual", "C = (A >= B) elementwise with broadcasting; bool result.", 12, foldGreaterOrEqual),
		compare("LessOrEqual", "C = (A <= B) elementwise with broadcasting; bool result.", 12, foldLessOrEqual),
		logical("And", "C = A and B elementwise on bools with broadcasting.", foldAnd),
		logical("Or", "C = A or B elementwise on bools with broadcasting.", foldOr),
		extremum("Max", "Max = the elementwise maximum of one or more inputs with numpy broadcasting (NaN if any input is NaN).", foldMax),
		extremum("Min", "Min = the elementwise minimum of one or more inputs with numpy broadcasting (NaN if any input is NaN).", foldMin),
		{
			Name: "IsNaN", Elementwise: true, Since: 9, Doc: "Y = (X is NaN) elementwise; bool result.",
			MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 1,
			DTypes: DTypeRule{In: []string{"T"}, Out: []string{"bool"}, Vars: map[string][]DType{"T": floatTypes()}},
			Shape:  func(a *InferArgs) ([]Inferred, error) { return one(a.in(0).Shape.Clone()), nil },
		},
		unary("Sqrt", "Y = sqrt(X) elementwise.", 6, floatTypes()),
		unary("Log", "Y = ln(X) elementwise (-inf at 0, NaN below).", 6, floatTypes()),
		unary("Ceil", "Y = the least integer >= X elementwise (DeBERTa's log-bucketed relative positions).", 6, floatTypes()),
		unary("Floor", "Y = the greatest integer <= X elementwise.", 6, floatTypes()),
		unary("Sign", "Y = -1, 0 or 1 by the sign of X elementwise (NaN stays NaN).", 9, numericTypes()),
		withFold(unary("Abs", "Y = |X| elementwise; the most negative integer stays itself (two's complement).", 6, numericTypes()), foldAbs),
		unary("Erf", "Y = erf(X) elementwise (Gauss error function).", 9, floatTypes()),
		unary("Tanh", "Y = tanh(X) elementwise.", 6, floatTypes()),
		unary("Sin", "Y = sin(X) elementwise (radians).", 7, floatTypes()),
		unary("Cos", "Y = cos(X) elementwise (radians).", 7, floatTypes()),
		unary("Relu", "Y = max(X, 0) elementwise.", 6, floatTypes()),
		unary("Sigmoid", "Y = 1 / (1 + exp(-X)) elementwise.", 6, floatTypes()),
		withFold(unary("Neg", "Y = -X elementwise.", 6, signedTypes()), foldNeg),
		withFold(unary("Not", "Y = !X elementwise on bools.", 1, []DType{Bool}), foldNot),
		{
			Name: "GatherElements", Since: 11, Doc: "Output[i...] = Data[i...] with the axis coordinate replaced by Indices[i...] (attribute axis, default 0): shape of Indices, which matches Data's rank; negative indices count from the end.",
			MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
			Attrs: []AttrSpec{{Name: "axis", Kind: AttrInt}},
			DTypes: DTypeRule{In: []string{"T", "Tind"}, Out: []string{"T"},
				Vars: map[string][]DType{"Tind": indexTypes()}},
			Shape: gatherElementsShape,
		},
		{
			Name: "GatherND", Since: 11, Doc: "Output = Data gathered at the index tuples of Indices' last axis (length k): shape indices[:-1] + data[batch_dims + k:], " +
				"the first batch_dims axes (attribute, opset 12+, default 0) shared by Data and Indices; negative indices count from the end.",
			MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
			Attrs:  []AttrSpec{{Name: "batch_dims", Kind: AttrInt}},
			DTypes: DTypeRule{In: []string{"T", "i64"}, Out: []string{"T"}},
			Shape:  gatherNDShape,
		},
		{
			Name: "Identity", Elementwise: true, Since: 1, Doc: "Y = X (a copy; carries contents through constant folding).",
			MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 1,
			DTypes: DTypeRule{In: []string{"T"}, Out: []string{"T"}},
			Shape: func(a *InferArgs) ([]Inferred, error) {
				x := a.in(0)
				return []Inferred{{Shape: x.Shape.Clone(), Sym: passSym(a, x.Shape), Const: x.Const}}, nil
			},
		},
		{
			Name: "Where", Elementwise: true, Since: 9, Doc: "Output = Condition ? X : Y elementwise with broadcasting of all three.",
			MinInputs: 3, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 1,
			DTypes: DTypeRule{In: []string{"bool", "T", "T"}, Out: []string{"T"}},
			Shape:  broadcastRule(foldWhere),
		},
		{
			Name: "Cast", Elementwise: true, Since: 6, Doc: "Y = X converted to the dtype given by attribute to (an ONNX TensorProto type code).",
			MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 1,
			Attrs:  []AttrSpec{{Name: "to", Kind: AttrInt, Required: true}, {Name: "saturate", Kind: AttrInt}},
			DTypes: DTypeRule{In: []string{""}, Out: []string{"attr"}, OutFromAttr: castTarget},
			Shape:  castShape,
		},
		{
			Name: "MatMul", Since: 9, Doc: "Y = A @ B as numpy.matmul: batched over leading dims with broadcasting; 1-D operands promoted.",
			MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
			DTypes: DTypeRule{In: []string{"T", "T"}, Out: []string{"T"},
				Vars: map[string][]DType{"T": {Float32, Float64, Int32, Int64}}},
			Shape: matMulShape,
		},
		{
			Name: "Gemm", Since: 11, Doc: "Y = alpha * A' @ B' + beta * C for 2-D A, B (A' = A^T if transA, B' = B^T if transB); C broadcasts to [M, N] and is optional from opset 11.",
			MinInputs: 2, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 1,
			Attrs: []AttrSpec{{Name: "alpha", Kind: AttrFloat}, {Name: "beta", Kind: AttrFloat},
				{Name: "transA", Kind: AttrInt}, {Name: "transB", Kind: AttrInt}},
			DTypes: DTypeRule{In: []string{"T", "T", "T"}, Out: []string{"T"},
				Vars: map[string][]DType{"T": {Float32, Float64, Int32, Int64}}},
			Shape: gemmShape,
			Check: gemmCheck,
		},
		{
			Name: "Gather", Since: 11, Doc: "Output = Data indexed by Indices along axis (default 0): shape data[:axis] + indices + data[axis+1:]; negative indices count from the end.",
			MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
			Attrs: []AttrSpec{{Name: "axis", Kind: AttrInt}},
			DTypes: DTypeRule{In: []string{"T", "Tind"}, Out: []string{"T"},
				Vars: map[string][]DType{"Tind": indexTypes()}},
			Shape: gatherShape,
		},
		reduce("ReduceMean", "Mean over axes (all when absent); keepdims (default 1) keeps reduced axes as 1. Axes: attribute before opset 18, optional input 1 from 18.", 18),
		reduce("ReduceSum", "Sum over axes (all when absent); keepdims (default 1) keeps reduced axes as 1. Axes: attribute before opset 13, optional input 1 from 13.", 13),
		{
			Name: "LayerNormalization", Since: 17, Doc: "Y = (X - mean) / sqrt(var + epsilon) * Scale + B, statistics over axes [axis, rank) (axis default -1, epsilon default 1e-5); optional outputs Mean and InvStdDev (f32).",
			MinInputs: 2, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 3,
			Attrs: []AttrSpec{{Name: "axis", Kind: AttrInt}, {Name: "epsilon", Kind: AttrFloat}, {Name: "stash_type", Kind: AttrInt}},
			DTypes: DTypeRule{In: []string{"T", "T", "T"}, Out: []string{"T", "f32", "f32"},
				Vars: map[string][]DType{"T": floatTypes()}},
			Shape: layerNormShape,
		},
		{
			Name: "Softmax", Since: 1, Doc: "Y = exp(X) / sum(exp(X)) along axis. Opset 13+: over the single axis (default -1); before 13: over all dims from axis (default 1) on, X seen as 2-D.",
			MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 1,
			Attrs:  []AttrSpec{{Name: "axis", Kind: AttrInt}},
			DTypes: DTypeRule{In: []string{"T"}, Out: []string{"T"}, Vars: map[string][]DType{"T": floatTypes()}},
			Shape:  softmaxShape,
		},
		{
			Name: "Transpose", Since: 1, Doc: "Y = X with dims permuted by perm (default: reversed): Y.shape[i] = X.shape[perm[i]].",
			MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 1,
			Attrs:  []AttrSpec{{Name: "perm", Kind: AttrInts}},
			DTypes: DTypeRule{In: []string{"T"}, Out: []string{"T"}},
			Shape:  transposeShape,
			Check:  transposeCheck,
		},
		{
			Name: "Reshape", Since: 5, Doc: "Reshaped = Data viewed with the i64 shape given by input 1; 0 copies the input dim (unless allowzero, opset 14+), one -1 is inferred.",
			MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
			Attrs:  []AttrSpec{{Name: "allowzero", Kind: AttrInt}},
			DTypes: DTypeRule{In: []string{"T", "i64"}, Out: []string{"T"}},
			Shape:  reshapeShape,
		},
		{
			Name: "Unsqueeze", Since: 1, Doc: "Expanded = Data with size-1 dims inserted at axes (indices into the output). Axes: attribute before opset 13, input 1 from 13.",
			MinInputs: 1, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
			Attrs:  []AttrSpec{{Name: "axes", Kind: AttrInts}},
			DTypes: DTypeRule{In: []string{"T", "i64"}, Out: []string{"T"}},
			Shape:  unsqueezeShape,
			Check:  axesFormCheck(13, true),
		},
		{
			Name: "Squeeze", Since: 1, Doc: "Squeezed = Data with the size-1 dims at axes removed (all size-1 dims when absent). Axes: attribute before opset 13, optional input 1 from 13.",
			MinInputs: 1, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
			Attrs:  []AttrSpec{{Name: "axes", Kind: AttrInts}},
			DTypes: DTypeRule{In: []string{"T", "i64"}, Out: []string{"T"}},
			Shape:  squeezeShape,
			Check:  axesFormCheck(13, false),
		},
		{
			Name: "Concat", Since: 4, Doc: "Concat_result = inputs joined along axis (required); other dims must match.",
			MinInputs: 1, MaxInputs: Variadic, MinOutputs: 1, MaxOutputs: 1,
			Attrs:  []AttrSpec{{Name: "axis", Kind: AttrInt, Required: true}},
			DTypes: DTypeRule{In: []string{"T"}, Out: []string{"T"}},
			Shape:  concatShape,
		},
		{
			Name: "Slice", Since: 10, Doc: "Output = Data[starts:ends:steps] on axes. Opset 10+: inputs data, starts, ends, optional axes and steps; before 10: attributes starts, ends, axes. Bounds clamp; negative values count from the end.",
			MinInputs: 1, MaxInputs: 5, MinOutputs: 1, MaxOutputs: 1,
			Attrs: []AttrSpec{{Name: "starts", Kind: AttrInts}, {Name: "ends", Kind: AttrInts}, {Name: "axes", Kind: AttrInts}},
			DTypes: DTypeRule{In: []string{"T", "Tind", "Tind", "Tind", "Tind"}, Out: []string{"T"},
				Vars: map[string][]DType{"Tind": indexTypes()}},
			Shape: sliceShape,
			Check: sliceCheck,
		},
		{
			Name: "Shape", Since: 1, Doc: "Shape = the i64 dims of Data, optionally only dims [start, end) (opset 15+).",
			MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 1,
			Attrs:  []AttrSpec{{Name: "start", Kind: AttrInt}, {Name: "end", Kind: AttrInt}},
			DTypes: DTypeRule{In: []string{""}, Out: []string{"i64"}},
			Shape:  shapeOpShape,
		},
		{
			Name: "Constant", Since: 1, Doc: "Output = the constant given by exactly one of the attributes value (tensor), value_float(s) or value_int(s) (opset 12+).",
			MinInputs: 0, MaxInputs: 0, MinOutputs: 1, MaxOutputs: 1,
			Attrs: []AttrSpec{{Name: "value", Kind: AttrTensor}, {Name: "value_float", Kind: AttrFloat},
				{Name: "value_floats", Kind: AttrFloats}, {Name: "value_int", Kind: AttrInt}, {Name: "value_ints", Kind: AttrInts}},
			DTypes: DTypeRule{Out: []string{"attr"}, OutFromAttr: constantDType},
			Shape:  constantShape,
			Check:  constantCheck,
		},
		{
			Name: "ConstantOfShape", Since: 9, Doc: "Output = a tensor of the i64 shape given by input 0, every element the one-element tensor attribute value (default f32 0).",
			MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 1,
			Attrs:  []AttrSpec{{Name: "value", Kind: AttrTensor}},
			DTypes: DTypeRule{In: []string{"i64"}, Out: []string{"attr"}, OutFromAttr: constantOfShapeDType},
			Shape:  constantOfShapeShape,
			Check:  constantOfShapeCheck,
		},
		{
			Name: "Expand", Since: 8, Doc: "Output = Input broadcast (bidirectionally) with the i64 shape given by input 1.",
			MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
			DTypes: DTypeRule{In: []string{"T", "i64"}, Out: []string{"T"}},
			Shape:  expandShape,
		},
		{
			Name: "Tile", Since: 6, Doc: "Output = Input repeated repeats[i] times along each axis i (input 1, i64 of the input's rank): out.shape[i] = in.shape[i] * repeats[i].",
			MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
			DTypes: DTypeRule{In: []string{"T", "i64"}, Out: []string{"T"}},
			Shape:  tileShape,
		},
		{
			Name: "Range", Since: 11, Doc: "Output = 1-D [start, start+delta, ...) up to limit (exclusive), from scalar inputs start, limit, delta.",
			MinInputs: 3, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 1,
			DTypes: DTypeRule{In: []string{"T", "T", "T"}, Out: []string{"T"},
				Vars: map[string][]DType{"T": {Float32, Float64, Int32, Int64}}},
			Shape: rangeShape,
		},
		{
			Name: "CumSum", Since: 11, Doc: "Y = cumulative sum of X along the scalar axis input; exclusive and reverse attributes as ONNX (RoBERTa position ids).",
			MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
			Attrs: []AttrSpec{{Name: "exclusive", Kind: AttrInt}, {Name: "reverse", Kind: AttrInt}},
			DTypes: DTypeRule{In: []string{"T", "Tax"}, Out: []string{"T"},
				Vars: map[string][]DType{"T": {Float32, Float64, Int32, Int64}, "Tax": indexTypes()}},
			Shape: sameShapeRule,
		},
		einsumOp(), // ops_onnx_einsum.go
	}
}

// elementwise defines a two-input arithmetic op.
func elementwise(name, doc string, since int64, types []DType, fold func([]SymInt) SymInt) *OpDef {
	return &OpDef{
		Name: name, Since: since, Doc: doc,
		MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
		DTypes: DTypeRule{In: []string{"T", "T"}, Out: []string{"T"}, Vars: map[string][]DType{"T": types}},
		Shape:  broadcastRule(fold), Elementwise: true,
	}
}

func compare(name, doc string, since int64, fold func([]SymInt) SymInt) *OpDef {
	return &OpDef{
		Name: name, Since: since, Doc: doc,
		MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
		DTypes: DTypeRule{In: []string{"T", "T"}, Out: []string{"bool"}, Vars: map[string][]DType{"T": allTypes()}},
		Shape:  broadcastRule(fold), Elementwise: true,
	}
}

// logical defines a two-input op on bools (And, Or; opset 7 broadcasting).
func logical(name, doc string, fold func([]SymInt) SymInt) *OpDef {
	return &OpDef{
		Name: name, Since: 7, Doc: doc,
		MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
		DTypes: DTypeRule{In: []string{"bool", "bool"}, Out: []string{"bool"}},
		Shape:  broadcastRule(fold), Elementwise: true,
	}
}

func unary(name, doc string, since int64, types []DType) *OpDef {
	return &OpDef{
		Name: name, Since: since, Doc: doc,
		MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 1,
		DTypes: DTypeRule{In: []string{"T"}, Out: []string{"T"}, Vars: map[string][]DType{"T": types}},
		Shape:  sameShapeRule, Elementwise: true,
	}
}

// extremum defines Max or Min (opset 8+: variadic with broadcasting).
func extremum(name, doc string, fold func([]SymInt) SymInt) *OpDef {
	return &OpDef{
		Name: name, Since: 8, Doc: doc,
		MinInputs: 1, MaxInputs: Variadic, MinOutputs: 1, MaxOutputs: 1,
		DTypes: DTypeRule{In: []string{"T"}, Out: []string{"T"}, Vars: map[string][]DType{"T": numericTypes()}},
		Shape:  broadcastRule(fold), Elementwise: true,
	}
}

func withFold(op *OpDef, fold func([]SymInt) SymInt) *OpDef {
	op.Shape = unaryFold(fold)
	return op
}

// reduce defines ReduceMean/ReduceSum; axesInputSince is the opset from
// which axes is input 1 rather than an attribute.
func reduce(name, doc string, axesInputSince int64) *OpDef {
	return &OpDef{
		Name: name, Since: 1, Doc: doc,
		MinInputs: 1, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
		Attrs: []AttrSpec{{Name: "axes", Kind: AttrInts}, {Name: "keepdims", Kind: AttrInt},
			{Name: "noop_with_empty_axes", Kind: AttrInt}},
		DTypes: DTypeRule{In: []string{"T", "i64"}, Out: []string{"T"},
			Vars: map[string][]DType{"T": {Float32, Float64, Int32, Int64}}},
		Shape: reduceShape,
		Check: axesFormCheck(axesInputSince, false),
	}
}

package compiler

import (
	"fmt"
	"math"
)

// OpDefs of the attention ops made by the passes package's
// CanonicalizeAttentionMask and FuseAttention (listed in sqcOps).

// attentionMaskOp: sqc.AttentionMask(mask) {fill} -> additive mask.
func attentionMaskOp() *OpDef {
	return &OpDef{
		Name: "sqc.AttentionMask", Domain: DomainSqc,
		Doc: "Y[b, 0, 0, s] = (M[b, s] != 0) ? 0 : fill, with M [batch, seq] (1 = attend, 0 = padding) and Y float32 [batch, 1, 1, seq]: " +
			"the additive attention mask; fill defaults to the float32 minimum, as HF's (1 - mask) * finfo.min and masked_fill use.",
		MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 1,
		Attrs: []AttrSpec{{Name: "fill", Kind: AttrFloat}},
		DTypes: DTypeRule{
			In: []string{"M"}, Out: []string{"f32"},
			Vars: map[string][]DType{"M": {Int64, Int32, Int8, Uint8, Bool, Float32}},
		},
		Shape: attentionMaskShape,
	}
}

// AttentionMaskDefaultFill is sqc.AttentionMask's fill when the attribute is
// absent: -math.MaxFloat32, torch.finfo(torch.float32).min.
const AttentionMaskDefaultFill = -math.MaxFloat32

// MaxZeroingMaskFill is the highest sqc.AttentionMask fill that gives a
// masked key a softmax weight of exactly zero, so that skipping the key
// (packed batches) or adding the mask in another order (a position bias
// summed into it) computes the same. The weight is exp(score + fill -
// max), zero in float32 once the exponent is below -104 (the smallest
// subnormal is e^-103.3): with fill <= -1e4 that holds while no masked
// key's score exceeds the largest live one by 9,896. Exporters write
// float32's lowest (BERT since transformers 4.x), -inf, -10000 (older BERT
// code), -65504 (float16's lowest) or -1e4 (onnxconverter-common's clip of
// a float16 model).
const MaxZeroingMaskFill = -1e4

func attentionMaskShape(a *InferArgs) ([]Inferred, error) {
	m := a.in(0).Shape
	if err := requireRank("sqc.AttentionMask input", m, 2); err != nil {
		return nil, err
	}
	if m == nil {
		return one(unknownShape(4)), nil
	}
	return one(Shape{m[0], {Size: 1}, {Size: 1}, m[1]}), nil
}

// attentionOp: sqc.Attention(q, k, v[, mask[, bias]]) {heads, scale}, or,
// with qkv_packed = 1, sqc.Attention(qkv, _, _[, mask[, bias]]): the form
// FuseQKV makes when one QLinear computes Q, K and V side by side.
func attentionOp() *OpDef {
	return &OpDef{
		Name: "sqc.Attention", Domain: DomainSqc,
		Doc: "Multi-head scaled dot-product attention on unsplit heads: Q [batch, sq, heads*d], K and V [batch, sk, heads*d], optional additive " +
			"Mask broadcastable to [batch, heads, sq, sk]; Y[b, i, h*d+e] = sum_j P[b,h,i,j] * V[b, j, h*d+e] with " +
			"P[b,h,i,:] = softmax_j(scale * sum_c Q[b,i,h*d+c] * K[b,j,h*d+c] + Mask[b,h,i,j]); Y is [batch, sq, heads*d]. " +
			"An optional Bias (input 4, MPNet's relative position bias) broadcastable likewise is added to the mask first: " +
			"Mask[b,h,i,j] above is float32(Bias[b,h,i,j] + Mask[b,h,i,j]) (Mask 0 where input 3 is omitted), a sum of two finite values that overflows being " +
			"±math.MaxFloat32, not ±Inf (runtime/nn.AddSaturating: a window bias of float32's lowest on the padding mask's lowest is lowest). " +
			"With bias_by_position = 1 (set by passes.MarkPositionOnlyBias), Bias has no batch dim above 1 and Bias[h,i,j] depends on h, i and j only, " +
			"not on the sequence length: a shorter sequence's bias is the top-left corner of a longer one's. " +
			"With qkv_packed = 1, input 0 is QKV [batch, seq, 3*heads*d] holding Q, K and V in columns [0, W), [W, 2W) and [2W, 3W) " +
			"(W = heads*d), inputs 1 and 2 are omitted, and Y is [batch, seq, W]. " +
			"With int8 = 1 (set by QuantizeAttention), Q·K^T and P·V are u8 x s8 GEMMs with dynamic scales (K per key, Q per query, " +
			"V per channel over the keys the mask leaves, P = roundEven(255 * e / max e) per row): runtime/nn.AttentionInt8 defines the bits. " +
			"With int8 = 1 and out_scale s, out_zero_point z (passes.WriteU8Directly), Y is u8, " +
			"clamp(roundEven(clamp(Y*(1/s), ±65536)) + z, 0, 255): sqc.Quantize's codes of the f32 Y, written by the P·V epilogue.",
		MinInputs: 1, MaxInputs: 5, MinOutputs: 1, MaxOutputs: 1,
		Attrs: []AttrSpec{
			{Name: "heads", Kind: AttrInt, Required: true},
			{Name: "scale", Kind: AttrFloat, Required: true},
			{Name: "qkv_packed", Kind: AttrInt},
			{Name: "int8", Kind: AttrInt},
			{Name: "out_scale", Kind: AttrFloat},
			{Name: "out_zero_point", Kind: AttrInt},
			{Name: "bias_by_position", Kind: AttrInt},
		},
		// Y is u8 when the node writes it quantised (U8Output).
		DTypes: DTypeRule{In: []string{"T", "T", "T", "T", "T"}, Out: []string{"attr"}, OutFromAttr: u8OutputDType(Undefined), AttrElse: "T",
			Vars: map[string][]DType{"T": floatTypes()}},
		Shape: attentionShape,
		Check: attentionCheck,
	}
}

// AttentionInt8 reports whether an sqc.Attention node runs its two
// matmuls as INT8 GEMMs (int8 = 1).
func AttentionInt8(n *Node) bool { return n.AttrInt("int8", 0) == 1 }

// AttentionBiasByPosition reports whether an sqc.Attention node's bias
// is proved to depend on the head and the query and key positions only
// (bias_by_position = 1), so that a packed batch may read each
// sequence's corner of the bias computed at the batch's longest.
func AttentionBiasByPosition(n *Node) bool { return n.AttrInt("bias_by_position", 0) == 1 }

// AttentionPacked reports whether an sqc.Attention node reads Q, K and V
// packed in its first input (qkv_packed = 1).
func AttentionPacked(n *Node) bool { return n.AttrInt("qkv_packed", 0) == 1 }

func attentionCheck(n *Node, _ int64) error {
	if h := n.AttrInt("heads", 0); h <= 0 {
		return fmt.Errorf("heads is %d, want > 0", h)
	}
	present := func(i int) bool { return i < len(n.Inputs) && n.Inputs[i] != "" }
	switch p := n.AttrInt("qkv_packed", 0); p {
	case 0:
		if !present(1) || !present(2) {
			return fmt.Errorf("key and value inputs are required (qkv_packed is 0)")
		}
	case 1:
		if present(1) || present(2) {
			return fmt.Errorf("qkv_packed = 1 takes Q, K and V in input 0: inputs 1 and 2 must be omitted")
		}
	default:
		return fmt.Errorf("qkv_packed is %d, want 0 or 1", p)
	}
	switch p := n.AttrInt("bias_by_position", 0); {
	case p != 0 && p != 1:
		return fmt.Errorf("bias_by_position is %d, want 0 or 1", p)
	case p == 1 && !present(4):
		return fmt.Errorf("bias_by_position = 1 without a bias (input 4)")
	}
	if q := n.AttrInt("int8", 0); q != 0 && q != 1 {
		return fmt.Errorf("int8 is %d, want 0 or 1", q)
	}
	if _, _, ok := U8Output(n); ok {
		if !AttentionInt8(n) {
			return fmt.Errorf("out_scale (a u8 output) needs int8 = 1: only INT8 attention's P·V epilogue writes u8")
		}
		if err := checkU8Params(n, "out_scale", "out_zero_point"); err != nil {
			return err
		}
	}
	return nil
}

// attentionShape infers Y's shape; for the packed form it checks QKV's
// width against 3 * heads and treats it as Q = K = V of a third of it.
func attentionShape(a *InferArgs) ([]Inferred, error) {
	if AttentionPacked(a.Node) {
		qkv := a.in(0).Shape
		if err := requireRank("sqc.Attention packed QKV", qkv, 3); err != nil {
			return nil, err
		}
		if qkv == nil {
			return one(nil), nil
		}
		heads := a.Node.AttrInt("heads", 1)
		out := qkv.Clone()
		if w := qkv[2]; w.Known() {
			if heads <= 0 || w.Size%(3*heads) != 0 {
				return nil, fmt.Errorf("%w: sqc.Attention packed QKV width %d is not a multiple of 3 x %d heads", ErrShapeMismatch, w.Size, heads)
			}
			out[2] = Dim{Size: w.Size / 3}
		} else {
			out[2] = unknownDim()
		}
		return attentionUnpackedShape(a, out, out, out)
	}
	return attentionUnpackedShape(a, a.in(0).Shape, a.in(1).Shape, a.in(2).Shape)
}

func attentionUnpackedShape(a *InferArgs, q, k, v Shape) ([]Inferred, error) {
	for i, s := range []Shape{q, k, v} {
		if err := requireRank(fmt.Sprintf("sqc.Attention input %d", i), s, 3); err != nil {
			return nil, err
		}
	}
	heads := a.Node.AttrInt("heads", 1)
	for i, s := range []Shape{q, k, v} {
		if s != nil && s[2].Known() && heads > 0 && s[2].Size%heads != 0 {
			return nil, fmt.Errorf("%w: sqc.Attention input %d width %d is not a multiple of %d heads", ErrShapeMismatch, i, s[2].Size, heads)
		}
	}
	if k != nil && v != nil && (!dimsMatch(k[0], v[0]) || !dimsMatch(k[1], v[1]) || !dimsMatch(k[2], v[2])) {
		return nil, fmt.Errorf("%w: sqc.Attention key %s and value %s differ", ErrShapeMismatch, k, v)
	}
	if q != nil && k != nil && (!dimsMatch(q[0], k[0]) || !dimsMatch(q[2], k[2])) {
		return nil, fmt.Errorf("%w: sqc.Attention query %s and key %s do not match", ErrShapeMismatch, q, k)
	}
	if m := a.in(3); m.Present && m.Shape != nil && q != nil && k != nil {
		scores := Shape{q[0], {Size: heads}, q[1], k[1]}
		if len(m.Shape) > 4 {
			return nil, fmt.Errorf("%w: sqc.Attention mask %s has rank above 4", ErrShapeMismatch, m.Shape)
		}
		if _, err := broadcastShapes(scores, m.Shape); err != nil {
			return nil, fmt.Errorf("%w: sqc.Attention mask %s does not broadcast to scores %s", ErrShapeMismatch, m.Shape, scores)
		}
	}
	return one(q.Clone()), nil
}

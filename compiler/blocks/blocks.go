// Package blocks appends the standard-ONNX subgraphs of BERT-family
// encoders to a compiler.Graph: GELU (erf and tanh forms), the head split
// and merge of multi-head attention, scaled dot-product attention, the
// extended attention mask, LayerNormalization, embedding lookups and the
// position-table slice, each in the form torch.onnx.export writes it. Those
// are the forms sqc's fusion passes (FuseGelu, FuseAttention,
// CanonicalizeAttentionMask, FuseEmbeddings, FuseLinear) recognise, so a
// frontend that emits a block through this package gets the fused op
// without a matcher of its own. compiler/hf builds whole models from
// weights with it; compiler/onnx expands ONNX Runtime's fused com.microsoft
// ops into it.
package blocks

import (
	"fmt"
	"math"

	"github.com/sqc-dev/sqc/compiler"
)

// Builder appends nodes and constants to G. Every node has one output,
// which is also its name.
type Builder struct {
	G *compiler.Graph
	// Fresh, when set, turns each wanted node or constant name into one not
	// yet used in G (compiler.Namer.Fresh): for adding nodes to a graph
	// that has names of its own. Nil keeps names as given (a graph the
	// builder makes alone, whose names are unique by construction).
	Fresh func(string) string
	// consts maps a constant's wanted name to the name it was given, so a
	// constant asked for twice is made once.
	consts map[string]string
}

func (b *Builder) name(want string) string {
	if b.Fresh == nil {
		return want
	}
	return b.Fresh(want)
}

// constant registers t under name unless a constant of that wanted name
// exists already (each wanted name must stand for one value), and returns
// the name it has.
func (b *Builder) constant(name string, make func() *compiler.Tensor) string {
	if got, ok := b.consts[name]; ok {
		return got
	}
	if _, ok := b.G.Initializers[name]; ok && b.Fresh == nil {
		return name
	}
	got := b.name(name)
	b.G.Initializers[got] = make()
	if b.consts == nil {
		b.consts = map[string]string{}
	}
	b.consts[name] = got
	return got
}

// Scalar is a float32 scalar constant (one per name).
func (b *Builder) Scalar(name string, v float32) string {
	return b.constant(name, func() *compiler.Tensor {
		t := compiler.NewTensor(compiler.Float32)
		t.F32[0] = v
		return t
	})
}

// Ints is a 1-D int64 constant (one per name).
func (b *Builder) Ints(name string, v ...int64) string {
	return b.constant(name, func() *compiler.Tensor {
		t := compiler.NewTensor(compiler.Int64, int64(len(v)))
		copy(t.I64, v)
		return t
	})
}

// IntScalar is a 0-D int64 constant (one per name).
func (b *Builder) IntScalar(name string, v int64) string {
	return b.constant(name, func() *compiler.Tensor {
		t := compiler.NewTensor(compiler.Int64)
		t.I64[0] = v
		return t
	})
}

// Op appends a node whose single output is named out (also the node's
// name) and returns the output's name.
func (b *Builder) Op(op, out string, inputs ...string) string {
	return b.OpAttrs(op, out, nil, inputs...)
}

// OpAttrs is Op with attributes.
func (b *Builder) OpAttrs(op, out string, attrs map[string]compiler.Attr, inputs ...string) string {
	out = b.name(out)
	b.G.Nodes = append(b.G.Nodes, &compiler.Node{
		Name:    out,
		Op:      op,
		Inputs:  inputs,
		Outputs: []string{out},
		Attrs:   attrs,
	})
	return out
}

// Rename gives value (produced by the most recent node that made it) the
// name to, so a block's result can become a graph output or keep the name
// its readers use. Call it before anything consumes value.
func (b *Builder) Rename(value, to string) string {
	for i := len(b.G.Nodes) - 1; i >= 0; i-- {
		outs := b.G.Nodes[i].Outputs
		for j := range outs {
			if outs[j] == value {
				outs[j] = to
				return to
			}
		}
	}
	return to
}

// LayerNorm is LayerNormalization over the last axis with scale and bias.
func (b *Builder) LayerNorm(x, scale, bias, out string, epsilon float32) string {
	return b.OpAttrs("LayerNormalization", out, map[string]compiler.Attr{
		"axis":    compiler.IntAttr(-1),
		"epsilon": compiler.FloatAttr(epsilon),
	}, x, scale, bias)
}

// GeluErf is GELU in the order torch.onnx.export writes F.gelu:
// (x · (erf(x / √2) + 1)) · 0.5.
func (b *Builder) GeluErf(x, scope string) string {
	erf := b.Op("Erf", scope+"/Erf", b.Op("Div", scope+"/div_sqrt2", x, b.Scalar("const.sqrt2", float32(math.Sqrt2))))
	onePlus := b.Op("Add", scope+"/one_plus_erf", erf, b.Scalar("const.one", 1))
	return b.Op("Mul", scope+"/gelu", b.Op("Mul", scope+"/x_times", x, onePlus), b.Scalar("const.half", 0.5))
}

// GeluTanh is 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), as
// transformers' NewGELUActivation writes it.
func (b *Builder) GeluTanh(x, scope string) string {
	cube := b.Op("Mul", scope+"/cube", b.Op("Mul", scope+"/square", x, x), x)
	inner := b.Op("Add", scope+"/inner", x, b.Op("Mul", scope+"/cubic_term", cube, b.Scalar("const.gelu_cubic", 0.044715)))
	scaled := b.Op("Mul", scope+"/scaled", inner, b.Scalar("const.sqrt_2_over_pi", float32(math.Sqrt(2/math.Pi))))
	onePlus := b.Op("Add", scope+"/one_plus_tanh", b.Op("Tanh", scope+"/Tanh", scaled), b.Scalar("const.one", 1))
	return b.Op("Mul", scope+"/gelu", b.Op("Mul", scope+"/half_x", x, b.Scalar("const.half", 0.5)), onePlus)
}

// Silu is x · sigmoid(x), as torch.onnx.export writes F.silu.
func (b *Builder) Silu(x, scope string) string {
	return b.Op("Mul", scope+"/silu", x, b.Op("Sigmoid", scope+"/Sigmoid", x))
}

// SplitHeads reshapes [batch, seq, heads·headSize] to [batch, seq, heads,
// headSize] and permutes it with perm: {0,2,1,3} for queries and values,
// {0,2,3,1} for keys (already transposed for Q·Kᵀ).
func (b *Builder) SplitHeads(x, scope string, heads, headSize int, perm ...int64) string {
	shape := b.Ints(fmt.Sprintf("const.heads_shape.%d.%d", heads, headSize), 0, 0, int64(heads), int64(headSize))
	r := b.Op("Reshape", scope+"/Reshape", x, shape)
	return b.OpAttrs("Transpose", scope+"/Transpose", map[string]compiler.Attr{"perm": compiler.IntsAttr(perm...)}, r)
}

// MergeHeads turns [batch, heads, seq, headSize] back into [batch, seq,
// hidden].
func (b *Builder) MergeHeads(x, scope string, hidden int) string {
	t := b.OpAttrs("Transpose", scope+"/Transpose", map[string]compiler.Attr{"perm": compiler.IntsAttr(0, 2, 1, 3)}, x)
	shape := b.Ints(fmt.Sprintf("const.hidden_shape.%d", hidden), 0, 0, int64(hidden))
	return b.Op("Reshape", scope+"/Reshape", t, shape)
}

// SelfAttention is eager multi-head attention on projected q, k and v
// ([batch, seq, heads·headSize] each): softmax(scaleOp(Q·Kᵀ, scale) +
// maskBias)·V per head ("" maskBias: none), the heads merged back to
// [batch, seq, hidden]. scaleOp is "Div" or "Mul"; scale names a scalar
// constant.
func (b *Builder) SelfAttention(scope, q, k, v, scaleOp, scale, maskBias string, heads, headSize int) string {
	return b.BiasedSelfAttention(scope, q, k, v, scaleOp, scale, "", maskBias, heads, headSize)
}

// BiasedSelfAttention is SelfAttention with posBias (when not "") added to
// the scaled scores before the mask, (scores + posBias) + maskBias, as
// MPNet adds its relative position bias.
func (b *Builder) BiasedSelfAttention(scope, q, k, v, scaleOp, scale, posBias, maskBias string, heads, headSize int) string {
	return b.selfAttention(scope, q, k, v, scaleOp, scale, heads, headSize, scoreTerm{"/biased_scores", posBias}, scoreTerm{"/masked_scores", maskBias})
}

// MaskedBiasedSelfAttention is SelfAttention with bias added to the
// masked scores, (scores + maskBias) + bias, as JinaBERT adds its ALiBi
// bias.
func (b *Builder) MaskedBiasedSelfAttention(scope, q, k, v, scaleOp, scale, maskBias, bias string, heads, headSize int) string {
	return b.selfAttention(scope, q, k, v, scaleOp, scale, heads, headSize, scoreTerm{"/masked_scores", maskBias}, scoreTerm{"/biased_scores", bias})
}

// scoreTerm is an addend of the scaled scores ("" value: none) and the
// suffix of the Add's name.
type scoreTerm struct{ suffix, value string }

func (b *Builder) selfAttention(scope, q, k, v, scaleOp, scale string, heads, headSize int, terms ...scoreTerm) string {
	q = b.SplitHeads(q, scope+".query", heads, headSize, 0, 2, 1, 3)
	kT := b.SplitHeads(k, scope+".key", heads, headSize, 0, 2, 3, 1)
	v = b.SplitHeads(v, scope+".value", heads, headSize, 0, 2, 1, 3)
	scores := b.Op("MatMul", scope+"/scores", q, kT)
	scores = b.Op(scaleOp, scope+"/scaled_scores", scores, scale)
	for _, t := range terms {
		if t.value != "" {
			scores = b.Op("Add", scope+t.suffix, scores, t.value)
		}
	}
	probs := b.Softmax(scores, scope+"/probs")
	ctx := b.Op("MatMul", scope+"/context", probs, v)
	return b.MergeHeads(ctx, scope+".context", heads*headSize)
}

// HeadDivisor is √headSize as the float32 that math.sqrt(head_size)
// becomes in PyTorch: the divisor of attention scores.
func (b *Builder) HeadDivisor(headSize int) string {
	return b.Scalar(fmt.Sprintf("const.sqrt_head_size.%d", headSize), float32(math.Sqrt(float64(headSize))))
}

// ExtendedMask is BERT's extended attention mask: (1 - mask) · fill for a
// [batch, seq] 0/1 mask, shaped [batch, 1, 1, seq] to broadcast over heads
// and query positions. fill names a scalar constant.
func (b *Builder) ExtendedMask(mask, scope, fill string) string {
	m := b.CastFloat(mask, scope+"/Cast")
	m = b.Op("Unsqueeze", scope+"/Unsqueeze", m, b.Ints("const.i64.[1,2]", 1, 2))
	inv := b.Op("Sub", scope+"/one_minus", b.Scalar("const.one", 1), m)
	return b.Op("Mul", scope+"/bias", inv, fill)
}

// PositionRows returns rows 0..seq-1 of a position table, [seq, hidden],
// seq read from ids' shape: position ids 0..seq-1, as in transformers,
// gathered by slicing the table.
func (b *Builder) PositionRows(table, ids, scope string) string {
	shape := b.Op("Shape", scope+"/input_shape", ids)
	seqLen := b.OpAttrs("Gather", scope+"/seq_len", map[string]compiler.Attr{"axis": compiler.IntAttr(0)}, shape, b.Ints("const.i64.[1]", 1))
	return b.Op("Slice", scope+"/position_rows", table, b.Ints("const.i64.[0]", 0), seqLen, b.Ints("const.i64.[0]", 0))
}

// Gather looks up rows of an embedding table by integer ids.
func (b *Builder) Gather(table, ids, scope string) string {
	return b.OpAttrs("Gather", scope+"/Gather", map[string]compiler.Attr{"axis": compiler.IntAttr(0)}, table, ids)
}

// Softmax over the last axis (the key positions).
func (b *Builder) Softmax(x, out string) string {
	return b.OpAttrs("Softmax", out, map[string]compiler.Attr{"axis": compiler.IntAttr(-1)}, x)
}

// CastFloat converts x to float32.
func (b *Builder) CastFloat(x, out string) string {
	return b.OpAttrs("Cast", out, map[string]compiler.Attr{"to": compiler.IntAttr(compiler.Float32.ONNX())}, x)
}

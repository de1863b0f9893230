package hf

import (
	"fmt"
	"math"

	"github.com/sqc-dev/sqc/compiler"
)

// float32Min is torch.finfo(torch.float32).min, the additive mask value
// `transformers` uses for padded keys.
const float32Min = -math.MaxFloat32

// builder appends nodes to a graph. It keeps the first weight error and
// carries on with placeholder names, so block code reads as straight-line
// model code; Build checks err at the end.
type builder struct {
	g       *compiler.Graph
	cfg     Config
	weights WeightSource
	file    string // for weight error messages
	err     error
}

// weight fetches parameter name in shape, checks it, and registers it as an
// initializer under the same name.
func (b *builder) weight(name string, shape ...int64) string {
	t := b.fetch(name, shape)
	if t != nil {
		b.g.Initializers[name] = t
	}
	return name
}

// weightT fetches a Linear weight stored [out, in] and registers its
// transpose [in, out] as "<name>.T", the right-hand operand of a MatMul on
// [batch, sequence, in] activations (the layout torch.onnx.export uses).
func (b *builder) weightT(name string, out, in int64) string {
	tname := name + ".T"
	t := b.fetch(name, []int64{out, in})
	if t == nil {
		return tname
	}
	tt := compiler.NewTensor(compiler.Float32, in, out)
	for o := range out {
		for i := range in {
			tt.F32[i*out+o] = t.F32[o*in+i]
		}
	}
	b.g.Initializers[tname] = tt
	return tname
}

func (b *builder) fetch(name string, shape []int64) *compiler.Tensor {
	if b.err != nil {
		return nil
	}
	t, err := b.weights.Weight(name, shape)
	if err == nil {
		err = checkWeight(b.file, name, t, shape)
	}
	if err != nil {
		b.err = err
		return nil
	}
	return t
}

// scalar registers a float32 scalar constant (shared by name).
func (b *builder) scalar(name string, v float32) string {
	if _, ok := b.g.Initializers[name]; !ok {
		t := compiler.NewTensor(compiler.Float32)
		t.F32[0] = v
		b.g.Initializers[name] = t
	}
	return name
}

// ints registers a 1-D int64 constant (shared by name).
func (b *builder) ints(name string, v ...int64) string {
	if _, ok := b.g.Initializers[name]; !ok {
		t := compiler.NewTensor(compiler.Int64, int64(len(v)))
		copy(t.I64, v)
		b.g.Initializers[name] = t
	}
	return name
}

// intScalar registers a 0-D int64 constant (shared by name).
func (b *builder) intScalar(name string, v int64) string {
	if _, ok := b.g.Initializers[name]; !ok {
		t := compiler.NewTensor(compiler.Int64)
		t.I64[0] = v
		b.g.Initializers[name] = t
	}
	return name
}

// op appends a node whose single output is named out (also the node's
// name) and returns out.
func (b *builder) op(op, out string, inputs ...string) string {
	return b.opAttrs(op, out, nil, inputs...)
}

func (b *builder) opAttrs(op, out string, attrs map[string]compiler.Attr, inputs ...string) string {
	b.g.Nodes = append(b.g.Nodes, &compiler.Node{
		Name:    out,
		Op:      op,
		Inputs:  inputs,
		Outputs: []string{out},
		Attrs:   attrs,
	})
	return out
}

// rename gives value (produced by the most recent node that made it) a new
// name, so a block's result can become a graph output ("last_hidden_state").
// Call it before anything consumes value.
func (b *builder) rename(value, to string) string {
	for i := len(b.g.Nodes) - 1; i >= 0; i-- {
		outs := b.g.Nodes[i].Outputs
		for j := range outs {
			if outs[j] == value {
				outs[j] = to
				return to
			}
		}
	}
	return to
}

// linear is nn.Linear on [..., in] activations: x·Wᵀ + b, as MatMul by the
// transposed weight and Add of the bias.
func (b *builder) linear(x, param string, in, out int) string {
	w := b.weightT(param+".weight", int64(out), int64(in))
	bias := b.weight(param+".bias", int64(out))
	y := b.op("MatMul", param+"/MatMul", x, w)
	return b.op("Add", param+"/Add", y, bias)
}

// gemm is nn.Linear on a [batch, in] matrix, as Gemm with transB=1 on the
// weight as stored, the way torch.onnx.export writes classifier heads.
func (b *builder) gemm(x, param string, in, out int) string {
	w := b.weight(param+".weight", int64(out), int64(in))
	bias := b.weight(param+".bias", int64(out))
	return b.opAttrs("Gemm", param+"/Gemm", map[string]compiler.Attr{
		"transB": {Kind: compiler.AttrInt, Int: 1},
	}, x, w, bias)
}

// layerNorm is nn.LayerNorm over the last axis with weight and bias.
func (b *builder) layerNorm(x, param string) string {
	h := int64(b.cfg.HiddenSize)
	scale := b.weight(param+".weight", h)
	bias := b.weight(param+".bias", h)
	return b.opAttrs("LayerNormalization", param+"/LayerNormalization", map[string]compiler.Attr{
		"axis":    {Kind: compiler.AttrInt, Int: -1},
		"epsilon": {Kind: compiler.AttrFloat, Float: float32(b.cfg.LayerNormEps)},
	}, x, scale, bias)
}

// activation applies the FFN nonlinearity named by the config.
func (b *builder) activation(x, scope string) string {
	switch b.cfg.HiddenAct {
	case ActRELU:
		return b.op("Relu", scope+"/Relu", x)
	case ActGELUNew, ActGELUTanh:
		// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), as NewGELUActivation.
		cube := b.op("Mul", scope+"/cube", b.op("Mul", scope+"/square", x, x), x)
		inner := b.op("Add", scope+"/inner", x, b.op("Mul", scope+"/cubic_term", cube, b.scalar("const.gelu_cubic", 0.044715)))
		scaled := b.op("Mul", scope+"/scaled", inner, b.scalar("const.sqrt_2_over_pi", float32(math.Sqrt(2/math.Pi))))
		onePlus := b.op("Add", scope+"/one_plus_tanh", b.op("Tanh", scope+"/Tanh", scaled), b.scalar("const.one", 1))
		return b.op("Mul", scope+"/gelu", b.op("Mul", scope+"/half_x", x, b.scalar("const.half", 0.5)), onePlus)
	default:
		// Erf GELU in the order torch.onnx.export writes F.gelu:
		// (x · (erf(x / √2) + 1)) · 0.5.
		erf := b.op("Erf", scope+"/Erf", b.op("Div", scope+"/div_sqrt2", x, b.scalar("const.sqrt2", float32(math.Sqrt2))))
		onePlus := b.op("Add", scope+"/one_plus_erf", erf, b.scalar("const.one", 1))
		return b.op("Mul", scope+"/gelu", b.op("Mul", scope+"/x_times", x, onePlus), b.scalar("const.half", 0.5))
	}
}

// splitHeads reshapes [batch, seq, hidden] to [batch, seq, heads, head] and
// permutes it with perm: {0,2,1,3} for queries and values, {0,2,3,1} for
// keys (already transposed for Q·Kᵀ).
func (b *builder) splitHeads(x, scope string, perm ...int64) string {
	shape := b.ints(fmt.Sprintf("const.heads_shape.%d.%d", b.cfg.NumHeads, b.cfg.HeadSize()),
		0, 0, int64(b.cfg.NumHeads), int64(b.cfg.HeadSize()))
	r := b.op("Reshape", scope+"/Reshape", x, shape)
	return b.opAttrs("Transpose", scope+"/Transpose", map[string]compiler.Attr{
		"perm": {Kind: compiler.AttrInts, Ints: perm},
	}, r)
}

// mergeHeads turns [batch, heads, seq, head] back into [batch, seq, hidden].
func (b *builder) mergeHeads(x, scope string) string {
	t := b.opAttrs("Transpose", scope+"/Transpose", map[string]compiler.Attr{
		"perm": {Kind: compiler.AttrInts, Ints: []int64{0, 2, 1, 3}},
	}, x)
	shape := b.ints(fmt.Sprintf("const.hidden_shape.%d", b.cfg.HiddenSize), 0, 0, int64(b.cfg.HiddenSize))
	return b.op("Reshape", scope+"/Reshape", t, shape)
}

// positionEmbeddings returns rows 0..seq-1 of the position table, [seq,
// hidden]: position ids are 0..seq-1 as in `transformers`, and gathering
// those rows is slicing the table, with seq read from input_ids' shape.
func (b *builder) positionEmbeddings(table, inputIDs, scope string) string {
	shape := b.op("Shape", scope+"/input_shape", inputIDs)
	seqLen := b.opAttrs("Gather", scope+"/seq_len", map[string]compiler.Attr{
		"axis": {Kind: compiler.AttrInt, Int: 0},
	}, shape, b.ints("const.i64.[1]", 1))
	return b.op("Slice", scope+"/position_rows", table, b.ints("const.i64.[0]", 0), seqLen, b.ints("const.i64.[0]", 0))
}

// firstToken takes hidden[:, 0], the [CLS] vector: [batch, hidden].
func (b *builder) firstToken(x, scope string) string {
	return b.opAttrs("Gather", scope+"/first_token", map[string]compiler.Attr{
		"axis": {Kind: compiler.AttrInt, Int: 1},
	}, x, b.intScalar("const.i64.0", 0))
}

// onnxFloat is TensorProto.FLOAT, the code Cast's "to" attribute carries in
// the IR as in ONNX.
const onnxFloat = 1

// castFloat converts x to float32.
func (b *builder) castFloat(x, out string) string {
	return b.opAttrs("Cast", out, map[string]compiler.Attr{
		"to": {Kind: compiler.AttrInt, Int: onnxFloat},
	}, x)
}

package hf

import (
	"math"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/blocks"
)

// float32Min is torch.finfo(torch.float32).min, the additive mask value
// `transformers` uses for padded keys.
const float32Min = -math.MaxFloat32

// builder appends nodes to a graph. It keeps the first weight error and
// carries on with placeholder names, so block code reads as straight-line
// model code; Build checks err at the end.
type builder struct {
	blocks.Builder
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
		b.G.Initializers[name] = t
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
	b.G.Initializers[tname] = tt
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

// linear is nn.Linear on [..., in] activations: x·Wᵀ + b, as MatMul by the
// transposed weight and Add of the bias.
func (b *builder) linear(x, param string, in, out int) string {
	w := b.weightT(param+".weight", int64(out), int64(in))
	bias := b.weight(param+".bias", int64(out))
	y := b.Op("MatMul", param+"/MatMul", x, w)
	return b.Op("Add", param+"/Add", y, bias)
}

// gemm is nn.Linear on a [batch, in] matrix, as Gemm with transB=1 on the
// weight as stored, the way torch.onnx.export writes classifier heads.
func (b *builder) gemm(x, param string, in, out int) string {
	w := b.weight(param+".weight", int64(out), int64(in))
	bias := b.weight(param+".bias", int64(out))
	return b.OpAttrs("Gemm", param+"/Gemm", map[string]compiler.Attr{
		"transB": {Kind: compiler.AttrInt, Int: 1},
	}, x, w, bias)
}

// layerNorm is nn.LayerNorm over the last axis, of the hidden size, with
// weight and bias.
func (b *builder) layerNorm(x, param string) string { return b.layerNormOf(x, param, b.cfg.HiddenSize) }

// layerNormOf is nn.LayerNorm over a last axis of width.
func (b *builder) layerNormOf(x, param string, width int) string {
	h := int64(width)
	scale := b.weight(param+".weight", h)
	bias := b.weight(param+".bias", h)
	return b.LayerNorm(x, scale, bias, param+"/LayerNormalization", float32(b.cfg.LayerNormEps))
}

// activation applies the FFN nonlinearity named by the config.
func (b *builder) activation(x, scope string) string {
	return b.activationNamed(x, scope, b.cfg.HiddenAct)
}

// splitHeads is blocks' SplitHeads at the config's head count and size.
func (b *builder) splitHeads(x, scope string, perm ...int64) string {
	return b.SplitHeads(x, scope, b.cfg.NumHeads, b.cfg.HeadSize(), perm...)
}

// mergeHeads is blocks' MergeHeads at the config's hidden size.
func (b *builder) mergeHeads(x, scope string) string {
	return b.MergeHeads(x, scope, b.cfg.HiddenSize)
}

// firstToken takes hidden[:, 0], the [CLS] vector: [batch, hidden].
func (b *builder) firstToken(x, scope string) string {
	return b.OpAttrs("Gather", scope+"/first_token", map[string]compiler.Attr{
		"axis": {Kind: compiler.AttrInt, Int: 1},
	}, x, b.IntScalar("const.i64.0", 0))
}

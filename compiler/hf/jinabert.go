package hf

import (
	"math"
	"math/bits"
	"strconv"

	"github.com/sqc-dev/sqc/compiler"
)

// jinaActivations maps JinaBERT's feed_forward_type to the activation of
// the gated half, by ACT2FN name: JinaBertGLUMLP takes nn.GELU() (erf)
// for "geglu" and nn.ReLU() for "reglu", whatever hidden_act says.
var jinaActivations = map[string]string{"geglu": ActGELU, "reglu": ActRELU}

// jinaQKPostNormRepo is the hub repository of jina-embeddings-v2-base-code's
// modeling code, which config.json's auto_map names (Config.JinaQKPostNorm).
const jinaQKPostNormRepo = "jinaai/jina-bert-v2-qk-post-norm"

// buildJinaBERT emits JinaBertModel or JinaBertForSequenceClassification
// after Jina AI's modeling_bert.py (jinaai/jina-bert-implementation, eval
// mode, eager attention), with the parameter names of its published
// checkpoints: word + token type embeddings (no position table) and
// LayerNorm; BERT's layers with the ALiBi bias added to the masked scores,
// softmax(Q·Kᵀ/√d + mask + alibi), and the gated feed-forward
// mlp.layernorm(mlp.wo(act(g[..., :i]) · g[..., i:]) + x) of g =
// mlp.gated_layers(x) (no bias); BERT's pooler (when the checkpoint has
// one, for the base model) and classifier. prefix is "bert." for the
// classifier, "" for the base model.
func buildJinaBERT(b *builder, prefix string, pooled bool) {
	c := b.cfg
	h, inter := c.HiddenSize, c.IntermediateSize
	scope := prefix + "embeddings"
	x := b.layerNorm(b.wordAndTypeEmbeddings(scope, int64(h)), scope+".LayerNorm")
	mask := b.bertMaskBias()
	alibi := b.jinaALiBi(prefix + "encoder/alibi")
	for l := range c.NumLayers {
		scope := prefix + "encoder.layer." + strconv.Itoa(l)
		attn := scope + ".attention.self"
		q := b.linear(x, attn+".query", h, h)
		k := b.linear(x, attn+".key", h, h)
		if c.JinaQKPostNorm {
			q, k = b.layerNorm(q, attn+".layer_norm_q"), b.layerNorm(k, attn+".layer_norm_k")
		}
		v := b.linear(x, attn+".value", h, h)
		ctx := b.MaskedBiasedSelfAttention(attn, q, k, v, "Div", b.HeadDivisor(c.HeadSize()), mask, alibi, c.NumHeads, c.HeadSize())
		out := b.linear(ctx, scope+".attention.output.dense", h, h)
		attnOut := b.layerNorm(b.Op("Add", scope+".attention.output/residual", out, x), scope+".attention.output.LayerNorm")
		if c.JinaQKPostNorm {
			x = b.jinaCodeFeedForward(scope, b.layerNorm(b.Op("Add", scope+"/attention_residual", x, attnOut), scope+".layer_norm_1"))
			continue
		}
		x = attnOut
		gated := b.modernBertLinear(x, scope+".mlp.gated_layers", h, 2*inter, false)
		act := b.activationNamed(b.columns(gated, scope+".mlp/gated", 0, inter), scope+".mlp.act", c.FFNActivation())
		glu := b.Op("Mul", scope+".mlp/glu", act, b.columns(gated, scope+".mlp/non_gated", inter, 2*inter))
		y := b.linear(glu, scope+".mlp.wo", inter, h)
		x = b.layerNorm(b.Op("Add", scope+".mlp/residual", y, x), scope+".mlp.layernorm")
	}
	if c.IsClassifier() {
		pooled := b.bertPooler(prefix+"pooler", x, h)
		b.Rename(b.gemm(pooled, "classifier", h, len(c.Labels)), outLogits)
		return
	}
	x = b.Rename(x, outLastHidden)
	if pooled {
		b.Rename(b.bertPooler(prefix+"pooler", x, h), outPooler)
	}
}

// jinaCodeFeedForward is jina-bert-v2-qk-post-norm's feed-forward and
// the norm after it: layer_norm_2(x + mlp.down_layer(u[..., :i] ·
// act(u[..., i:]))) of u = mlp.up_gated_layer(x) (no bias).
func (b *builder) jinaCodeFeedForward(scope, x string) string {
	h, inter := b.cfg.HiddenSize, b.cfg.IntermediateSize
	u := b.modernBertLinear(x, scope+".mlp.up_gated_layer", h, 2*inter, false)
	act := b.activationNamed(b.columns(u, scope+".mlp/gated", inter, 2*inter), scope+".mlp.act", b.cfg.FFNActivation())
	glu := b.Op("Mul", scope+".mlp/glu", b.columns(u, scope+".mlp/up", 0, inter), act)
	y := b.linear(glu, scope+".mlp.down_layer", inter, h)
	return b.layerNorm(b.Op("Add", scope+"/mlp_residual", x, y), scope+".layer_norm_2")
}

// jinaALiBi is JinaBertEncoder's ALiBi tensor at the sequence length,
// [1, heads, seq, seq]: -slope(head) · |j - i| for query i and key j, the
// distance cast to float32 and multiplied as rebuild_alibi_tensor does
// (torch promotes the int64 distances to float32).
func (b *builder) jinaALiBi(scope string) string {
	heads := b.cfg.NumHeads
	slopes := compiler.NewTensor(compiler.Float32, int64(heads), 1, 1)
	for i, s := range alibiSlopes(heads) {
		slopes.F32[i] = -float32(s)
	}
	name := scope + ".negative_slopes"
	b.G.Initializers[name] = slopes
	positions := b.positions(scope)
	context := b.Op("Unsqueeze", scope+"/context_position", positions, b.Ints("const.i64.[1]", 1))
	memory := b.Op("Unsqueeze", scope+"/memory_position", positions, b.Ints("const.i64.[0]", 0))
	distance := b.CastFloat(b.Op("Abs", scope+"/distance", b.Op("Sub", scope+"/relative_position", memory, context)), scope+"/distance_f32")
	return b.Op("Unsqueeze", scope+"/bias", b.Op("Mul", scope+"/by_head", name, distance), b.Ints("const.i64.[0]", 0))
}

// alibiSlopes is _get_alibi_head_slopes: for n a power of two the
// geometric sequence start·start^i with start = 2^(-8/n); otherwise the
// closest lower power's slopes and then every other slope of twice that
// power, up to n. In float64, as Python computes them before torch rounds
// them to float32.
func alibiSlopes(n int) []float64 {
	powerOf2 := func(n int) []float64 {
		start := math.Pow(2, -math.Pow(2, -(math.Log2(float64(n))-3)))
		out := make([]float64, n)
		for i := range out {
			out[i] = start * math.Pow(start, float64(i))
		}
		return out
	}
	if n&(n-1) == 0 {
		return powerOf2(n)
	}
	closest := 1 << (bits.Len(uint(n)) - 1)
	out := powerOf2(closest)
	for i, s := range alibiSlopes(2 * closest) {
		if i%2 == 0 && len(out) < n {
			out = append(out, s)
		}
	}
	return out
}

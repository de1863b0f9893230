package hf

import (
	"math"
	"strconv"

	"github.com/sqc-dev/sqc/compiler"
)

// buildMPNet emits MPNetModel or MPNetForSequenceClassification,
// following transformers' modeling_mpnet.py (eval mode): word + position
// embeddings (position ids as RoBERTa counts them, from padding_idx 1; no
// token types), BERT's layer with the projections named q, k, v, o and a
// relative position bias added to every layer's scores before the mask,
// and RoBERTa's classification head. prefix is "mpnet." for the
// classifier and "" for the base model; pooled says whether the base model
// has a pooler to emit (sentence-transformers checkpoints keep one).
func buildMPNet(b *builder, prefix string, pooled bool) {
	h, inter := b.cfg.HiddenSize, b.cfg.IntermediateSize
	x := b.mpnetEmbeddings(prefix + "embeddings")
	maskBias := b.bertMaskBias()
	posBias := b.mpnetPositionBias(prefix+"encoder", x)
	for l := range b.cfg.NumLayers {
		x = b.mpnetLayer(prefix+"encoder.layer."+strconv.Itoa(l), x, posBias, maskBias, h, inter)
	}
	b.robertaOutputs(x, prefix, pooled) // MPNetClassificationHead is RobertaClassificationHead
}

// mpnetEmbeddings is MPNetEmbeddings: word + position embeddings, then
// LayerNorm.
func (b *builder) mpnetEmbeddings(scope string) string {
	c := b.cfg
	h := int64(c.HiddenSize)
	words := b.Gather(b.weight(scope+".word_embeddings.weight", int64(c.VocabSize), h), inInputIDs, scope+".word_embeddings")
	table := b.weight(scope+".position_embeddings.weight", int64(c.MaxPositions), h)
	positions := b.Gather(table, b.robertaPositionIDs(inInputIDs, scope+".position_ids"), scope+".position_embeddings")
	return b.layerNorm(b.Op("Add", scope+"/add_positions", words, positions), scope+".LayerNorm")
}

// mpnetLayer is MPNetLayer: attention (q, k, v, the position bias and the
// mask, o) + residual + LayerNorm, then BERT's FFN.
func (b *builder) mpnetLayer(scope, x, posBias, maskBias string, h, inter int) string {
	attn := scope + ".attention.attn"
	q := b.linear(x, attn+".q", h, h)
	k := b.linear(x, attn+".k", h, h)
	v := b.linear(x, attn+".v", h, h)
	ctx := b.BiasedSelfAttention(attn, q, k, v, "Div", b.HeadDivisor(b.cfg.HeadSize()), posBias, maskBias, b.cfg.NumHeads, b.cfg.HeadSize())
	out := b.linear(ctx, attn+".o", h, h)
	x = b.layerNorm(b.Op("Add", scope+".attention/residual", out, x), scope+".attention.LayerNorm")

	ffn := b.activation(b.linear(x, scope+".intermediate.dense", h, inter), scope+".intermediate")
	y := b.linear(ffn, scope+".output.dense", inter, h)
	return b.layerNorm(b.Op("Add", scope+".output/residual", y, x), scope+".output.LayerNorm")
}

// mpnetMaxDistance is relative_position_bucket's max_distance, which
// MPNet never changes from its default.
const mpnetMaxDistance = 128

// mpnetPositionBias is MPNetEncoder.compute_position_bias: for query i and
// key j, relative_attention_bias[bucket(j - i)] per head, shaped [1,
// heads, seq, seq] (the batch broadcast by the scores' Add, where
// `transformers` expands it). It reads the sequence length from x's shape,
// as the encoder does. relative_position_bucket, with n = i - j: half the
// buckets for n < 0; |n| below a quarter of them is its own bucket, larger
// distances share logarithmically wider ones up to max_distance, in the
// same float32 operations as PyTorch, so that every distance lands in the
// same bucket.
func (b *builder) mpnetPositionBias(scope, x string) string {
	c := b.cfg
	half := int64(c.RelativeBuckets / 2)
	maxExact := half / 2
	shape := b.Op("Shape", scope+"/x_shape", x)
	seqLen := b.OpAttrs("Gather", scope+"/seq_len", map[string]compiler.Attr{"axis": compiler.IntAttr(0)}, shape, b.IntScalar("const.i64.1", 1))
	positions := b.Op("Range", scope+"/positions", b.IntScalar("const.i64.0", 0), seqLen, b.IntScalar("const.i64.1", 1))
	context := b.Op("Unsqueeze", scope+"/context_position", positions, b.Ints("const.i64.[1]", 1))
	memory := b.Op("Unsqueeze", scope+"/memory_position", positions, b.Ints("const.i64.[0]", 0))
	n := b.Op("Neg", scope+"/n", b.Op("Sub", scope+"/relative_position", memory, context))

	toInt := func(v, out string) string {
		return b.OpAttrs("Cast", out, map[string]compiler.Attr{"to": compiler.IntAttr(compiler.Int64.ONNX())}, v)
	}
	negative := toInt(b.Op("Less", scope+"/is_negative", n, b.IntScalar("const.i64.0", 0)), scope+"/is_negative_i64")
	ret := b.Op("Mul", scope+"/sign_bucket", negative, b.IntScalar("const.i64.half_buckets."+strconv.FormatInt(half, 10), half))
	n = b.Op("Abs", scope+"/distance", n)
	isSmall := b.Op("Less", scope+"/is_small", n, b.IntScalar("const.i64.max_exact."+strconv.FormatInt(maxExact, 10), maxExact))
	// max_exact + int(log(n / max_exact) / log(max_distance / max_exact) * (half - max_exact))
	ratio := b.Op("Div", scope+"/ratio", b.CastFloat(n, scope+"/distance_f32"), b.Scalar("const.max_exact", float32(maxExact)))
	logDist := b.Op("Div", scope+"/log_ratio", b.Op("Log", scope+"/log", ratio),
		b.Scalar("const.log_max_distance_ratio", float32(math.Log(float64(mpnetMaxDistance)/float64(maxExact)))))
	scaled := b.Op("Mul", scope+"/log_scaled", logDist, b.Scalar("const.log_buckets", float32(half-maxExact)))
	large := b.Op("Add", scope+"/large_bucket", b.IntScalar("const.i64.max_exact."+strconv.FormatInt(maxExact, 10), maxExact), toInt(scaled, scope+"/log_bucket"))
	large = b.Op("Min", scope+"/large_bucket_capped", large, b.IntScalar("const.i64.last_bucket."+strconv.FormatInt(half-1, 10), half-1))
	bucket := b.Op("Add", scope+"/bucket", ret, b.Op("Where", scope+"/near_or_far", isSmall, n, large))

	table := b.weight(scope+".relative_attention_bias.weight", int64(c.RelativeBuckets), int64(c.NumHeads))
	values := b.Gather(table, bucket, scope+".relative_attention_bias") // [seq, seq, heads]
	values = b.OpAttrs("Transpose", scope+"/bias_by_head", map[string]compiler.Attr{"perm": compiler.IntsAttr(2, 0, 1)}, values)
	return b.Op("Unsqueeze", scope+"/position_bias", values, b.Ints("const.i64.[0]", 0))
}

package hf

import (
	"math"
	"strconv"

	"github.com/sqc-dev/sqc/compiler"
)

// buildBERT emits BertModel or BertForSequenceClassification, following
// transformers' modeling_bert.py (eager attention, eval mode). prefix is
// "bert." for task models and "" for the base model.
func buildBERT(b *builder, prefix string) {
	h, inter := b.cfg.HiddenSize, b.cfg.IntermediateSize
	x := b.bertEmbeddings(prefix + "embeddings")
	maskBias := b.bertMaskBias()
	for l := range b.cfg.NumLayers {
		x = b.bertLayer(prefix+"encoder.layer."+strconv.Itoa(l), x, maskBias, h, inter)
	}
	if !b.cfg.IsClassifier() {
		x = b.rename(x, outLastHidden)
		b.rename(b.bertPooler(prefix+"pooler", x, h), outPooler)
		return
	}
	pooled := b.bertPooler(prefix+"pooler", x, h)
	b.rename(b.gemm(pooled, "classifier", h, len(b.cfg.Labels)), outLogits)
}

// bertEmbeddings is BertEmbeddings: word + token type + position
// embeddings (added in that order), then LayerNorm.
func (b *builder) bertEmbeddings(scope string) string {
	c := b.cfg
	h := int64(c.HiddenSize)
	words := b.gather(b.weight(scope+".word_embeddings.weight", int64(c.VocabSize), h), inInputIDs, scope+".word_embeddings")
	types := b.gather(b.weight(scope+".token_type_embeddings.weight", int64(c.TypeVocabSize), h), inTokenTypeIDs, scope+".token_type_embeddings")
	sum := b.op("Add", scope+"/add_token_types", words, types)
	positions := b.positionEmbeddings(b.weight(scope+".position_embeddings.weight", int64(c.MaxPositions), h), inInputIDs, scope+".position_embeddings")
	sum = b.op("Add", scope+"/add_positions", sum, positions)
	return b.layerNorm(sum, scope+".LayerNorm")
}

// bertMaskBias is BERT's extended attention mask, computed once for all
// layers: (1 - mask) · float32-min, shaped [batch, 1, 1, sequence] to
// broadcast over heads and query positions.
func (b *builder) bertMaskBias() string {
	const scope = "extended_attention_mask"
	m := b.castFloat(inAttentionMask, scope+"/Cast")
	m = b.op("Unsqueeze", scope+"/Unsqueeze", m, b.ints("const.i64.[1,2]", 1, 2))
	inv := b.op("Sub", scope+"/one_minus", b.scalar("const.one", 1), m)
	return b.op("Mul", scope+"/bias", inv, b.scalar("const.f32_min", float32Min))
}

// bertLayer is BertLayer: self-attention, output dense + residual +
// LayerNorm, then the FFN (intermediate, output) + residual + LayerNorm.
func (b *builder) bertLayer(scope, x, maskBias string, h, inter int) string {
	ctx := b.bertSelfAttention(scope+".attention.self", x, maskBias)
	attnOut := b.linear(ctx, scope+".attention.output.dense", h, h)
	x = b.layerNorm(b.op("Add", scope+".attention.output/residual", attnOut, x), scope+".attention.output.LayerNorm")

	ffn := b.activation(b.linear(x, scope+".intermediate.dense", h, inter), scope+".intermediate")
	out := b.linear(ffn, scope+".output.dense", inter, h)
	return b.layerNorm(b.op("Add", scope+".output/residual", out, x), scope+".output.LayerNorm")
}

// bertSelfAttention is BertSelfAttention (eager): softmax(Q·Kᵀ / √d +
// mask bias)·V per head, heads merged back to [batch, seq, hidden].
func (b *builder) bertSelfAttention(scope, x, maskBias string) string {
	h := b.cfg.HiddenSize
	q := b.splitHeads(b.linear(x, scope+".query", h, h), scope+".query", 0, 2, 1, 3)
	kT := b.splitHeads(b.linear(x, scope+".key", h, h), scope+".key", 0, 2, 3, 1)
	v := b.splitHeads(b.linear(x, scope+".value", h, h), scope+".value", 0, 2, 1, 3)

	scores := b.op("MatMul", scope+"/scores", q, kT)
	scores = b.op("Div", scope+"/scaled_scores", scores, b.headScale())
	scores = b.op("Add", scope+"/masked_scores", scores, maskBias)
	probs := b.softmax(scores, scope+"/probs")
	ctx := b.op("MatMul", scope+"/context", probs, v)
	return b.mergeHeads(ctx, scope+".context")
}

// bertPooler is BertPooler: dense + tanh on the first ([CLS]) token.
func (b *builder) bertPooler(scope, x string, h int) string {
	first := b.firstToken(x, scope)
	return b.op("Tanh", scope+"/Tanh", b.gemm(first, scope+".dense", h, h))
}

// headScale is √(head size), the divisor of attention scores, as the
// float32 that math.sqrt(head_size) becomes in PyTorch.
func (b *builder) headScale() string {
	d := b.cfg.HeadSize()
	return b.scalar("const.sqrt_head_size."+strconv.Itoa(d), float32(math.Sqrt(float64(d))))
}

// gather looks up rows of an embedding table by integer ids.
func (b *builder) gather(table, ids, scope string) string {
	return b.opAttrs("Gather", scope+"/Gather", map[string]compiler.Attr{
		"axis": {Kind: compiler.AttrInt, Int: 0},
	}, table, ids)
}

// softmax over the last axis (the key positions).
func (b *builder) softmax(x, out string) string {
	return b.opAttrs("Softmax", out, map[string]compiler.Attr{
		"axis": {Kind: compiler.AttrInt, Int: -1},
	}, x)
}

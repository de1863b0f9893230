package hf

import (
	"strconv"
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
		x = b.Rename(x, outLastHidden)
		b.Rename(b.bertPooler(prefix+"pooler", x, h), outPooler)
		return
	}
	pooled := b.bertPooler(prefix+"pooler", x, h)
	b.Rename(b.gemm(pooled, "classifier", h, len(b.cfg.Labels)), outLogits)
}

// bertEmbeddings is BertEmbeddings: word + token type + position
// embeddings (added in that order), then LayerNorm; ElectraEmbeddings
// too, whose tables are EmbeddingWidth wide.
func (b *builder) bertEmbeddings(scope string) string {
	c := b.cfg
	h := int64(c.EmbeddingWidth())
	sum := b.wordAndTypeEmbeddings(scope, h)
	positions := b.PositionRows(b.weight(scope+".position_embeddings.weight", int64(c.MaxPositions), h), inInputIDs, scope+".position_embeddings")
	sum = b.Op("Add", scope+"/add_positions", sum, positions)
	return b.layerNormOf(sum, scope+".LayerNorm", int(h))
}

// wordAndTypeEmbeddings is the word embedding of the input ids plus,
// where the model has token types (TypeVocabSize > 0), the token type
// embedding of the type ids, tables width wide under scope.
func (b *builder) wordAndTypeEmbeddings(scope string, width int64) string {
	c := b.cfg
	x := b.Gather(b.weight(scope+".word_embeddings.weight", int64(c.VocabSize), width), inInputIDs, scope+".word_embeddings")
	if c.TypeVocabSize == 0 {
		return x
	}
	types := b.Gather(b.weight(scope+".token_type_embeddings.weight", int64(c.TypeVocabSize), width), inTokenTypeIDs, scope+".token_type_embeddings")
	return b.Op("Add", scope+"/add_token_types", x, types)
}

// bertMaskBias is BERT's extended attention mask, computed once for all
// layers: (1 - mask) · float32-min, shaped [batch, 1, 1, sequence] to
// broadcast over heads and query positions.
func (b *builder) bertMaskBias() string {
	return b.ExtendedMask(inAttentionMask, "extended_attention_mask", b.Scalar("const.f32_min", float32Min))
}

// bertLayer is BertLayer: self-attention, output dense + residual +
// LayerNorm, then the FFN (intermediate, output) + residual + LayerNorm.
func (b *builder) bertLayer(scope, x, maskBias string, h, inter int) string {
	ctx := b.bertSelfAttention(scope+".attention.self", x, maskBias)
	attnOut := b.linear(ctx, scope+".attention.output.dense", h, h)
	x = b.layerNorm(b.Op("Add", scope+".attention.output/residual", attnOut, x), scope+".attention.output.LayerNorm")

	ffn := b.activation(b.linear(x, scope+".intermediate.dense", h, inter), scope+".intermediate")
	out := b.linear(ffn, scope+".output.dense", inter, h)
	return b.layerNorm(b.Op("Add", scope+".output/residual", out, x), scope+".output.LayerNorm")
}

// bertSelfAttention is BertSelfAttention (eager): softmax(Q·Kᵀ / √d +
// mask bias)·V per head, heads merged back to [batch, seq, hidden].
func (b *builder) bertSelfAttention(scope, x, maskBias string) string {
	h := b.cfg.HiddenSize
	q := b.linear(x, scope+".query", h, h)
	k := b.linear(x, scope+".key", h, h)
	v := b.linear(x, scope+".value", h, h)
	return b.SelfAttention(scope, q, k, v, "Div", b.HeadDivisor(b.cfg.HeadSize()), maskBias, b.cfg.NumHeads, b.cfg.HeadSize())
}

// bertPooler is BertPooler: dense + tanh on the first ([CLS]) token.
func (b *builder) bertPooler(scope, x string, h int) string {
	first := b.firstToken(x, scope)
	return b.Op("Tanh", scope+"/Tanh", b.gemm(first, scope+".dense", h, h))
}

package hf

import "strconv"

// buildDistilBERT emits DistilBertModel or
// DistilBertForSequenceClassification, following transformers'
// modeling_distilbert.py (eager attention, eval mode). prefix is
// "distilbert." for task models and "" for the base model.
func buildDistilBERT(b *builder, prefix string) {
	h, inter := b.cfg.HiddenSize, b.cfg.IntermediateSize
	x := b.distilEmbeddings(prefix + "embeddings")
	masked := b.distilPaddingMask()
	for l := range b.cfg.NumLayers {
		x = b.distilLayer(prefix+"transformer.layer."+strconv.Itoa(l), x, masked, h, inter)
	}
	if !b.cfg.IsClassifier() {
		b.Rename(x, outLastHidden)
		return
	}
	// hidden_state[:, 0] -> pre_classifier -> ReLU -> (dropout) -> classifier.
	pooled := b.gemm(b.firstToken(x, "pre_classifier"), "pre_classifier", h, h)
	pooled = b.Op("Relu", "pre_classifier/Relu", pooled)
	b.Rename(b.gemm(pooled, "classifier", h, len(b.cfg.Labels)), outLogits)
}

// distilEmbeddings is DistilBERT's Embeddings: word + position embeddings,
// then LayerNorm. Sinusoidal position tables are stored as weights too, so
// both kinds read the same.
func (b *builder) distilEmbeddings(scope string) string {
	c := b.cfg
	h := int64(c.HiddenSize)
	words := b.Gather(b.weight(scope+".word_embeddings.weight", int64(c.VocabSize), h), inInputIDs, scope+".word_embeddings")
	positions := b.PositionRows(b.weight(scope+".position_embeddings.weight", int64(c.MaxPositions), h), inInputIDs, scope+".position_embeddings")
	sum := b.Op("Add", scope+"/add_positions", words, positions)
	return b.layerNorm(sum, scope+".LayerNorm")
}

// distilPaddingMask is (attention_mask == 0) shaped [batch, 1, 1, sequence],
// the condition DistilBERT's masked_fill uses; computed once for all layers.
func (b *builder) distilPaddingMask() string {
	const scope = "padding_mask"
	isPad := b.Op("Equal", scope+"/Equal", inAttentionMask, b.IntScalar("const.i64.0", 0))
	return b.Op("Unsqueeze", scope+"/Unsqueeze", isPad, b.Ints("const.i64.[1,2]", 1, 2))
}

// distilLayer is TransformerBlock: attention + residual + sa_layer_norm,
// then FFN (lin1, activation, lin2) + residual + output_layer_norm.
func (b *builder) distilLayer(scope, x, masked string, h, inter int) string {
	attn := b.distilAttention(scope+".attention", x, masked)
	x = b.layerNorm(b.Op("Add", scope+"/sa_residual", attn, x), scope+".sa_layer_norm")

	ffn := b.activation(b.linear(x, scope+".ffn.lin1", h, inter), scope+".ffn")
	ffn = b.linear(ffn, scope+".ffn.lin2", inter, h)
	return b.layerNorm(b.Op("Add", scope+"/ffn_residual", ffn, x), scope+".output_layer_norm")
}

// distilAttention is MultiHeadSelfAttention (eager): unlike BERT, queries
// are scaled by 1/√d before Q·Kᵀ, and padded keys are overwritten with
// float32-min (masked_fill) rather than added to.
func (b *builder) distilAttention(scope, x, masked string) string {
	h := b.cfg.HiddenSize
	q := b.splitHeads(b.linear(x, scope+".q_lin", h, h), scope+".q_lin", 0, 2, 1, 3)
	kT := b.splitHeads(b.linear(x, scope+".k_lin", h, h), scope+".k_lin", 0, 2, 3, 1)
	v := b.splitHeads(b.linear(x, scope+".v_lin", h, h), scope+".v_lin", 0, 2, 1, 3)

	q = b.Op("Div", scope+"/scaled_q", q, b.HeadDivisor(b.cfg.HeadSize()))
	scores := b.Op("MatMul", scope+"/scores", q, kT)
	scores = b.Op("Where", scope+"/masked_scores", masked, b.Scalar("const.f32_min", float32Min), scores)
	probs := b.Softmax(scores, scope+"/probs")
	ctx := b.Op("MatMul", scope+"/context", probs, v)
	return b.linear(b.mergeHeads(ctx, scope+".context"), scope+".out_lin", h, h)
}

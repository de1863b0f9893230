package hf

// buildTokenHead appends a per-token head to the base model's
// last_hidden_state. Every *ForTokenClassification of transformers 4.46
// is encoder -> (dropout) -> classifier, an nn.Linear(hidden, labels)
// applied to each token, output "logits" ([batch, sequence, labels]);
// ModernBertForTokenClassification first runs its
// ModernBertPredictionHead (dense, classifier_activation, norm: the
// sequence classifier's head without the pooling). Every
// *ForQuestionAnswering is encoder -> qa_outputs, an nn.Linear(hidden, 2)
// split into "start_logits" and "end_logits" ([batch, sequence]) as
// logits.split(1, dim=-1) and squeeze(-1) do.
func buildTokenHead(b *builder) {
	c := b.cfg
	h, labels := c.HiddenSize, len(c.Labels)
	x := outLastHidden
	if c.IsQuestionAnswering() {
		logits := b.linear(x, "qa_outputs", h, 2)
		last := b.Ints("const.i64.[-1]", -1)
		b.Rename(b.Op("Squeeze", "qa_outputs/start", b.columns(logits, "qa_outputs/start_column", 0, 1), last), outStartLogits)
		b.Rename(b.Op("Squeeze", "qa_outputs/end", b.columns(logits, "qa_outputs/end_column", 1, 2), last), outEndLogits)
		return
	}
	if c.ModelType == ModelModernBERT {
		m := c.ModernBERT
		dense := b.modernBertLinear(x, "head.dense", h, h, m.ClassifierBias)
		x = b.modernBertNorm(b.activationNamed(dense, "head.act", m.ClassifierActivation), "head.norm")
		b.Rename(b.modernBertLinear(x, "classifier", h, labels, true), outLogits)
		return
	}
	b.Rename(b.linear(x, "classifier", h, labels), outLogits)
}

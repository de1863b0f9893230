package hf

// buildTokenHead appends a token classifier's head to the base model's
// last_hidden_state and names its output "logits" ([batch, sequence,
// labels]). Every *ForTokenClassification of transformers 4.46 is
// encoder -> (dropout) -> classifier, an nn.Linear(hidden, labels) under
// "classifier" applied to each token; ModernBertForTokenClassification
// first runs its ModernBertPredictionHead (dense, classifier_activation,
// norm: the sequence classifier's head, without the pooling).
func buildTokenHead(b *builder) {
	c := b.cfg
	h, labels := c.HiddenSize, len(c.Labels)
	x := outLastHidden
	if c.ModelType == ModelModernBERT {
		m := c.ModernBERT
		dense := b.modernBertLinear(x, "head.dense", h, h, m.ClassifierBias)
		x = b.modernBertNorm(b.activationNamed(dense, "head.act", m.ClassifierActivation), "head.norm")
		b.Rename(b.modernBertLinear(x, "classifier", h, labels, true), outLogits)
		return
	}
	b.Rename(b.linear(x, "classifier", h, labels), outLogits)
}

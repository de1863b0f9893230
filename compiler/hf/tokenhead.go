package hf

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
)

// buildTokenHead appends a per-token head to the base model's
// last_hidden_state. Every *ForTokenClassification of transformers 4.46
// is encoder -> (dropout) -> classifier, an nn.Linear(hidden, labels)
// applied to each token, output "logits" ([batch, sequence, labels]);
// ModernBertForTokenClassification first runs its
// ModernBertPredictionHead (dense, classifier_activation, norm: the
// sequence classifier's head without the pooling). Every
// *ForQuestionAnswering is encoder -> qa_outputs, an nn.Linear(hidden, 2)
// split into "start_logits" and "end_logits" ([batch, sequence]) as
// logits.split(1, dim=-1) and squeeze(-1) do (ModernBERT's: its
// prediction head, then `classifier`). A *ForMaskedLM's head is
// buildMaskedLMHead's.
func buildTokenHead(b *builder) {
	c := b.cfg
	h, labels := c.HiddenSize, len(c.Labels)
	x := outLastHidden
	if c.IsMaskedLM() {
		buildMaskedLMHead(b, x)
		return
	}
	if c.IsQuestionAnswering() {
		var logits string
		if c.ModelType == ModelModernBERT {
			logits = b.modernBertLinear(b.modernBertHead(x), "classifier", h, 2, true)
		} else {
			logits = b.linear(x, "qa_outputs", h, 2)
		}
		last := b.Ints("const.i64.[-1]", -1)
		b.Rename(b.Op("Squeeze", "qa_outputs/start", b.columns(logits, "qa_outputs/start_column", 0, 1), last), outStartLogits)
		b.Rename(b.Op("Squeeze", "qa_outputs/end", b.columns(logits, "qa_outputs/end_column", 1, 2), last), outEndLogits)
		return
	}
	if c.ModelType == ModelModernBERT {
		b.Rename(b.modernBertLinear(b.modernBertHead(x), "classifier", h, labels, true), outLogits)
		return
	}
	b.Rename(b.linear(x, "classifier", h, labels), outLogits)
}

// modernBertHead is ModernBertPredictionHead on x: head.dense (with a
// bias where classifier_bias says), classifier_activation, head.norm.
func (b *builder) modernBertHead(x string) string {
	m, h := b.cfg.ModernBERT, b.cfg.HiddenSize
	dense := b.modernBertLinear(x, "head.dense", h, h, m.ClassifierBias)
	return b.modernBertNorm(b.activationNamed(dense, "head.act", m.ClassifierActivation), "head.norm")
}

// buildMaskedLMHead appends a masked language model's head to x, the
// base model's last_hidden_state, as transformers 4.46 computes it: a
// dense layer, an activation and a LayerNorm on every token, then the
// decoder to the vocabulary (output "logits", [batch, sequence,
// vocabulary]), whose weight is tied to the word embeddings.
// save_pretrained drops tied tensors, so the decoder's weight is read
// under its own name where the checkpoint has it and the embeddings'
// otherwise, and its bias under the head's name (BERT's
// cls.predictions.bias, RoBERTa's lm_head.bias) or the decoder's.
//   - BertForMaskedLM: cls.predictions.transform (dense, hidden_act,
//     LayerNorm), cls.predictions.decoder.
//   - DistilBertForMaskedLM: vocab_transform, activation, vocab_layer_norm
//     (eps 1e-12), vocab_projector.
//   - RobertaForMaskedLM (XLM-R's, CamemBERT's) and MPNetForMaskedLM:
//     lm_head.dense, the erf GELU whatever hidden_act says,
//     lm_head.layer_norm, lm_head.decoder.
//   - ModernBertForMaskedLM: its prediction head (head.dense,
//     classifier_activation, head.norm), then decoder (with a bias unless
//     decoder_bias is false).
func buildMaskedLMHead(b *builder, x string) {
	c := b.cfg
	h, v := c.HiddenSize, c.VocabSize
	prefix := c.ParamPrefix()
	words := prefix + "embeddings.word_embeddings.weight"
	act := c.maskedLMActivation()
	var dense, norm, decoder, bias string
	switch {
	case c.ModelType == ModelModernBERT:
		m := c.ModernBERT
		if !b.hasMaskedLMHead("head.dense.weight") {
			return
		}
		logits := b.Op("MatMul", "decoder/MatMul", b.modernBertHead(x), b.weightT(b.tiedWeight("decoder.weight", prefix+"embeddings.tok_embeddings.weight", v, h), int64(v), int64(h)))
		if m.DecoderBias {
			logits = b.Op("Add", "decoder/Add", logits, b.weight("decoder.bias", int64(v)))
		}
		b.Rename(logits, outLogits)
		return
	case c.ModelType == ModelBERT:
		dense, norm, decoder, bias = "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.decoder", "cls.predictions.bias"
	case c.ModelType == ModelDistilBERT:
		dense, norm, decoder, bias = "vocab_transform", "vocab_layer_norm", "vocab_projector", "vocab_projector.bias"
	default: // RoBERTa's LMHead, which MPNet's copies
		dense, norm, decoder, bias = "lm_head.dense", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias"
	}
	if !b.hasMaskedLMHead(dense + ".weight") {
		return
	}
	y := b.layerNorm(b.activationNamed(b.linear(x, dense, h, h), dense+"/act", act), norm)
	w := b.weightT(b.tiedWeight(decoder+".weight", words, v, h), int64(v), int64(h))
	if !hasWeight(b.weights, bias, int64(v)) {
		bias = decoder + ".bias"
	}
	logits := b.Op("MatMul", decoder+"/MatMul", y, w)
	b.Rename(b.Op("Add", decoder+"/Add", logits, b.weight(bias, int64(v))), outLogits)
}

// hasMaskedLMHead reports whether the checkpoint holds the head's dense
// weight, else records an error saying what is missing and how to read
// the encoder alone: base checkpoints (bert-base-uncased, roberta-base,
// all-mpnet-base-v2) name a *ForMaskedLM architecture in config.json,
// and some are saved without the head.
func (b *builder) hasMaskedLMHead(dense string) bool {
	h := int64(b.cfg.HiddenSize)
	if b.err != nil || hasWeight(b.weights, dense, h, h) {
		return b.err == nil
	}
	b.err = compiler.BadInput(b.file, dense, fmt.Errorf("%w: config.json names %s, whose masked language model head (read as a sparse encoder) is not in the checkpoint; "+
		"for the encoder alone, set architectures to %s in config.json or compile the sentence-transformers folder it belongs to",
		compiler.ErrMissingTensor, b.cfg.Architecture, architecturesByType[b.cfg.ModelType][0]))
	return false
}

// tiedWeight is name where the checkpoint holds it in shape [out, in],
// else tied, the tensor it is tied to.
func (b *builder) tiedWeight(name, tied string, out, in int) string {
	if hasWeight(b.weights, name, int64(out), int64(in)) {
		return name
	}
	return tied
}

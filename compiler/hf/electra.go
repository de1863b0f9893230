package hf

import (
	"strconv"
)

// buildELECTRA emits ElectraModel or ElectraForSequenceClassification (the
// discriminator), following transformers' modeling_electra.py (eager
// attention, eval mode): BERT's embeddings at embedding_size, projected to
// the hidden size by embeddings_project where the two differ (the small
// discriminator: 128 to 256), BERT's encoder and no pooler. prefix is
// "electra." for the classifier and "" for the base model.
func buildELECTRA(b *builder, prefix string) {
	h, inter, e := b.cfg.HiddenSize, b.cfg.IntermediateSize, b.cfg.EmbeddingWidth()
	x := b.bertEmbeddings(prefix + "embeddings")
	if e != h {
		x = b.linear(x, prefix+"embeddings_project", e, h)
	}
	maskBias := b.bertMaskBias()
	for l := range b.cfg.NumLayers {
		x = b.bertLayer(prefix+"encoder.layer."+strconv.Itoa(l), x, maskBias, h, inter)
	}
	if !b.cfg.IsClassifier() {
		b.Rename(x, outLastHidden)
		return
	}
	// ElectraClassificationHead: features[:, 0] -> (dropout) -> dense ->
	// GELU -> (dropout) -> out_proj. Its GELU is get_activation("gelu"),
	// the erf form, whatever hidden_act says.
	first := b.firstToken(x, "classifier")
	dense := b.GeluErf(b.gemm(first, "classifier.dense", h, h), "classifier")
	b.Rename(b.gemm(dense, "classifier.out_proj", h, len(b.cfg.Labels)), outLogits)
}

package hf

import (
	"errors"
	"strconv"

	"github.com/sqc-dev/sqc/compiler"
)

// buildRoBERTa emits RobertaModel, XLMRobertaModel or their
// *ForSequenceClassification, following transformers' modeling_roberta.py
// (XLM-R's modeling file is the same code): BERT's encoder, embeddings whose
// position ids count non-padding tokens, and RobertaClassificationHead.
// prefix is "roberta." for task models (XLM-R's too) and "" for the base
// model; pooled says whether the base model has a pooler to emit.
func buildRoBERTa(b *builder, prefix string, pooled bool) {
	h, inter := b.cfg.HiddenSize, b.cfg.IntermediateSize
	x := b.robertaEmbeddings(prefix + "embeddings")
	maskBias := b.bertMaskBias()
	for l := range b.cfg.NumLayers {
		x = b.bertLayer(prefix+"encoder.layer."+strconv.Itoa(l), x, maskBias, h, inter)
	}
	b.robertaOutputs(x, prefix, pooled)
}

// robertaOutputs ends the RoBERTa family's models (and MPNet's) on the
// encoder's output x: the base model's last_hidden_state (and its pooler,
// if pooled), or RobertaClassificationHead: features[:, 0] -> (dropout)
// -> dense -> tanh -> (dropout) -> out_proj, with no pooler before it.
func (b *builder) robertaOutputs(x, prefix string, pooled bool) {
	h := b.cfg.HiddenSize
	if !b.cfg.IsClassifier() {
		x = b.Rename(x, outLastHidden)
		if pooled {
			b.Rename(b.bertPooler(prefix+"pooler", x, h), outPooler)
		}
		return
	}
	first := b.firstToken(x, "classifier")
	dense := b.Op("Tanh", "classifier/Tanh", b.gemm(first, "classifier.dense", h, h))
	b.Rename(b.gemm(dense, "classifier.out_proj", h, len(b.cfg.Labels)), outLogits)
}

// robertaEmbeddings is RobertaEmbeddings: (word + token type) + position
// embeddings, then LayerNorm. There is no token_type_ids input (exports of
// these models take input_ids and attention_mask only), so the type term is
// row 0 of the table, the buffered all-zero token_type_ids `transformers`
// uses when none are given.
func (b *builder) robertaEmbeddings(scope string) string {
	c := b.cfg
	h := int64(c.HiddenSize)
	words := b.Gather(b.weight(scope+".word_embeddings.weight", int64(c.VocabSize), h), inInputIDs, scope+".word_embeddings")
	typeRow := b.Gather(b.weight(scope+".token_type_embeddings.weight", int64(c.TypeVocabSize), h),
		b.IntScalar("const.i64.0", 0), scope+".token_type_embeddings")
	sum := b.Op("Add", scope+"/add_token_types", words, typeRow)
	table := b.weight(scope+".position_embeddings.weight", int64(c.MaxPositions), h)
	positions := b.Gather(table, b.robertaPositionIDs(inInputIDs, scope+".position_ids"), scope+".position_embeddings")
	sum = b.Op("Add", scope+"/add_positions", sum, positions)
	return b.layerNorm(sum, scope+".LayerNorm")
}

// onnxInt64 is TensorProto.INT64, Cast's "to" code for int64.
const onnxInt64 = 7

// robertaPositionIDs is create_position_ids_from_input_ids: with
// mask = (ids != padding_idx), position ids are cumsum(mask, 1) · mask +
// padding_idx, so real tokens count from padding_idx + 1 and padding
// tokens (wherever they are) get padding_idx. It follows the token ids, not
// attention_mask, as `transformers` does.
func (b *builder) robertaPositionIDs(ids, scope string) string {
	pad := b.IntScalar("const.i64.pad."+strconv.Itoa(b.cfg.PadTokenID), int64(b.cfg.PadTokenID))
	isPad := b.Op("Equal", scope+"/is_pad", ids, pad)
	mask := b.OpAttrs("Cast", scope+"/mask", map[string]compiler.Attr{
		"to": {Kind: compiler.AttrInt, Int: onnxInt64},
	}, b.Op("Not", scope+"/not_pad", isPad))
	counts := b.Op("CumSum", scope+"/cumsum", mask, b.IntScalar("const.i64.1", 1))
	return b.Op("Add", scope+"/offset", b.Op("Mul", scope+"/masked", counts, mask), pad)
}

// hasWeight reports whether the weight source holds name: RoBERTa
// checkpoints saved from a masked-LM or task model have no pooler, and
// RobertaModel then has no pooler_output to give.
func hasWeight(w WeightSource, name string, shape ...int64) bool {
	_, err := w.Weight(name, shape)
	return !errors.Is(err, compiler.ErrMissingTensor)
}

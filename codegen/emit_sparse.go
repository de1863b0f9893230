package codegen

import (
	"github.com/dave/jennifer/jen"

	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// sparseEncoderVersion is the runtime version of a masked language
// model's package (modelrt.SupportVersion6: SparseHead, SparseValue,
// Sparsify).
const sparseEncoderVersion = 6

// sparseEncoder returns the logits of a package that gets EmbedSparse and
// SparseVectors, or nil: those of a model its caller says is a sparse
// encoder (Head.Sparse: sqc compile sets it for a graph compiler.IsMaskedLM
// accepts, as sqc serve serves such a graph), whose one output "logits"
// is [batch, sequence, vocabulary]: one row of VocabSize logits per
// token. A token classifier stays a token classifier.
func (g *gen) sparseEncoder() *output {
	if g.opts.Head.Sparse == nil || g.tok == nil || len(g.outs) != 1 || g.tokenClassifier() {
		return nil
	}
	o := &g.outs[0]
	if !o.perSeq || o.slot.name != "logits" || o.slot.width != g.pl.vocab {
		return nil
	}
	return o
}

// embedSparse writes a masked language model's SparseValue, sparseHead,
// EmbedSparse and SparseVectors.
func (g *gen) embedSparse(f *jen.File, out *output) {
	ctx := jen.Id("ctx").Qual("context", "Context")
	if h := g.opts.Head.Sparse; *h != (modelrt.SparseHead{}) {
		f.Comment("sparseHead is how EmbedSparse and SparseVectors pool a text's logits: the")
		f.Comment("model's sentence-transformers SpladePooling, as sqc serve's /embed_sparse pools them.")
		f.Var().Id("sparseHead").Op("=").Qual(pkgModelrt, "SparseHead").Values(jen.Dict{
			jen.Id("Pooling"): jen.Lit(h.Pooling), jen.Id("Activation"): jen.Lit(h.Activation),
		})
	} else {
		f.Comment("sparseHead is how EmbedSparse and SparseVectors pool a text's logits: SPLADE's,")
		f.Comment("modelrt.SparseHead's zero value (per vocabulary entry, log(1 + relu(logit)) maxed")
		f.Comment("over the text's tokens), as sqc serve's /embed_sparse pools them.")
		f.Var().Id("sparseHead").Op("=").Qual(pkgModelrt, "SparseHead").Values()
	}
	f.Line()
	f.Comment("EmbedSparse tokenizes each text ([CLS] text [SEP], truncated to MaxSequence tokens),")
	f.Comment("runs the model and returns, per text, its SPLADE sparse embedding: the non-zero")
	f.Comment("entries of its SparseVectors vector in index order (modelrt.Sparsify), each a")
	f.Comment("vocabulary index (a token id) and its weight, as text-embeddings-inference's")
	f.Comment("/embed_sparse returns them.")
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("EmbedSparse").Params(ctx.Clone(), jen.Id("texts").Index().String()).Params(jen.Index().Index().Id("SparseValue"), jen.Error()).Block(
		jen.List(jen.Id("vecs"), jen.Err()).Op(":=").Id("m").Dot("SparseVectors").Call(jen.Id("ctx"), jen.Id("m").Dot("encode").Call(jen.Id("texts"))),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Id("embs").Op(":=").Make(jen.Index().Index().Id("SparseValue"), jen.Len(jen.Id("vecs"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("v")).Op(":=").Range().Id("vecs")).Block(
			jen.Id("embs").Index(jen.Id("i")).Op("=").Qual(pkgModelrt, "Sparsify").Call(jen.Id("v")),
		),
		jen.Return(jen.Id("embs"), jen.Nil()),
	)
	f.Line()
	f.Comment("SparseVectors runs the model on a batch (Run) and pools each sequence's logits over")
	f.Comment("the tokens its attention mask keeps (all of them without a mask) into one vector of")
	f.Comment("VocabSize weights, each >= 0 and most of them 0: EmbedSparse's embeddings in dense")
	f.Comment("form, for callers that tokenize on their own (Tokenizer).")
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("SparseVectors").Params(ctx.Clone(), jen.Id("b").Id("Batch")).Params(jen.Index().Index().Float32(), jen.Error()).Block(
		jen.List(jen.Id("out"), jen.Err()).Op(":=").Id("m").Dot("Run").Call(jen.Id("ctx"), jen.Id("b")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Id("vecs").Op(":=").Make(jen.Index().Index().Float32(), jen.Len(jen.Id("out").Dot(out.field))),
		jen.For(jen.List(jen.Id("i"), jen.Id("logits")).Op(":=").Range().Id("out").Dot(out.field)).Block(
			jen.Var().Id("mask").Index().Int64(),
			jen.If(jen.Id("b").Dot("AttentionMask").Op("!=").Nil()).Block(jen.Id("mask").Op("=").Id("b").Dot("AttentionMask").Index(jen.Id("i"))),
			jen.Id("vecs").Index(jen.Id("i")).Op("=").Id("sparseHead").Dot("Pool").Call(jen.Id("logits"), jen.Id("VocabSize"), jen.Id("mask")),
		),
		jen.Return(jen.Id("vecs"), jen.Nil()),
	)
	f.Line()
}

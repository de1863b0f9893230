package codegen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"
)

// tokenClassifierVersion is the runtime version of a token classifier's
// package (modelrt.SupportVersion4: TagTokens, GroupEntities,
// TemplateTokens).
const tokenClassifierVersion = 4

// questionAnswererVersion is the runtime version of a question
// answering model's package (modelrt.SupportVersion5: QAOptions, Answer,
// Answers, and tokenizer.EncodePairWindows).
const questionAnswererVersion = 5

// questionAnswerer returns the start and end logits of a package that
// gets Answer: an extractive question answering model's two [batch,
// sequence] outputs, start_logits and end_logits (the names transformers
// and its exporters give them).
func (g *gen) questionAnswerer() (start, end *output) {
	if g.tok == nil || len(g.outs) != 2 {
		return nil, nil
	}
	for i := range g.outs {
		o := &g.outs[i]
		if !o.perSeq || o.slot.width != 1 {
			return nil, nil
		}
		switch o.slot.name {
		case "start_logits":
			start = o
		case "end_logits":
			end = o
		}
	}
	if start == nil || end == nil {
		return nil, nil
	}
	return start, end
}

// tokenClassifier reports whether the package gets TagTokens and
// Entities: one [batch, sequence, L] output and L labels (a
// *ForTokenClassification's logits, one row per token).
func (g *gen) tokenClassifier() bool {
	return g.tok != nil && len(g.outs) == 1 && g.outs[0].perSeq && len(g.opts.Labels) > 0 && len(g.opts.Labels) == g.outs[0].slot.width
}

// labeled reports whether the package names its outputs' classes
// (Labels, NumLabels): a classifier of sequences or of tokens.
func (g *gen) labeled() bool { return g.classifier() || g.tokenClassifier() }

// labelsFunc writes Labels.
func (g *gen) labelsFunc(f *jen.File) {
	labels := lits(g.opts.Labels, func(l string) jen.Code { return jen.Lit(l) })
	f.Comment(fmt.Sprintf("Labels returns the class names by index (config.json id2label): %s.", strings.Join(g.opts.Labels, ", ")))
	f.Func().Id("Labels").Params().Index().String().Block(jen.Return(jen.Index().String().Values(labels...)))
	f.Line()
}

// classifyTokens writes a token classifier's TagTokens and Entities.
func (g *gen) classifyTokens(f *jen.File) {
	out := g.outs[0]
	encoding := jen.Qual(pkgTokenizer, "Encoding")
	f.Comment("TagTokens tokenizes each text ([CLS] text [SEP], truncated to MaxSequence tokens),")
	f.Comment("runs the model and returns, per text, each of its tokens' most probable label with")
	f.Comment("its softmax probability and the token's byte span in the text; the template's")
	f.Comment("tokens are left out, as transformers' token-classification pipeline leaves them.")
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("TagTokens").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("texts").Index().String()).Params(jen.Index().Index().Id("TokenPrediction"), jen.Error()).Block(
		jen.Id("encs").Op(":=").Make(jen.Index().Add(encoding), jen.Len(jen.Id("texts"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("t")).Op(":=").Range().Id("texts")).Block(
			jen.Id("encs").Index(jen.Id("i")).Op("=").Id("m").Dot("tok").Dot("EncodeWithOffsets").Call(jen.Id("t")),
		),
		jen.List(jen.Id("out"), jen.Err()).Op(":=").Id("m").Dot("Run").Call(jen.Id("ctx"), jen.Id("m").Dot("batchOf").Call(jen.Id("encs"))),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Id("labels").Op(":=").Id("Labels").Call(),
		jen.List(jen.Id("prefix"), jen.Id("suffix")).Op(":=").Qual(pkgModelrt, "TemplateTokens").Call(jen.Id("m").Dot("tok")),
		jen.Id("tags").Op(":=").Make(jen.Index().Index().Id("TokenPrediction"), jen.Len(jen.Id("texts"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("logits")).Op(":=").Range().Id("out").Dot(out.field)).Block(
			jen.Id("e").Op(":=").Id("encs").Index(jen.Id("i")),
			jen.Id("tags").Index(jen.Id("i")).Op("=").Qual(pkgModelrt, "TagTokens").Call(jen.Id("logits"), jen.Id("NumLabels"), jen.Id("labels"),
				jen.Id("e").Dot("Offsets"), jen.Id("prefix"), jen.Len(jen.Id("e").Dot("InputIDs")).Op("-").Id("suffix")),
		),
		jen.Return(jen.Id("tags"), jen.Nil()),
	)
	f.Line()
	f.Comment("Entities is TagTokens with each text's tokens grouped into entities as transformers'")
	f.Comment(`token-classification pipeline groups them (aggregation_strategy "simple"): a label`)
	f.Comment(`without its B-/I- prefix, the mean of the tokens' scores and their byte span; "O" is`)
	f.Comment("left out. text[Start:End] is an entity's text.")
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("Entities").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("texts").Index().String()).Params(jen.Index().Index().Id("Entity"), jen.Error()).Block(
		jen.List(jen.Id("tags"), jen.Err()).Op(":=").Id("m").Dot("TagTokens").Call(jen.Id("ctx"), jen.Id("texts")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Id("ents").Op(":=").Make(jen.Index().Index().Id("Entity"), jen.Len(jen.Id("tags"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("t")).Op(":=").Range().Id("tags")).Block(
			jen.Id("ents").Index(jen.Id("i")).Op("=").Qual(pkgModelrt, "GroupEntities").Call(jen.Id("t")),
		),
		jen.Return(jen.Id("ents"), jen.Nil()),
	)
	f.Line()
}

// batchOfEncodings writes batchOf, which puts tokenizer encodings into a
// Batch (TagTokens', Answer's).
func (g *gen) batchOfEncodings(f *jen.File) {
	g.encoder(f, "batchOf puts encodings into a Batch.", "batchOf", "encs", jen.Index().Qual(pkgTokenizer, "Encoding"), "x", jen.Id("x"))
}

// answer writes a question answering model's Answer.
func (g *gen) answer(f *jen.File, start, end *output) {
	f.Comment("Answer finds the answers to question in text as transformers' question-answering")
	f.Comment("pipeline does: question and text are encoded in windows of opts.MaxSeqLen tokens")
	f.Comment("(384 or MaxSequence) that share opts.DocStride of the text's, the model scores every")
	f.Comment("token as an answer's start and end, and the best spans of at most opts.MaxAnswerLen")
	f.Comment("tokens are returned, best first, as byte spans of text (text[Start:End]); the zero")
	f.Comment("QAOptions are the pipeline's defaults (runtime/modelrt.Answers).")
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("Answer").Params(jen.Id("ctx").Qual("context", "Context"), jen.List(jen.Id("question"), jen.Id("text")).String(), jen.Id("opts").Id("QAOptions")).Params(jen.Index().Id("Answer"), jen.Error()).Block(
		jen.Id("opts").Op("=").Id("opts").Dot("Defaults").Call(jen.Id("MaxSequence")),
		jen.List(jen.Id("windows"), jen.Err()).Op(":=").Id("m").Dot("tok").Dot("EncodePairWindows").Call(jen.Id("question"), jen.Id("text"), jen.Id("opts").Dot("MaxSeqLen"), jen.Id("opts").Dot("DocStride")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit("%w: %w"), jen.Id("ErrInvalidInput"), jen.Err()))),
		jen.List(jen.Id("out"), jen.Err()).Op(":=").Id("m").Dot("Run").Call(jen.Id("ctx"), jen.Id("m").Dot("batchOf").Call(jen.Id("windows"))),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Return(jen.Qual(pkgModelrt, "Answers").Call(jen.Id("windows"), jen.Id("out").Dot(start.field), jen.Id("out").Dot(end.field), jen.Id("opts")), jen.Nil()),
	)
	f.Line()
}

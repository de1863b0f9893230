package codegen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// Head is the post-processing a package applies to its model's outputs,
// beyond Run: the zero value is none (Embed mean-pools, Classify
// softmaxes).
type Head struct {
	// Embedding, if set, is the sentence-transformers head Embed applies
	// to last_hidden_state (pooling, Dense, Normalize); its Dense weights
	// go into weights.bin.
	Embedding *modelrt.EmbeddingHead
	// Prompts are put before the texts of EmbedWithPrompt (by name);
	// DefaultPrompt names the one Embed uses ("" for none).
	Prompts       map[string]string
	DefaultPrompt string
	// Scoring, for a classifier, is the activation of each logit: a
	// single-logit model (cross-encoder) gets Score and Rerank, one of
	// several logits (multi-label) gets Scores.
	Scoring modelrt.Activation
	// Sparse, set for a masked language model (a sparse encoder), is how
	// EmbedSparse pools its logits: SPLADE's (the zero value: max, relu)
	// or a sentence-transformers SparseEncoder's SpladePooling. Such a
	// package gets EmbedSparse and SparseVectors instead of Embed.
	Sparse *modelrt.SparseHead
}

// headVersion is the runtime version of packages that use a Head
// (modelrt.SupportVersion3: EmbeddingHead, Scores).
const headVersion = 3

// headLayout is where packWeights put the Dense arrays.
type headLayout struct {
	weightOff, biasOff []int
}

// runtimeVersion is the modelrt support version the package needs.
func (g *gen) runtimeVersion() int {
	if g.sparseEncoder() != nil {
		return max(RuntimeVersion, sparseEncoderVersion)
	}
	if start, _ := g.questionAnswerer(); start != nil {
		return max(RuntimeVersion, questionAnswererVersion)
	}
	if g.tokenClassifier() {
		return max(RuntimeVersion, tokenClassifierVersion)
	}
	if g.embedHead() != nil || g.scoring() != "" {
		return max(RuntimeVersion, headVersion)
	}
	return RuntimeVersion
}

// embedHead is the EmbeddingHead Embed applies, or nil for mean pooling.
func (g *gen) embedHead() *modelrt.EmbeddingHead {
	if g.embedOutput() == nil {
		return nil
	}
	return g.opts.Head.Embedding
}

// scoring is the classifier's score activation, or "".
func (g *gen) scoring() modelrt.Activation {
	if !g.classifier() {
		return ""
	}
	return g.opts.Head.Scoring
}

// checkHead rejects a Head that does not fit the model.
func (g *gen) checkHead() error {
	h := g.opts.Head
	if h.Embedding != nil {
		out := g.embedOutput()
		if out == nil {
			return fmt.Errorf("codegen: an embedding head needs a [batch, sequence, hidden] output and a vocabulary")
		}
		if err := h.Embedding.Validate(out.slot.width); err != nil {
			return fmt.Errorf("codegen: %w", err)
		}
	}
	if h.DefaultPrompt != "" {
		if _, ok := h.Prompts[h.DefaultPrompt]; !ok {
			return fmt.Errorf("codegen: default prompt %q is not among the prompts", h.DefaultPrompt)
		}
	}
	if h.Sparse != nil {
		if g.sparseEncoder() == nil {
			return fmt.Errorf("codegen: a sparse head needs a masked language model (one [batch, sequence, vocabulary] output named logits, and a vocabulary)")
		}
		if err := h.Sparse.Validate(); err != nil {
			return fmt.Errorf("codegen: %w", err)
		}
	}
	if h.Scoring != "" && !g.classifier() {
		return fmt.Errorf("codegen: scoring %q needs a classifier (one [batch, labels] output, labels and a vocabulary)", h.Scoring)
	}
	return nil
}

// packHead appends the Dense arrays to the weight file.
func (g *gen) packHead(w *modelrt.WeightsWriter) {
	h := g.embedHead()
	if h == nil {
		return
	}
	for _, d := range h.Dense {
		g.head.weightOff = append(g.head.weightOff, w.F32(d.Weight))
		g.decoded += 4 * int64(len(d.Weight))
		off := -1
		if d.Bias != nil {
			off = w.F32(d.Bias)
			g.decoded += 4 * int64(len(d.Bias))
		}
		g.head.biasOff = append(g.head.biasOff, off)
	}
}

// headWeights are the weights struct fields, their decoding and the
// statement that assembles the head.
func (g *gen) headWeights() (fields, inits, sets []jen.Code) {
	h := g.embedHead()
	if h == nil {
		return nil, nil, nil
	}
	var dense []jen.Code
	for i, d := range h.Dense {
		wf, bf := fmt.Sprintf("dense%dWeight", i), fmt.Sprintf("dense%dBias", i)
		fields = append(fields, jen.Id(wf).Index().Float32().Comment(fmt.Sprintf("Dense %d: [%d, %d]", i, d.Out, d.In)))
		inits = append(inits, jen.Id(wf).Op(":").Id("r").Dot("F32").Call(jen.Lit(g.head.weightOff[i]), jen.Lit(len(d.Weight))).Op(","))
		dd := jen.Dict{
			jen.Id("In"): jen.Lit(d.In), jen.Id("Out"): jen.Lit(d.Out), jen.Id("Weight"): jen.Id("w").Dot(wf),
			jen.Id("Activation"): jen.Lit(string(d.Activation)),
		}
		if d.Bias != nil {
			fields = append(fields, jen.Id(bf).Index().Float32())
			inits = append(inits, jen.Id(bf).Op(":").Id("r").Dot("F32").Call(jen.Lit(g.head.biasOff[i]), jen.Lit(len(d.Bias))).Op(","))
			dd[jen.Id("Bias")] = jen.Id("w").Dot(bf)
		}
		dense = append(dense, jen.Values(dd))
	}
	modes := lits(h.Pooling, func(m modelrt.PoolingMode) jen.Code { return jen.Lit(string(m)) })
	d := jen.Dict{jen.Id("Pooling"): jen.Index().Qual(pkgModelrt, "PoolingMode").Values(modes...)}
	if len(dense) > 0 {
		d[jen.Id("Dense")] = jen.Index().Qual(pkgModelrt, "Dense").Values(dense...)
	}
	if h.Normalize {
		d[jen.Id("Normalize")] = jen.True()
	}
	fields = append(fields, jen.Id("head").Qual(pkgModelrt, "EmbeddingHead").Comment("Embed's pooling, Dense layers, normalisation"))
	sets = append(sets, jen.Id("w").Dot("head").Op("=").Qual(pkgModelrt, "EmbeddingHead").Values(d))
	return fields, inits, sets
}

// describeHead is the doc of an embedding head, e.g. "mean pooling, Dense
// 384 -> 768 (tanh), L2 normalisation".
func describeHead(h *modelrt.EmbeddingHead) string {
	var modes []string
	for _, m := range h.Pooling {
		modes = append(modes, string(m))
	}
	parts := []string{strings.Join(modes, " + ") + " pooling"}
	for _, d := range h.Dense {
		parts = append(parts, fmt.Sprintf("Dense %d -> %d (%s)", d.In, d.Out, d.Activation))
	}
	if h.Normalize {
		parts = append(parts, "L2 normalisation")
	}
	return strings.Join(parts, ", ")
}

// embedWithHead writes Embed, EmbedWithPrompt and Prompts for a package
// with an embedding head.
func (g *gen) embedWithHead(f *jen.File, out *output) {
	h := g.embedHead()
	dim := h.Dim(out.slot.width)
	prompts := jen.Dict{} // rendered in key order
	for name, text := range g.opts.Head.Prompts {
		prompts[jen.Lit(name)] = jen.Lit(text)
	}
	f.Comment("EmbeddingDim is the length of Embed's vectors.")
	f.Const().Id("EmbeddingDim").Op("=").Lit(dim)
	f.Line()
	f.Comment("Prompts returns the model's prompts by name (config_sentence_transformers.json).")
	f.Func().Id("Prompts").Params().Map(jen.String()).String().Block(jen.Return(jen.Map(jen.String()).String().Values(prompts)))
	f.Line()
	def := "no prompt"
	if g.opts.Head.DefaultPrompt != "" {
		def = fmt.Sprintf("the default prompt %q (%q)", g.opts.Head.DefaultPrompt, g.opts.Head.Prompts[g.opts.Head.DefaultPrompt])
	}
	f.Comment(fmt.Sprintf("Embed returns the sentence embedding of each text, with %s before it:", def))
	f.Comment(fmt.Sprintf("tokenized ([CLS] text [SEP], truncated to %d tokens), encoded, then", g.tokenizerMaxLength()))
	f.Comment(describeHead(h) + ":")
	f.Comment(fmt.Sprintf("EmbeddingDim (%d) values per text, bit for bit what `sqc run --int8` prints.", dim))
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("Embed").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("texts").Index().String()).Params(jen.Index().Index().Float32(), jen.Error()).Block(
		jen.Return(jen.Id("m").Dot("EmbedWithPrompt").Call(jen.Id("ctx"), jen.Lit(g.opts.Head.DefaultPrompt), jen.Id("texts"))),
	)
	f.Line()
	f.Comment(`EmbedWithPrompt is Embed with the prompt called name before each text ("" for none).`)
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("EmbedWithPrompt").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("name").String(), jen.Id("texts").Index().String()).Params(jen.Index().Index().Float32(), jen.Error()).Block(
		jen.List(jen.Id("prompt"), jen.Id("ok")).Op(":=").Id("Prompts").Call().Index(jen.Id("name")),
		jen.If(jen.Op("!").Id("ok").Op("&&").Id("name").Op("!=").Lit("")).Block(
			jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(g.opts.Package+": no prompt %q"), jen.Id("name")))),
		jen.If(jen.Id("prompt").Op("!=").Lit("")).Block(
			jen.Id("texts").Op("=").Qual("slices", "Clone").Call(jen.Id("texts")),
			jen.For(jen.Id("i").Op(":=").Range().Id("texts")).Block(jen.Id("texts").Index(jen.Id("i")).Op("=").Id("prompt").Op("+").Id("texts").Index(jen.Id("i"))),
		),
		jen.Id("b").Op(":=").Id("m").Dot("encode").Call(jen.Id("texts")),
		jen.List(jen.Id("out"), jen.Err()).Op(":=").Id("m").Dot("Run").Call(jen.Id("ctx"), jen.Id("b")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Id("vecs").Op(":=").Make(jen.Index().Index().Float32(), jen.Len(jen.Id("texts"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("h")).Op(":=").Range().Id("out").Dot(out.field)).Block(
			jen.Id("vecs").Index(jen.Id("i")).Op("=").Id("m").Dot("w").Dot("head").Dot("Embed").Call(jen.Id("h"), jen.Lit(out.slot.width), jen.Id("b").Dot("AttentionMask").Index(jen.Id("i"))),
		),
		jen.Return(jen.Id("vecs"), jen.Nil()),
	)
	f.Line()
}

// tokenizerMaxLength is the truncation length of the package's tokenizer.
func (g *gen) tokenizerMaxLength() int {
	n := min(g.pl.maxSeq, g.tok.MaxLength())
	if g.opts.MaxTokens > 0 {
		n = min(n, g.opts.MaxTokens)
	}
	return n
}

// scoreMethods writes Score and Rerank (one logit) or Scores (several)
// for a classifier with a score activation.
func (g *gen) scoreMethods(f *jen.File) {
	act := g.scoring()
	out := g.outs[0]
	ctx := jen.Id("ctx").Qual("context", "Context")
	scoresOf := func(b *jen.Statement) []jen.Code {
		return []jen.Code{
			jen.List(jen.Id("out"), jen.Err()).Op(":=").Id("m").Dot("Run").Call(jen.Id("ctx"), b),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		}
	}
	if out.slot.width != 1 {
		f.Comment(fmt.Sprintf("Scores tokenizes each text, runs the model and returns the %s of each of", act))
		f.Comment("its NumLabels logits: independent per-label scores (multi-label classification).")
		body := append(scoresOf(jen.Id("m").Dot("encode").Call(jen.Id("texts"))),
			jen.Id("scores").Op(":=").Make(jen.Index().Index().Float32(), jen.Len(jen.Id("texts"))),
			jen.For(jen.List(jen.Id("i"), jen.Id("logits")).Op(":=").Range().Id("out").Dot(out.field)).Block(
				jen.Id("scores").Index(jen.Id("i")).Op("=").Qual(pkgModelrt, "Scores").Call(jen.Id("logits"), jen.Lit(string(act))),
			),
			jen.Return(jen.Id("scores"), jen.Nil()),
		)
		f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("Scores").Params(ctx, jen.Id("texts").Index().String()).Params(jen.Index().Index().Float32(), jen.Error()).Block(body...)
		f.Line()
		return
	}
	collect := []jen.Code{
		jen.Id("scores").Op(":=").Make(jen.Index().Float32(), jen.Len(jen.Id("out").Dot(out.field))),
		jen.For(jen.List(jen.Id("i"), jen.Id("logits")).Op(":=").Range().Id("out").Dot(out.field)).Block(
			jen.Id("scores").Index(jen.Id("i")).Op("=").Qual(pkgModelrt, "Scores").Call(jen.Id("logits"), jen.Lit(string(act))).Index(jen.Lit(0)),
		),
		jen.Return(jen.Id("scores"), jen.Nil()),
	}
	f.Comment(fmt.Sprintf("ScorePairs returns the %s of the model's logit for each pair of texts,", act))
	f.Comment(fmt.Sprintf("tokenized as [CLS] a [SEP] b [SEP] (truncated to %d tokens, longest first).", g.tokenizerMaxLength()))
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("ScorePairs").Params(ctx, jen.Id("pairs").Index().Index(jen.Lit(2)).String()).Params(jen.Index().Float32(), jen.Error()).Block(
		append(scoresOf(jen.Id("m").Dot("encodePairs").Call(jen.Id("pairs"))), collect...)...)
	f.Line()
	f.Comment("Rerank scores each document against the query (ScorePairs of query and document)")
	f.Comment("and returns the scores in document order: higher is more relevant.")
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("Rerank").Params(ctx, jen.Id("query").String(), jen.Id("docs").Index().String()).Params(jen.Index().Float32(), jen.Error()).Block(
		jen.Id("pairs").Op(":=").Make(jen.Index().Index(jen.Lit(2)).String(), jen.Len(jen.Id("docs"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("d")).Op(":=").Range().Id("docs")).Block(jen.Id("pairs").Index(jen.Id("i")).Op("=").Index(jen.Lit(2)).String().Values(jen.Id("query"), jen.Id("d"))),
		jen.Return(jen.Id("m").Dot("ScorePairs").Call(jen.Id("ctx"), jen.Id("pairs"))),
	)
	f.Line()
	g.encoder(f, "encodePairs tokenizes pairs of texts into a Batch.", "encodePairs", "pairs", jen.Index().Index(jen.Lit(2)).String(), "p",
		jen.Id("m").Dot("tok").Dot("EncodePair").Call(jen.Id("p").Index(jen.Lit(0)), jen.Id("p").Index(jen.Lit(1))))
	f.Line()
}

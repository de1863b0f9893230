package codegen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// errorNames are the modelrt sentinels a generated package re-exports.
var errorNames = []string{
	"ErrInvalidInput", "ErrEmptyBatch", "ErrEmptySequence", "ErrSequenceTooLong", "ErrTokenOutOfRange",
	"ErrMaskLength", "ErrTokenTypeLength", "ErrTokenTypeInRange", "ErrBatchShape", "ErrCorruptWeights",
}

// classifier reports whether the package gets Classify: one [batch, L]
// output and L labels.
func (g *gen) classifier() bool {
	return g.tok != nil && len(g.outs) == 1 && !g.outs[0].perSeq && len(g.opts.Labels) == g.outs[0].slot.width && len(g.opts.Labels) > 0
}

// embedOutput is the output Embed pools, or nil when the package gets no
// Embed: the first [batch, seq, H] output of an encoder without a
// classifier head (last_hidden_state). A masked language model's logits
// are not hidden states: its package gets EmbedSparse instead.
func (g *gen) embedOutput() *output {
	if start, _ := g.questionAnswerer(); g.tok == nil || g.labeled() || start != nil || g.sparseEncoder() != nil {
		return nil
	}
	for i := range g.outs {
		if g.outs[i].perSeq {
			return &g.outs[i]
		}
	}
	return nil
}

func (g *gen) modelFile() *jen.File {
	f := newFile(g.opts.Package)
	o := g.opts
	para := func(text string) {
		for _, line := range wrap(text, 80) {
			f.PackageComment(line)
		}
	}
	para(fmt.Sprintf("Package %s runs the model %q, compiled by sqc into SmoothQuant INT8 inference in Go on runtime/qgemm's kernels (AMX, AVX512-VNNI, AVX2 or portable Go, chosen at run time).", o.Package, o.ModelName))
	f.PackageComment("")
	if o.Summary != "" {
		para("Quantisation: " + o.Summary + ".")
		f.PackageComment("")
	}
	para(fmt.Sprintf("Compiled for at most %d tokens per sequence and %d sequences per forward pass (Run splits larger batches); kernel target %s. The schedule (schedule.go) is %d runtime calls; the weights (weights.bin) are embedded.",
		g.pl.maxSeq, g.pl.maxBatch, o.Target, len(g.pl.prog.Steps())))

	f.Comment("The generated code's runtime version: this fails to compile against a runtime/modelrt")
	f.Comment("that no longer supports it (regenerate with a matching sqc).")
	f.Const().Id("_").Op("=").Qual(pkgModelrt, fmt.Sprintf("SupportVersion%d", g.runtimeVersion()))
	f.Line()

	limits := []jen.Code{
		jen.Comment("MaxSequence is the longest sequence Run accepts, in tokens."),
		jen.Id("MaxSequence").Op("=").Lit(g.pl.maxSeq),
		jen.Comment("MaxBatch is the number of sequences one forward pass takes; Run splits larger batches."),
		jen.Id("MaxBatch").Op("=").Lit(g.pl.maxBatch),
		jen.Comment("VocabSize is the number of token ids: ids must be in [0, VocabSize)."),
		jen.Id("VocabSize").Op("=").Lit(g.pl.vocab),
		jen.Comment("TypeVocabSize is the number of token type ids (0: the model has no token types)."),
		jen.Id("TypeVocabSize").Op("=").Lit(g.pl.typeVocab),
		jen.Comment("Packed: Run computes only the real tokens of a batch, attention per sequence at its own"),
		jen.Comment("length (padding-free batches); false where the package doc says why not."),
		jen.Id("Packed").Op("=").Lit(g.pl.prog.PackingReason() == ""),
	}
	if g.labeled() {
		limits = append(limits, jen.Comment("NumLabels is the number of classes."), jen.Id("NumLabels").Op("=").Lit(len(o.Labels)))
	}
	f.Const().Defs(limits...)
	f.Line()
	f.Comment("Sizes of one workspace, at MaxBatch x MaxSequence.")
	f.Const().Defs(
		jen.Id("arenaBytes").Op("=").Lit(int(max(g.pl.arenaBytes, exec.MemoryAlign))).Comment("activations of every dtype, reused by lifetime (exec.PlanMemory)"),
		jen.Id("maxHeadDim").Op("=").Lit(max(g.pl.maxHeadDim, 1)).Comment("attention scratch per query row"),
		jen.Id("target").Op("=").Lit(targetISA(o.Target)).Comment(`kernel family ceiling ("": fastest available)`),
	)
	f.Line()

	f.Var().Defs(append([]jen.Code{jen.Comment("Errors of New, Run, Classify and Embed: runtime/modelrt's, so errors.Is works with either.")},
		lits(errorNames, func(e string) jen.Code { return jen.Id(e).Op("=").Qual(pkgModelrt, e) })...)...)
	f.Line()
	f.Comment("Batch is Run's request: token ids per sequence, optional masks and token types.")
	f.Type().Id("Batch").Op("=").Qual(pkgModelrt, "Batch")
	if g.classifier() {
		f.Comment("Prediction is Classify's answer for one text.")
		f.Type().Id("Prediction").Op("=").Qual(pkgModelrt, "Prediction")
	}
	if start, _ := g.questionAnswerer(); start != nil {
		f.Comment("QAOptions are Answer's parameters (the zero value: the pipeline's defaults), Answer one of its answers.")
		f.Type().Defs(
			jen.Id("QAOptions").Op("=").Qual(pkgModelrt, "QAOptions"),
			jen.Id("Answer").Op("=").Qual(pkgModelrt, "Answer"),
		)
	}
	if g.tokenClassifier() {
		f.Comment("TokenPrediction is TagTokens' answer for one token, Entity Entities' for a run of them.")
		f.Type().Defs(
			jen.Id("TokenPrediction").Op("=").Qual(pkgModelrt, "TokenPrediction"),
			jen.Id("Entity").Op("=").Qual(pkgModelrt, "Entity"),
		)
	}
	if g.sparseEncoder() != nil {
		f.Comment("SparseValue is one entry of EmbedSparse's answer for a text: a vocabulary index and its weight.")
		f.Type().Id("SparseValue").Op("=").Qual(pkgModelrt, "SparseValue")
	}
	f.Line()

	var outFields []jen.Code
	for _, out := range g.outs {
		what := fmt.Sprintf("%d values", out.slot.width)
		if out.perSeq {
			what = fmt.Sprintf("its length x %d values (row-major, one row per token)", out.slot.width)
		}
		outFields = append(outFields, jen.Comment(fmt.Sprintf("%s is the model output %q: per sequence, %s.", out.field, out.slot.name, what)), jen.Id(out.field).Index().Index().Float32())
	}
	f.Comment("Outputs are Run's results, one entry per sequence of the batch, in order.")
	f.Type().Id("Outputs").Struct(outFields...)
	f.Line()

	f.Comment("Options configure NewWithOptions; the zero value is New's.")
	f.Type().Id("Options").Struct(
		jen.Comment("Threads is the number of workers (<= 0: GOMAXPROCS)."),
		jen.Id("Threads").Int(),
		jen.Comment(`ISA caps the kernel family ("amx", "vnni", "avx2", "go"); "" means the compiled`),
		jen.Comment("target, and for target auto the SQC_ISA environment variable, else the fastest."),
		jen.Comment(`"amx-emulated" runs the AMX code paths with the tiles emulated in AVX512-VNNI,`),
		jen.Comment("far slower, to check on any such CPU the outputs AMX servers give (the same bits)."),
		jen.Id("ISA").String(),
	)
	f.Line()

	modelFields := []jen.Code{
		jen.Id("w").Op("*").Id("weights"),
		jen.Id("pool").Op("*").Qual(pkgPool, "Pool"),
		jen.Id("gemm").Op("*").Qual(pkgQgemm, "Engine"),
		jen.Id("workspaces").Qual("sync", "Pool").Comment("*workspace: one per concurrent Run"),
	}
	if g.tok != nil {
		modelFields = append(modelFields, jen.Id("tok").Op("*").Qual(pkgTokenizer, "Tokenizer"))
	}
	f.Comment("Model is the compiled model. Its methods are safe for concurrent use: each Run")
	f.Comment("takes its own workspace from a pool, and the kernels share one worker pool.")
	f.Type().Id("Model").Struct(modelFields...)
	f.Line()

	f.Comment("New loads the embedded weights (checking their length and SHA-256) and starts")
	f.Comment("the worker pool.")
	f.Func().Id("New").Params().Params(jen.Op("*").Id("Model"), jen.Error()).Block(
		jen.Return(jen.Id("NewWithOptions").Call(jen.Id("Options").Values())),
	)
	f.Line()
	f.Comment("NewWithOptions is New with a thread count and kernel family of the caller's choice.")
	newBody := []jen.Code{
		jen.List(jen.Id("w"), jen.Err()).Op(":=").Id("loadWeights").Call(),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(o.Package+": %w"), jen.Err()))),
		jen.Id("isa").Op(":=").Id("opts").Dot("ISA"),
		jen.If(jen.Id("isa").Op("==").Lit("")).Block(jen.Id("isa").Op("=").Id("target")),
		jen.Id("p").Op(":=").Qual(pkgPool, "New").Call(jen.Id("opts").Dot("Threads")),
		jen.List(jen.Id("e"), jen.Err()).Op(":=").Qual(pkgQgemm, "New").Call(jen.Qual(pkgQgemm, "Options").Values(jen.Dict{jen.Id("Pool"): jen.Id("p"), jen.Id("ISA"): jen.Id("isa")})),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Id("p").Dot("Close").Call(), jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(o.Package+": %w"), jen.Err()))),
		jen.Id("m").Op(":=").Op("&").Id("Model").Values(jen.Dict{jen.Id("w"): jen.Id("w"), jen.Id("pool"): jen.Id("p"), jen.Id("gemm"): jen.Id("e")}),
	}
	if g.tok != nil {
		newBody = append(newBody,
			jen.List(jen.Id("tok"), jen.Err()).Op(":=").Add(g.tokenizerCode()),
			jen.If(jen.Err().Op("==").Nil()).Block(jen.List(jen.Id("tok"), jen.Err()).Op("=").Id("tok").Dot("WithMaxLength").Call(jen.Lit(g.tokenizerMaxLength()))),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Id("p").Dot("Close").Call(), jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(o.Package+": tokenizer: %w"), jen.Err()))),
			jen.Id("m").Dot("tok").Op("=").Id("tok"),
		)
	}
	newBody = append(newBody,
		jen.Id("m").Dot("workspaces").Dot("New").Op("=").Func().Params().Any().Block(jen.Return(jen.Id("m").Dot("newWorkspace").Call())),
		jen.Return(jen.Id("m"), jen.Nil()),
	)
	f.Func().Id("NewWithOptions").Params(jen.Id("opts").Id("Options")).Params(jen.Op("*").Id("Model"), jen.Error()).Block(newBody...)
	f.Line()

	f.Comment("Close stops the worker pool. The Model still works afterwards, on the caller's goroutine.")
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("Close").Params().Block(jen.Id("m").Dot("pool").Dot("Close").Call())
	f.Line()
	f.Comment("Describe says which kernel family runs and why.")
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("Describe").Params().String().Block(jen.Return(jen.Id("m").Dot("gemm").Dot("Describe").Call()))
	f.Line()

	g.workspace(f)
	g.run(f)
	if g.labeled() {
		g.labelsFunc(f)
	}
	if g.classifier() {
		g.classify(f)
	}
	if g.tokenClassifier() {
		g.classifyTokens(f)
	}
	if start, end := g.questionAnswerer(); start != nil {
		g.answer(f, start, end)
	}
	if start, _ := g.questionAnswerer(); start != nil || g.tokenClassifier() {
		g.batchOfEncodings(f)
	}
	if out := g.sparseEncoder(); out != nil {
		g.embedSparse(f, out)
	}
	if g.scoring() != "" {
		g.scoreMethods(f)
	}
	if out := g.embedOutput(); out != nil && g.embedHead() != nil {
		g.embedWithHead(f, out)
	} else if out != nil {
		g.embed(f, out)
	}
	if g.tok != nil {
		f.Comment("Tokenizer returns the model's tokenizer (the embedded " + g.opts.Tokenizer.Name + "), truncating to")
		f.Comment("MaxSequence tokens: what Classify and Embed encode texts with, for callers that")
		f.Comment("tokenize on their own (runtime/serve batches requests from several clients).")
		f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("Tokenizer").Params().Op("*").Qual(pkgTokenizer, "Tokenizer").Block(jen.Return(jen.Id("m").Dot("tok")))
		f.Line()
		g.encode(f)
	}
	return f
}

// targetISA is the qgemm ISA name of a target ("" for auto).
func targetISA(t string) string {
	if t == "auto" {
		return ""
	}
	return t
}

// tokenizerCode builds the package's tokenizer from the embedded file as
// `sqc run` builds it from the model directory (tokenizer.FromSource).
func (g *gen) tokenizerCode() *jen.Statement {
	src := g.opts.Tokenizer
	d := jen.Dict{jen.Id("Kind"): jen.Lit(src.Kind), jen.Id("Name"): jen.Lit(src.Name), jen.Id("Data"): jen.Id("w").Dot("vocab")}
	if src.MaxLength > 0 {
		d[jen.Id("MaxLength")] = jen.Lit(src.MaxLength)
	}
	if src.Kind == tokenizer.SourceVocab {
		d[jen.Id("Options")] = g.tokenizerOptions()
	}
	return jen.Qual(pkgTokenizer, "FromSource").Call(jen.Op("&").Qual(pkgTokenizer, "Source").Values(d))
}

// tokenizerOptions are vocab.txt's BertTokenizer settings.
func (g *gen) tokenizerOptions() *jen.Statement {
	t := g.opts.Tokenizer.Options
	d := jen.Dict{}
	if t.StripAccents != nil {
		d[jen.Id("StripAccents")] = jen.Qual(pkgModelrt, "Bool").Call(jen.Lit(*t.StripAccents))
	}
	// The other settings, each given only where it is not the zero value.
	for _, s := range []struct {
		name string
		set  bool
		v    any
	}{
		{"Lowercase", t.Lowercase, true}, {"NoChineseChars", t.NoChineseChars, true},
		{"MaxLength", t.MaxLength > 0, t.MaxLength}, {"MaxInputCharsPerWord", t.MaxInputCharsPerWord > 0, t.MaxInputCharsPerWord},
		{"UnkToken", t.UnkToken != "", t.UnkToken}, {"ClsToken", t.ClsToken != "", t.ClsToken}, {"SepToken", t.SepToken != "", t.SepToken},
		{"PadToken", t.PadToken != "", t.PadToken}, {"MaskToken", t.MaskToken != "", t.MaskToken},
	} {
		if s.set {
			d[jen.Id(s.name)] = jen.Lit(s.v)
		}
	}
	return jen.Qual(pkgTokenizer, "Options").Values(d)
}

func (g *gen) workspace(f *jen.File) {
	fields := []jen.Code{
		jen.Id("f32").Index().Float32().Comment("the arena as float32 (activations)"),
		jen.Id("u8").Index().Uint8().Comment("the same bytes as u8 (quantised activations, GEMM inputs)"),
		jen.Id("i32").Index().Int32().Comment("the same bytes as int32 (per-token zero points)"),
		jen.List(jen.Id("ids"), jen.Id("mask"), jen.Id("types")).Index().Int64().Comment("inputs, [MaxBatch, MaxSequence] at most"),
		jen.Id("attn").Index().Float32().Comment("attention scratch"),
		jen.Id("order").Index().Int().Comment("Run's chunk order (modelrt.ChunkOrder), grown to the largest request"),
		jen.List(jen.Id("lengths"), jen.Id("offsets")).Index().Int().Comment("a packed chunk's sequence lengths and row offsets (nn.MaskLengths, nn.PackedOffsets)"),
	}
	f.Comment("workspace is the memory of one forward pass at MaxBatch x MaxSequence.")
	f.Type().Id("workspace").Struct(fields...)
	f.Line()
	scratch := func() *jen.Statement {
		args := func() []jen.Code {
			return []jen.Code{jen.Id("m").Dot("pool").Dot("Workers").Call(), jen.Id("MaxSequence"), jen.Id("maxHeadDim")}
		}
		lens := []jen.Code{jen.Qual(pkgNN, "AttentionScratchLen").Call(args()...)}
		if g.pl.int8Attention {
			lens = append(lens, jen.Qual(pkgNN, "AttentionInt8ScratchLen").Call(args()...))
		}
		if g.pl.relativeRows > 0 {
			lens = append(lens, jen.Qual(pkgNN, "DisentangledScratchLen").Call(jen.Id("m").Dot("pool").Dot("Workers").Call(), jen.Lit(g.pl.relativeRows), jen.Id("maxHeadDim")))
		}
		if len(lens) == 1 {
			return lens[0].(*jen.Statement)
		}
		return jen.Id("max").Call(lens...)
	}
	vals := jen.Dict{
		jen.Id("ids"):   jen.Make(jen.Index().Int64(), jen.Id("MaxBatch").Op("*").Id("MaxSequence")),
		jen.Id("mask"):  jen.Make(jen.Index().Int64(), jen.Id("MaxBatch").Op("*").Id("MaxSequence")),
		jen.Id("types"): jen.Make(jen.Index().Int64(), jen.Id("MaxBatch").Op("*").Id("MaxSequence")),
		jen.Id("attn"):  jen.Make(jen.Index().Float32(), scratch()),
	}
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("newWorkspace").Params().Op("*").Id("workspace").Block(
		jen.Id("ws").Op(":=").Op("&").Id("workspace").Values(vals),
		jen.List(jen.Id("ws").Dot("f32"), jen.Id("ws").Dot("u8"), jen.Id("ws").Dot("i32")).Op("=").Id("newArena").Call(),
		jen.Return(jen.Id("ws")))
	f.Line()
	g.newArena(f)
	wsBytes := jen.Id("arenaBytes").
		Op("+").Lit(3 * 8).Op("*").Id("MaxBatch").Op("*").Id("MaxSequence").Op("+").Lit(4).Op("*").Add(scratch())
	f.Comment("MemoryBytes is the memory the model holds: its weights plus one workspace (each")
	f.Comment("Run in progress at the same time holds one). On little-endian hosts the weights")
	f.Comment("are the embedded weights.bin's pages, read in place; elsewhere, decoded copies.")
	f.Comment("Not included: the tokenizer's vocabulary and the Go runtime's own memory.")
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("MemoryBytes").Params().Int64().Block(
		jen.Return(jen.Id("weightsDecodedBytes").Op("+").Int64().Call(wsBytes)))
	f.Line()
}

func (g *gen) run(f *jen.File) {
	chunk := jen.Id("MaxBatch")
	if !g.pl.hasInput("mask") {
		// Without a mask input, padding would change the results: run
		// each sequence alone.
		chunk = jen.Lit(1)
	}
	// A schedule that packs (compiler/exec packed.go) runs each chunk
	// padding-free when its masks are right-padding.
	packs := g.pl.prog.PackingReason() == ""
	perSeq := false
	var alloc jen.Dict = jen.Dict{}
	var copies []jen.Code
	for _, out := range g.outs {
		alloc[jen.Id(out.field)] = jen.Make(jen.Index().Index().Float32(), jen.Id("n"))
		off, w := out.slot.off, out.slot.width
		// rows is the output's rows from .. to-1 in the arena.
		rows := func(from, to *jen.Statement) *jen.Statement {
			return jen.Id("ws").Dot("f32").Index(jen.Lit(off).Op("+").Add(from).Op("*").Lit(w), jen.Lit(off).Op("+").Parens(to).Op("*").Lit(w))
		}
		dst := jen.Id("out").Dot(out.field).Index(jen.Id("i"))
		ids := jen.Len(jen.Id("b").Dot("InputIDs").Index(jen.Id("i")))
		switch {
		case out.perSeq && packs:
			// Rows start..start+used-1 are the sequence's computed tokens;
			// positions its own mask pads (a packed chunk computes none)
			// stay zero.
			copies = append(copies,
				dst.Clone().Op("=").Make(jen.Index().Float32(), ids.Op("*").Lit(w)),
				jen.Copy(dst.Clone(), rows(jen.Id("start"), jen.Id("start").Op("+").Id("used"))))
			perSeq = true
		case out.perSeq:
			copies = append(copies, dst.Op("=").Qual("slices", "Clone").Call(rows(jen.Id("r").Op("*").Id("seq"), jen.Id("r").Op("*").Id("seq").Op("+").Add(ids))))
		default:
			copies = append(copies, dst.Op("=").Qual("slices", "Clone").Call(rows(jen.Id("r"), jen.Id("r").Op("+").Lit(1))))
		}
	}
	if packs && perSeq {
		// A per-token output's rows of sequence r: packed, offsets[r] and
		// its length; padded, r*seq and all its ids.
		copies = append([]jen.Code{
			jen.List(jen.Id("start"), jen.Id("used")).Op(":=").List(jen.Id("r").Op("*").Id("seq"), jen.Len(jen.Id("b").Dot("InputIDs").Index(jen.Id("i")))),
			jen.If(jen.Id("offsets").Op("!=").Nil()).Block(jen.List(jen.Id("start"), jen.Id("used")).Op("=").List(jen.Id("offsets").Index(jen.Id("r")), jen.Id("ws").Dot("lengths").Index(jen.Id("r")))),
		}, copies...)
	}
	types := jen.Nil()
	if g.pl.hasInput("types") {
		types = jen.Id("ws").Dot("types")
	}
	offsets := []jen.Code{jen.Var().Id("offsets").Index().Int()}
	if packs {
		offsets = append(offsets,
			jen.Var().Id("ok").Bool(),
			jen.If(jen.List(jen.Id("ws").Dot("lengths"), jen.Id("ok")).Op("=").Qual(pkgNN, "MaskLengths").Call(jen.Id("ws").Dot("lengths"), jen.Id("ws").Dot("mask"), jen.Id("batch"), jen.Id("seq")), jen.Id("ok")).Block(
				jen.Id("ws").Dot("offsets").Op("=").Qual(pkgNN, "PackedOffsets").Call(jen.Id("ws").Dot("offsets"), jen.Id("ws").Dot("lengths")),
				jen.Id("offsets").Op("=").Id("ws").Dot("offsets"),
			))
	}
	f.Comment("Run runs the model on a batch of token id sequences and returns one output entry")
	f.Comment("per sequence, in request order. Sequences may differ in length: each chunk of")
	f.Comment("MaxBatch sequences is right-padded to its longest, which does not change any")
	if packs {
		f.Comment("sequence's outputs, and runs packed (padding-free: only its real tokens are")
		f.Comment("computed, attention per sequence at its own length) when its masks are ones")
		f.Comment("then zeros. A request of more than MaxBatch sequences is chunked in")
	} else {
		f.Comment("sequence's outputs (" + g.pl.prog.PackingReason() + ": no packed batches),")
		f.Comment("and a request of more than MaxBatch sequences is chunked in")
	}
	f.Comment("order of length (modelrt.ChunkOrder), so that chunks pad little. Bad input gives")
	f.Comment("an error matching ErrInvalidInput and its precise cause, never a panic; a")
	f.Comment("cancelled ctx stops the pass at the next GEMM or attention and returns ctx.Err().")
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("Run").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("b").Id("Batch")).Params(jen.Id("Outputs"), jen.Error()).Block(
		returnIfErr(jen.Id("ctx").Dot("Err").Call(), jen.Id("Outputs").Values()),
		returnIfErr(jen.Qual(pkgModelrt, "Validate").Call(jen.Op("&").Id("b"), jen.Qual(pkgModelrt, "Limits").Values(jen.Dict{
			jen.Id("MaxSequence"): jen.Id("MaxSequence"), jen.Id("Vocab"): jen.Id("VocabSize"), jen.Id("TypeVocab"): jen.Id("TypeVocabSize"),
		})), jen.Id("Outputs").Values()),
		jen.Id("n").Op(":=").Id("b").Dot("Len").Call(),
		jen.Id("out").Op(":=").Id("Outputs").Values(alloc),
		jen.Id("ws").Op(":=").Id("m").Dot("workspaces").Dot("Get").Call().Assert(jen.Op("*").Id("workspace")),
		jen.Defer().Id("m").Dot("workspaces").Dot("Put").Call(jen.Id("ws")),
		jen.Id("ws").Dot("order").Op("=").Qual(pkgModelrt, "ChunkOrder").Call(jen.Id("ws").Dot("order"), jen.Op("&").Id("b"), chunk.Clone()),
		jen.For(jen.Id("lo").Op(":=").Lit(0), jen.Id("lo").Op("<").Id("n"), jen.Id("lo").Op("+=").Add(chunk.Clone())).Block(
			jen.Id("idx").Op(":=").Id("ws").Dot("order").Index(jen.Id("lo").Op(":").Min(jen.Id("n"), jen.Id("lo").Op("+").Add(chunk.Clone()))),
			jen.List(jen.Id("batch"), jen.Id("seq")).Op(":=").Len(jen.Id("idx")).Op(",").Qual(pkgModelrt, "LongestOf").Call(jen.Op("&").Id("b"), jen.Id("idx")),
			jen.Qual(pkgModelrt, "FillInputsOf").Call(jen.Id("ws").Dot("ids"), jen.Id("ws").Dot("mask"), types, jen.Op("&").Id("b"), jen.Id("idx"), jen.Id("seq"), jen.Lit(g.padID())),
			jen.Block(append(offsets,
				returnIfErr(jen.Id("m").Dot("forward").Call(jen.Id("ctx"), jen.Id("ws"), jen.Id("batch"), jen.Id("seq"), jen.Id("offsets")), jen.Id("Outputs").Values()),
				jen.For(jen.List(jen.Id("r"), jen.Id("i")).Op(":=").Range().Id("idx")).Block(copies...),
			)...),
		),
		jen.Return(jen.Id("out"), jen.Nil()),
	)
	f.Line()
}

// padID is the token id padding positions get (masked out, so any valid
// id would do; the tokenizer's [PAD] keeps it recognisable).
func (g *gen) padID() int64 {
	if g.tok != nil {
		return int64(g.tok.PadID())
	}
	return 0
}

func (g *gen) classify(f *jen.File) {
	out := g.outs[0]
	f.Comment("Classify tokenizes each text ([CLS] text [SEP], truncated to MaxSequence tokens),")
	f.Comment("runs the model and returns the most probable label with every class's softmax")
	f.Comment("probability, one Prediction per text.")
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("Classify").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("texts").Index().String()).Params(jen.Index().Id("Prediction"), jen.Error()).Block(
		jen.List(jen.Id("out"), jen.Err()).Op(":=").Id("m").Dot("Run").Call(jen.Id("ctx"), jen.Id("m").Dot("encode").Call(jen.Id("texts"))),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Id("labels").Op(":=").Id("Labels").Call(),
		jen.Id("preds").Op(":=").Make(jen.Index().Id("Prediction"), jen.Len(jen.Id("texts"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("logits")).Op(":=").Range().Id("out").Dot(out.field)).Block(
			jen.Id("preds").Index(jen.Id("i")).Op("=").Qual(pkgModelrt, "Predict").Call(jen.Id("logits"), jen.Id("labels")),
		),
		jen.Return(jen.Id("preds"), jen.Nil()),
	)
	f.Line()
}

func (g *gen) embed(f *jen.File, out *output) {
	f.Comment("Embed tokenizes each text ([CLS] text [SEP], truncated to MaxSequence tokens), runs")
	f.Comment(fmt.Sprintf("the encoder and returns the mean of %q over the text's tokens: one vector", out.slot.name))
	f.Comment(fmt.Sprintf("of %d values per text.", out.slot.width))
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("Embed").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("texts").Index().String()).Params(jen.Index().Index().Float32(), jen.Error()).Block(
		jen.Id("b").Op(":=").Id("m").Dot("encode").Call(jen.Id("texts")),
		jen.List(jen.Id("out"), jen.Err()).Op(":=").Id("m").Dot("Run").Call(jen.Id("ctx"), jen.Id("b")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Id("vecs").Op(":=").Make(jen.Index().Index().Float32(), jen.Len(jen.Id("texts"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("h")).Op(":=").Range().Id("out").Dot(out.field)).Block(
			jen.Id("vecs").Index(jen.Id("i")).Op("=").Qual(pkgModelrt, "MeanPool").Call(jen.Id("h"), jen.Lit(out.slot.width), jen.Id("b").Dot("AttentionMask").Index(jen.Id("i"))),
		),
		jen.Return(jen.Id("vecs"), jen.Nil()),
	)
	f.Line()
}

func (g *gen) encode(f *jen.File) {
	g.encoder(f, "encode tokenizes texts into a Batch.", "encode", "texts", jen.Index().String(), "t", jen.Id("m").Dot("tok").Dot("Encode").Call(jen.Id("t")))
}

// encoder writes the method name, which tokenizes each element el of its
// parameter in (of type typ) into a Batch with the call enc.
func (g *gen) encoder(f *jen.File, doc, name, in string, typ jen.Code, el string, enc *jen.Statement) {
	rows := func() *jen.Statement { return jen.Make(jen.Index().Index().Int64(), jen.Len(jen.Id(in))) }
	vals := jen.Dict{jen.Id("InputIDs"): rows(), jen.Id("AttentionMask"): rows()}
	loop := []jen.Code{
		jen.Id("e").Op(":=").Add(enc),
		jen.Id("b").Dot("InputIDs").Index(jen.Id("i")).Op(",").Id("b").Dot("AttentionMask").Index(jen.Id("i")).Op("=").Id("e").Dot("InputIDs").Op(",").Id("e").Dot("AttentionMask"),
	}
	if g.pl.hasInput("types") {
		vals[jen.Id("TokenTypeIDs")] = rows()
		loop = append(loop, jen.Id("b").Dot("TokenTypeIDs").Index(jen.Id("i")).Op("=").Id("e").Dot("TokenTypeIDs"))
	}
	f.Comment(doc)
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id(name).Params(jen.Id(in).Add(typ)).Id("Batch").Block(
		jen.Id("b").Op(":=").Id("Batch").Values(vals),
		jen.For(jen.List(jen.Id("i"), jen.Id(el)).Op(":=").Range().Id(in)).Block(loop...),
		jen.Return(jen.Id("b")),
	)
}

// wrap splits text into lines of at most width bytes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	for _, w := range strings.Fields(text) {
		if n := len(lines); n > 0 && len(lines[n-1])+1+len(w) <= width {
			lines[n-1] += " " + w
		} else {
			lines = append(lines, w)
		}
	}
	return lines
}

// newArena emits the allocation of the one activation arena: float32
// storage (so that the f32 view, the widest use, needs no conversion)
// started at a multiple of exec.MemoryAlign, since the plan's offsets are
// aligned relative to the arena's start; u8 and int32 views of the same
// bytes, as buffers of different dtypes share bytes by lifetime.
func (g *gen) newArena(f *jen.File) {
	align := exec.MemoryAlign
	ptr := func(of *jen.Statement) *jen.Statement { return jen.Qual("unsafe", "Pointer").Call(jen.Op("&").Add(of)) }
	f.Comment("newArena returns the workspace's activation arena, its first byte at a multiple of")
	f.Commentf("%d, as float32, u8 and int32 views of the same arenaBytes bytes: buffers whose", align)
	f.Comment("lifetimes do not overlap share bytes whatever their types (exec.PlanMemory's plan).")
	f.Func().Id("newArena").Params().Params(jen.Index().Float32(), jen.Index().Uint8(), jen.Index().Int32()).Block(
		jen.Id("buf").Op(":=").Make(jen.Index().Float32(), jen.Id("arenaBytes").Op("/").Lit(4).Op("+").Lit(align/4)),
		jen.Id("skip").Op(":=").Parens(jen.Lit(align).Op("-").Int().Call(jen.Uintptr().Call(ptr(jen.Id("buf").Index(jen.Lit(0))))).Op("%").Lit(align)).
			Op("%").Lit(align).Op("/").Lit(4),
		jen.Id("f32").Op(":=").Id("buf").Index(jen.Id("skip"), jen.Id("skip").Op("+").Id("arenaBytes").Op("/").Lit(4), jen.Id("skip").Op("+").Id("arenaBytes").Op("/").Lit(4)),
		jen.Id("p").Op(":=").Add(ptr(jen.Id("f32").Index(jen.Lit(0)))),
		jen.Return(jen.Id("f32"),
			jen.Qual("unsafe", "Slice").Call(jen.Parens(jen.Op("*").Uint8()).Call(jen.Id("p")), jen.Id("arenaBytes")),
			jen.Qual("unsafe", "Slice").Call(jen.Parens(jen.Op("*").Int32()).Call(jen.Id("p")), jen.Id("arenaBytes").Op("/").Lit(4))),
	)
	f.Line()
}

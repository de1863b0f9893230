package codegen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// packWeights lays out weights.bin (runtime/modelrt's format) in order of
// first use.
func (g *gen) packWeights() ([]byte, string) {
	w := modelrt.NewWeightsWriter()
	for _, wt := range g.pl.weights {
		switch wt.Kind {
		case weightF32:
			wt.Off = w.F32(wt.F32)
			g.decoded += 4 * int64(len(wt.F32))
		case weightPacked:
			b := wt.Packed
			wt.Off = w.I8(b.Data[:b.Np*b.Kp])
			wt.ColSumOff = w.I32(b.ColSum)
			g.decoded += int64(b.Np*b.Kp) + 4*int64(len(b.ColSum))
		case weightI64:
			wt.Off = w.I64(wt.Tensor.I64)
			g.decoded += 8 * int64(len(wt.Tensor.I64))
		case weightI32:
			wt.Off = w.I32(wt.Tensor.I32)
			g.decoded += 4 * int64(len(wt.Tensor.I32))
		case weightI8:
			wt.Off = w.I8(wt.Tensor.I8)
			g.decoded += int64(len(wt.Tensor.I8))
		}
	}
	if g.opts.Tokenizer != nil {
		g.vocabOff = w.Raw(g.opts.Tokenizer.Data)
	}
	g.packHead(w)
	return w.Bytes()
}

// weightsFile declares the weights struct, the go:embed of weights.bin and
// loadWeights, which checks the file and decodes every array at its
// constant offset.
func (g *gen) weightsFile(size int, sum string) *jen.File {
	f := newFile(g.opts.Package)
	f.Anon("embed")
	f.Comment("weightsBin is weights.bin: the packed weights (and vocabulary) in runtime/modelrt's")
	f.Comment("weight file format, version 1. loadWeights checks its length and SHA-256 before use.")
	f.Comment("")
	f.Comment("//go:embed weights.bin")
	f.Var().Id("weightsBin").Index().Byte()
	f.Line()
	f.Const().Defs(
		jen.Comment("weightsSize is the length of weights.bin in bytes."),
		jen.Id("weightsSize").Op("=").Lit(size),
		jen.Comment("weightsSHA256 is the SHA-256 of weights.bin, hex."),
		jen.Id("weightsSHA256").Op("=").Lit(sum),
		jen.Comment("weightsDecodedBytes is the memory the decoded arrays take."),
		jen.Id("weightsDecodedBytes").Op("=").Lit(g.decoded),
	)
	var fields []jen.Code
	var inits []jen.Code
	for _, wt := range g.pl.weights {
		switch wt.Kind {
		case weightF32:
			fields = append(fields, jen.Id(wt.Field).Index().Float32().Comment(wt.From))
			inits = append(inits, jen.Id(wt.Field).Op(":").Id("r").Dot("F32").Call(jen.Lit(wt.Off), jen.Lit(len(wt.F32))).Op(","))
		case weightPacked:
			b := wt.Packed
			fields = append(fields, jen.Id(wt.Field).Qual(pkgQgemm, "PackedB").Comment(fmt.Sprintf("%s: %dx%d s8, packed", wt.From, b.K, b.N)))
			inits = append(inits, jen.Id(wt.Field).Op(":").Qual(pkgQgemm, "PackedB").Values(jen.Dict{
				jen.Id("K"): jen.Lit(b.K), jen.Id("N"): jen.Lit(b.N), jen.Id("Kp"): jen.Lit(b.Kp), jen.Id("Np"): jen.Lit(b.Np),
				jen.Id("Data"):   jen.Id("r").Dot("I8").Call(jen.Lit(wt.Off), jen.Lit(b.Np*b.Kp)),
				jen.Id("ColSum"): jen.Id("r").Dot("I32").Call(jen.Lit(wt.ColSumOff), jen.Lit(len(b.ColSum))),
			}).Op(","))
		case weightI64, weightI32, weightI8: // constants of generic ops
			t := wt.Tensor
			elem, read := intWeight(wt.Kind)
			fields = append(fields, jen.Id(wt.Field).Index().Add(elem).Comment(fmt.Sprintf("%s: %s%v", wt.From, t.DType, t.Shape)))
			inits = append(inits, jen.Id(wt.Field).Op(":").Id("r").Dot(read).Call(jen.Lit(wt.Off), jen.Lit(t.Len())).Op(","))
		}
	}
	if t := g.opts.Tokenizer; t != nil {
		fields = append(fields, jen.Id("vocab").Index().Byte().Comment(t.Name))
		inits = append(inits, jen.Id("vocab").Op(":").Id("r").Dot("Raw").Call(jen.Lit(g.vocabOff), jen.Lit(len(t.Data))).Op(","))
	}
	var lnSets []jen.Code
	field := func(name string, v []float32) *jen.Statement {
		return jen.Id("w").Dot(g.pl.f32Weight(name, v).Field)
	}
	norm := func(p *nn.LayerNormParams, gamma, beta string) *jen.Statement {
		d := jen.Dict{jen.Id("N"): jen.Lit(p.N), jen.Id("Gamma"): field(gamma, p.Gamma), jen.Id("Epsilon"): jen.Lit(p.Epsilon)}
		if p.Beta != nil {
			d[jen.Id("Beta")] = field(beta, p.Beta)
		}
		return jen.Qual(pkgNN, "LayerNormParams").Values(d)
	}
	for _, st := range g.pl.prog.Steps() {
		name := g.pl.paramField[st]
		switch s := st.(type) {
		case *exec.LayerNormStep:
			fields = append(fields, jen.Id(name).Qual(pkgNN, "LayerNormParams").Comment(s.Node))
			lnSets = append(lnSets, jen.Id("w").Dot(name).Op("=").Add(norm(&s.Params, s.GammaName, s.BetaName)))
		case *exec.EmbedStep:
			e := &s.Params
			fields = append(fields, jen.Id(name).Qual(pkgNN, "Embeddings").Comment(s.Node))
			d := jen.Dict{
				jen.Id("Hidden"): jen.Lit(e.Hidden), jen.Id("Words"): field(s.WordName, e.Words), jen.Id("Positions"): field(s.PosName, e.Positions),
			}
			if e.TokenTypes != nil {
				d[jen.Id("TokenTypes")] = field(s.TypeName, e.TokenTypes)
			}
			if e.PadPositions {
				d[jen.Id("PadPositions")], d[jen.Id("PaddingIdx")] = jen.True(), jen.Lit(e.PaddingIdx)
			}
			lnSets = append(lnSets, jen.Id("w").Dot(name).Op("=").Qual(pkgNN, "Embeddings").Values(d))
		case *exec.GEMMStep:
			fields = append(fields, jen.Id(name).Qual(pkgQgemm, "Linear").Comment(s.Node))
			lnSets = append(lnSets, jen.Id("w").Dot(name).Op("=").Add(g.linearCode(s)))
		}
	}
	headFields, headInits, headSets := g.headWeights()
	fields, inits, lnSets = append(fields, headFields...), append(inits, headInits...), append(lnSets, headSets...)
	f.Comment("weights holds the model's constants, decoded from weightsBin.")
	f.Type().Id("weights").Struct(fields...)
	f.Line()
	body := []jen.Code{
		jen.List(jen.Id("r"), jen.Err()).Op(":=").Qual(pkgModelrt, "OpenWeights").Call(jen.Id("weightsBin"), jen.Id("weightsSize"), jen.Id("weightsSHA256")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Id("w").Op(":=").Op("&").Id("weights").Block(inits...),
	}
	body = append(body, lnSets...)
	body = append(body,
		jen.If(jen.Err().Op(":=").Id("r").Dot("Err").Call(), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Return(jen.Id("w"), jen.Nil()),
	)
	f.Comment("loadWeights checks weightsBin and decodes every array at its offset.")
	f.Func().Id("loadWeights").Params().Params(jen.Op("*").Id("weights"), jen.Error()).Block(body...)
	return f
}

// intWeight is an integer weight's Go element type and the
// modelrt.Weights method that decodes it.
func intWeight(k weightKind) (*jen.Statement, string) {
	switch k {
	case weightI64:
		return jen.Int64(), "I64"
	case weightI32:
		return jen.Int32(), "I32"
	}
	return jen.Int8(), "I8"
}

// linearCode is the qgemm.Linear literal of a GEMM step: exec's
// GEMMStep.Linear, its arrays the weights' fields.
func (g *gen) linearCode(s *exec.GEMMStep) *jen.Statement {
	l := &s.Linear
	d := jen.Dict{
		jen.Id("B"):     jen.Id("w").Dot(g.pl.packedWeight(s.Weight, &l.B).Field),
		jen.Id("Scale"): jen.Id("w").Dot(g.pl.f32Weight(s.Weight+".scale", l.Scale).Field),
	}
	if l.AZeroPoint != 0 {
		d[jen.Id("AZeroPoint")] = jen.Lit(l.AZeroPoint)
	}
	if l.Bias != nil {
		d[jen.Id("Bias")] = jen.Id("w").Dot(g.pl.f32Weight(s.BiasName, l.Bias).Field)
	}
	if l.Act != qgemm.ActNone {
		d[jen.Id("Act")] = actCode(l.Act)
	}
	if l.OutKp > 0 {
		d[jen.Id("OutKp")] = jen.Lit(l.OutKp)
		d[jen.Id("OutInvScale")] = jen.Lit(l.OutInvScale)
		if l.OutZeroPoint != 0 {
			d[jen.Id("OutZeroPoint")] = jen.Lit(l.OutZeroPoint)
		}
	}
	return jen.Qual(pkgQgemm, "Linear").Values(d)
}

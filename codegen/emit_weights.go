package codegen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/runtime/modelrt"
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
		case weightInt:
			wt.Off = intWeights[wt.Tensor.DType].write(w, wt.Tensor)
			g.decoded += int64(wt.Tensor.DType.Size() * wt.Tensor.Len())
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
		case weightInt: // constants of generic ops
			t, iw := wt.Tensor, intWeights[wt.Tensor.DType]
			fields = append(fields, jen.Id(wt.Field).Index().Id(iw.elem).Comment(fmt.Sprintf("%s: %s%v", wt.From, t.DType, t.Shape)))
			inits = append(inits, jen.Id(wt.Field).Op(":").Id("r").Dot(iw.read).Call(jen.Lit(wt.Off), jen.Lit(t.Len())).Op(","))
		}
	}
	if t := g.opts.Tokenizer; t != nil {
		fields = append(fields, jen.Id("vocab").Index().Byte().Comment(t.Name))
		inits = append(inits, jen.Id("vocab").Op(":").Id("r").Dot("Raw").Call(jen.Lit(g.vocabOff), jen.Lit(len(t.Data))).Op(","))
	}
	var lnSets []jen.Code
	for _, p := range g.pl.params {
		fields = append(fields, jen.Id(p.field).Qual(p.pkg, p.typ).Comment(p.node))
		lnSets = append(lnSets, jen.Id("w").Dot(p.field).Op("=").Qual(p.pkg, p.typ).Values(p.values))
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

// A paramSet is a field of the weights struct holding one step's constant
// parameters: a pkg.typ literal of values, whose arrays are fields of the
// weights.
type paramSet struct {
	field, node, pkg, typ string
	values                jen.Dict
}

// addParams keeps step st's parameters in a field named by prefix and the
// number of such fields before it (paramField).
func (pl *plan) addParams(st exec.Step, prefix, pkg, typ string, values jen.Dict) {
	p := paramSet{field: fmt.Sprintf("%s%d", prefix, pl.paramCount[prefix]), node: st.Source(), pkg: pkg, typ: typ, values: values}
	pl.paramCount[prefix]++
	pl.paramField[st] = p.field
	pl.params = append(pl.params, p)
}

// f32Field is the weights' field (in loadWeights) holding v.
func (pl *plan) f32Field(from string, v []float32) *jen.Statement {
	return jen.Id("w").Dot(pl.f32Weight(from, v).Field)
}

// linearParams are the qgemm.Linear of a GEMM step: exec's
// GEMMStep.Linear, its arrays the weights' fields.
func (pl *plan) linearParams(s *exec.GEMMStep) jen.Dict {
	l := &s.Linear
	d := jen.Dict{
		jen.Id("B"):     jen.Id("w").Dot(pl.packedWeight(s.Weight, &l.B).Field),
		jen.Id("Scale"): pl.f32Field(s.Weight+".scale", l.Scale),
	}
	if l.AZeroPoint != 0 {
		d[jen.Id("AZeroPoint")] = jen.Lit(l.AZeroPoint)
	}
	if l.Bias != nil {
		d[jen.Id("Bias")] = pl.f32Field(s.BiasName, l.Bias)
	}
	if l.Act != qgemm.ActNone {
		d[jen.Id("Act")] = actCode(l.Act)
	}
	if l.MulResidual {
		d[jen.Id("MulResidual")] = jen.True()
	}
	if l.OutKp > 0 {
		d[jen.Id("OutKp")] = jen.Lit(l.OutKp)
		d[jen.Id("OutInvScale")] = jen.Lit(l.OutInvScale)
		if l.OutZeroPoint != 0 {
			d[jen.Id("OutZeroPoint")] = jen.Lit(l.OutZeroPoint)
		}
	}
	return d
}

// normParams are the nn.LayerNormParams of a LayerNorm step.
func (pl *plan) normParams(s *exec.LayerNormStep) jen.Dict {
	p := &s.Params
	d := jen.Dict{jen.Id("N"): jen.Lit(p.N), jen.Id("Gamma"): pl.f32Field(s.GammaName, p.Gamma), jen.Id("Epsilon"): jen.Lit(p.Epsilon)}
	if p.Beta != nil {
		d[jen.Id("Beta")] = pl.f32Field(s.BetaName, p.Beta)
	}
	return d
}

// embedParams are the nn.Embeddings of an embedding step.
func (pl *plan) embedParams(s *exec.EmbedStep) jen.Dict {
	e := &s.Params
	d := jen.Dict{
		jen.Id("Hidden"): jen.Lit(e.Hidden), jen.Id("Words"): pl.f32Field(s.WordName, e.Words),
	}
	if e.Positions != nil {
		d[jen.Id("Positions")] = pl.f32Field(s.PosName, e.Positions)
	}
	if e.TokenTypes != nil {
		d[jen.Id("TokenTypes")] = pl.f32Field(s.TypeName, e.TokenTypes)
	}
	if e.PadPositions {
		d[jen.Id("PadPositions")], d[jen.Id("PaddingIdx")] = jen.True(), jen.Lit(e.PaddingIdx)
	}
	if e.PositionsFirst {
		d[jen.Id("PositionsFirst")] = jen.True()
	}
	return d
}

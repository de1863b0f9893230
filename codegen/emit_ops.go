package codegen

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/dave/jennifer/jen"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/runtime/ops"
)

const pkgOps = "github.com/sqc-dev/sqc/runtime/ops"

// maxAttrElements bounds a tensor attribute emitted as a literal (e.g.
// ConstantOfShape's value, one element); larger ones are refused.
const maxAttrElements = 4096

// opStepCode is a generic step's statements: the runtime/ops kernel exec
// runs, on the step's operands as *ops.Tensor, its results bound to the
// locals later steps read (or copied into the arena for graph outputs).
func (g *gen) opStepCode(i int, s *exec.OpStep) ([]jen.Code, error) {
	pl := g.pl
	node, err := nodeCode(s.Op)
	if err != nil {
		return nil, fmt.Errorf("codegen: step #%d %s (node %q): %w", i, s.Call(), s.Name, err)
	}
	ins := make([]jen.Code, len(s.Inputs))
	for j, id := range s.Inputs {
		if id == exec.NoSlot {
			ins[j] = jen.Nil()
			continue
		}
		if ins[j], err = pl.tensorCode(id); err != nil {
			return nil, fmt.Errorf("codegen: step #%d %s (node %q): %w", i, s.Call(), s.Name, err)
		}
	}
	res := jen.Id(fmt.Sprintf("o%d", i))
	var after []jen.Code
	for j, id := range s.Outputs {
		if id == exec.NoSlot {
			continue
		}
		sp := pl.slots[id]
		switch {
		case sp.copyOut:
			after = append(after, returnIfErr(jen.Qual(pkgOps, "CopyInto").Call(pl.slotCode(id), res.Clone().Index(jen.Lit(j)))))
		case sp.last > i:
			after = append(after, jen.Id(sp.tensor).Op(":=").Add(res.Clone().Index(jen.Lit(j))))
		}
	}
	call := jen.Parens(jen.Op("&").Add(node)).Dot("Eval").Call(
		jen.Index().Op("*").Qual(pkgOps, "Tensor").Values(ins...),
		jen.Qual(pkgOps, "Options").Values(jen.Dict{jen.Id("Threads"): jen.Id("m").Dot("pool").Dot("Workers").Call()}))
	fail := jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(fmt.Sprintf("step #%d %s (node %q): %%w", i, s.Call(), s.Name)), jen.Err()))
	if len(after) == 0 { // no result is read: nothing to bind
		return []jen.Code{jen.If(jen.List(jen.Id("_"), jen.Err()).Op(":=").Add(call), jen.Err().Op("!=").Nil()).Block(fail)}, nil
	}
	code := []jen.Code{
		jen.List(res.Clone(), jen.Err()).Op(":=").Add(call),
		jen.If(jen.Err().Op("!=").Nil()).Block(fail),
	}
	return append(code, after...), nil
}

// nodeCode is the ops.Node literal of a generic op.
func nodeCode(n *ops.Node) (*jen.Statement, error) {
	d := jen.Dict{jen.Id("Op"): jen.Lit(n.Op)}
	if n.Opset != 0 {
		d[jen.Id("Opset")] = jen.Lit(n.Opset)
	}
	if len(n.Attrs) > 0 {
		attrs := jen.Dict{}
		for _, name := range slices.Sorted(maps.Keys(n.Attrs)) { // the first bad one fails
			a, err := attrCode(n.Attrs[name])
			if err != nil {
				return nil, fmt.Errorf("attribute %q: %w", name, err)
			}
			attrs[jen.Lit(name)] = a
		}
		d[jen.Id("Attrs")] = jen.Qual(pkgOps, "Attrs").Values(attrs)
	}
	return jen.Qual(pkgOps, "Node").Values(d), nil
}

// attrCode is an attribute's composite literal (the type elided, inside
// an ops.Attrs literal).
func attrCode(a ops.Attr) (*jen.Statement, error) {
	var field string // the Attr field set; its Kind is ops.Attr<field>
	var v jen.Code
	switch a.Kind {
	case ops.AttrInt:
		field, v = "Int", jen.Lit(a.Int)
	case ops.AttrFloat:
		field, v = "Float", floatLit(a.Float)
	case ops.AttrString:
		field, v = "String", jen.Lit(a.String)
	case ops.AttrInts:
		field, v = "Ints", int64sLit(a.Ints)
	case ops.AttrFloats:
		field, v = "Floats", jen.Index().Float32().Values(lits(a.Floats, func(v float32) jen.Code { return floatLit(v) })...)
	case ops.AttrStrings:
		field, v = "Strings", jen.Index().String().Values(lits(a.Strings, func(v string) jen.Code { return jen.Lit(v) })...)
	case ops.AttrTensor:
		t, err := tensorLit(a.Tensor)
		if err != nil {
			return nil, err
		}
		field, v = "Tensor", t
	default:
		return nil, fmt.Errorf("%w: attribute kind %v", compiler.ErrUnsupportedOp, a.Kind)
	}
	return jen.Values(jen.Dict{jen.Id("Kind"): jen.Qual(pkgOps, "Attr"+field), jen.Id(field): v}), nil
}

// floatLit is a float32 literal that keeps its exact bits (NaN and the
// infinities through math).
func floatLit(v float32) *jen.Statement {
	switch {
	case math.IsNaN(float64(v)):
		return jen.Qual("math", "Float32frombits").Call(jen.Lit(math.Float32bits(v)))
	case math.IsInf(float64(v), 0):
		return jen.Float32().Call(jen.Qual("math", "Inf").Call(jen.Lit(int(math.Copysign(1, float64(v))))))
	}
	return jen.Lit(v)
}

func int64sLit(v []int64) *jen.Statement {
	return jen.Index().Int64().Values(lits(v, func(x int64) jen.Code { return jen.Lit(x) })...)
}

// lits is the code lit makes of each element of v (mostly a literal).
func lits[T any](v []T, lit func(T) jen.Code) []jen.Code {
	out := make([]jen.Code, len(v))
	for i, x := range v {
		out[i] = lit(x)
	}
	return out
}

// tensorLit is a small constant tensor written out in full.
func tensorLit(t *compiler.Tensor) (*jen.Statement, error) {
	if t == nil || t.Check() != nil || t.Len() > maxAttrElements {
		return nil, fmt.Errorf("%w: tensor attribute must be a valid tensor of at most %d elements", compiler.ErrUnsupportedOp, maxAttrElements)
	}
	d := jen.Dict{jen.Id("DType"): dtypeCode(t.DType), jen.Id("Shape"): int64sLit(t.Shape)}
	lit := func(v any) jen.Code { return jen.Lit(v) }
	var field string
	var elem *jen.Statement
	var vals []jen.Code
	switch t.DType {
	case compiler.Float32:
		field, elem, vals = "F32", jen.Float32(), lits(t.F32, func(v float32) jen.Code { return floatLit(v) })
	case compiler.Float64:
		field, elem, vals = "F64", jen.Float64(), lits(t.F64, func(v float64) jen.Code { return lit(v) })
	case compiler.Int64:
		field, elem, vals = "I64", jen.Int64(), lits(t.I64, func(v int64) jen.Code { return lit(v) })
	case compiler.Int32:
		field, elem, vals = "I32", jen.Int32(), lits(t.I32, func(v int32) jen.Code { return lit(v) })
	case compiler.Int8:
		field, elem, vals = "I8", jen.Int8(), lits(t.I8, func(v int8) jen.Code { return lit(v) })
	case compiler.Uint8:
		field, elem, vals = "U8", jen.Uint8(), lits(t.U8, func(v uint8) jen.Code { return lit(v) })
	case compiler.Bool:
		field, elem, vals = "Bool", jen.Bool(), lits(t.Bool, func(v bool) jen.Code { return lit(v) })
	default:
		return nil, fmt.Errorf("%w: tensor attribute of dtype %s", compiler.ErrUnsupportedOp, t.DType)
	}
	d[jen.Id(field)] = jen.Index().Add(elem).Values(vals...)
	return jen.Op("&").Qual(pkgOps, "Tensor").Values(d), nil
}

func dtypeCode(dt compiler.DType) *jen.Statement {
	name := map[compiler.DType]string{
		compiler.Float32: "Float32", compiler.Float64: "Float64", compiler.Int64: "Int64", compiler.Int32: "Int32",
		compiler.Int8: "Int8", compiler.Uint8: "Uint8", compiler.Bool: "Bool",
	}[dt]
	return jen.Qual(pkgOps, name)
}

// dataField is the Tensor field holding a dtype's elements.
func dataField(dt compiler.DType) (string, bool) {
	f, ok := map[compiler.DType]string{
		compiler.Float32: "F32", compiler.Int64: "I64", compiler.Int32: "I32", compiler.Int8: "I8", compiler.Uint8: "U8",
	}[dt]
	return f, ok
}

// shapeCode is a slot's shape as an []int64 expression of the run-time
// batch and seq, or an error when a dimension is neither.
func (pl *plan) shapeCode(name string, shape compiler.Shape) (*jen.Statement, error) {
	if shape == nil {
		return nil, fmt.Errorf("%w: value %q has no inferred shape", compiler.ErrUnsupportedOp, name)
	}
	dims := make([]jen.Code, len(shape))
	for i, d := range shape {
		switch {
		case d.Param != "" && d.Param == pl.batch:
			dims[i] = jen.Int64().Call(jen.Id("batch"))
		case d.Param != "" && d.Param == pl.seq:
			dims[i] = jen.Int64().Call(jen.Id("seq"))
		case d.Param == "rows" && i == 0: // a packed batch's tokens (tensorCode)
			dims[i] = jen.Int64().Call(jen.Id("rows"))
		case d.Known():
			dims[i] = jen.Lit(d.Size)
		default:
			return nil, fmt.Errorf("%w: value %q has shape %s; only the batch and sequence dimensions may vary", compiler.ErrUnsupportedOp, name, shape)
		}
	}
	return jen.Index().Int64().Values(dims...), nil
}

// tensorCode is a slot as an *ops.Tensor operand of a generic op.
func (pl *plan) tensorCode(id exec.SlotID) (*jen.Statement, error) {
	sp := pl.slots[id]
	if sp.home == homeTensor {
		return jen.Id(sp.tensor), nil
	}
	field, ok := dataField(sp.dtype)
	if !ok {
		return nil, fmt.Errorf("%w: value %q is %s", compiler.ErrUnsupportedOp, sp.name, sp.dtype)
	}
	var shape, data *jen.Statement
	var err error
	switch sp.home {
	case homeConst: // i64
		shape, data = int64sLit(pl.prog.Slots()[id].Const.Shape), int64sLit(sp.consts)
	case homeWeight:
		shape, data = int64sLit(pl.prog.Slots()[id].Const.Shape), jen.Id("m").Dot("w").Dot(sp.weight.Field)
	case homeArena, homeInput:
		if shape, err = pl.shapeCode(sp.name, sp.shape); err != nil {
			return nil, err
		}
		if pl.prog.TokenWise(id) && len(sp.shape) >= 2 {
			// A packed batch holds it as [rows, ...] (compiler/exec
			// packed.go; the generic steps that read it act on trailing
			// axes only, which name the same dimensions in either layout).
			packed, err := pl.shapeCode(sp.name, append(compiler.Shape{{Param: "rows"}}, sp.shape[2:]...))
			if err != nil {
				return nil, err
			}
			shape = jen.Func().Params().Index().Int64().Block(
				jen.If(jen.Id("offsets").Op("!=").Nil()).Block(jen.Return(packed)),
				jen.Return(shape),
			).Call()
		}
		data = pl.slotCode(id)
	default:
		return nil, fmt.Errorf("%w: value %q has no place in the generated package", compiler.ErrUnsupportedOp, sp.name)
	}
	return jen.Op("&").Qual(pkgOps, "Tensor").Values(jen.Dict{
		jen.Id("DType"): dtypeCode(sp.dtype), jen.Id("Shape"): shape, jen.Id(field): data,
	}), nil
}

package compiler

import (
	"errors"
	"fmt"
)

// InferShapes fills g.Values with the dtype and shape of every node output,
// using the op table's rules. Symbolic dims ("batch", "sequence") flow from
// the graph inputs; dims that cannot be determined are "?" (Size -1), and a
// value whose rank is unknown gets a nil Shape.
//
// Small integer tensors (at most 64 elements) are evaluated along the way,
// with symbolic elements, so the Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape chains that torch.onnx.export emits resolve to shapes such as
// [batch, sequence, 4, 64].
//
// Existing Values entries (a frontend's value_info, or an earlier run) are
// treated as declarations: an inferred dim fills a "?" there, a declared
// size refines an inferred symbol or "?", and a contradiction is an error.
// A pass that changes shapes should delete the stale entries first. Graph
// outputs are refined the same way. All problems are returned joined; nodes
// after a failing one are still inferred, with unknown inputs.
func (g *Graph) InferShapes() error {
	src := g.Meta["source"] // the model file, named in every error
	order, cycle, ok := g.topoOrder()
	if !ok {
		return BadInput(src, "graph", g.cycleError(cycle))
	}
	if g.Values == nil {
		g.Values = map[string]*Value{}
	}
	known := map[string]InferInput{}
	for name, t := range g.Initializers {
		if t == nil {
			continue
		}
		x := InferInput{Present: true, DType: t.DType, Shape: StaticShape(t.Shape...), Const: t}
		x.Sym = symsOfTensor(t)
		known[name] = x
	}
	// A graph input overrides an initializer of the same name (which is
	// then only its default), so it is not a constant.
	for _, v := range g.Inputs {
		known[v.Name] = InferInput{Present: true, DType: v.DType, Shape: v.Shape.Clone()}
	}
	var errs []error
	for _, i := range order {
		n := g.Nodes[i]
		label := nodeLabel(i, n)
		ins := make([]InferInput, len(n.Inputs))
		for k, name := range n.Inputs {
			if name == "" {
				continue
			}
			x, ok := known[name]
			if !ok {
				// Undefined input: Verify reports it; infer what we can.
				x = InferInput{Present: true}
			}
			ins[k] = x
		}
		var res []Inferred
		if op, ok := LookupOp(n.Op); !ok {
			errs = append(errs, BadInput(src, label, fmt.Errorf("%w: %q is not in the op table", ErrUnsupportedOp, n.Op)))
		} else if r, err := op.InferShapes(n, g.Opset, ins); err != nil {
			errs = append(errs, BadInput(src, label, err))
			// Keep what the dtype rule alone can tell.
			dts := make([]DType, len(ins))
			for k, x := range ins {
				dts[k] = x.DType
			}
			if out, err := op.InferDTypes(n, dts); err == nil {
				for _, dt := range out {
					res = append(res, Inferred{DType: dt})
				}
			}
		} else {
			res = r
		}
		for k, o := range n.Outputs {
			if o == "" {
				continue
			}
			var r Inferred
			if k < len(res) {
				r = res[k]
			}
			x := InferInput{Present: true, DType: r.DType, Shape: r.Shape, Const: r.Const, Sym: r.Sym}
			completeContents(&x)
			if decl := g.Values[o]; decl != nil {
				dt, shape, err := mergeValue(x.DType, x.Shape, decl.DType, decl.Shape)
				if err != nil {
					errs = append(errs, BadInput(src, label, fmt.Errorf("output %q: %w", o, err)))
				}
				x.DType, x.Shape = dt, shape
			}
			known[o] = x
			g.Values[o] = &Value{Name: o, DType: x.DType, Shape: x.Shape.Clone()}
		}
	}
	for _, out := range g.Outputs {
		x, ok := known[out.Name]
		if !ok {
			continue // Verify reports unproduced outputs
		}
		dt, shape, err := mergeValue(x.DType, x.Shape, out.DType, out.Shape)
		if err != nil {
			errs = append(errs, BadInput(src, fmt.Sprintf("output %q", out.Name), err))
			continue
		}
		out.DType, out.Shape = dt, shape
	}
	return errors.Join(errs...)
}

// symsOfTensor returns a small integral tensor's elements as SymInts.
func symsOfTensor(t *Tensor) []SymInt {
	if !isIntegral(t.DType) || t.Len() > maxSymElements || t.Check() != nil {
		return nil
	}
	s := make([]SymInt, t.Len())
	for i := range s {
		s[i] = SymInt{Val: tensorInt(t, i)}
	}
	return s
}

// completeContents derives Sym from a small integral Const and, when every
// element is a known constant, a Const from Sym, so that later rules can
// use either.
func completeContents(x *InferInput) {
	if x.Const != nil && x.Sym == nil {
		x.Sym = symsOfTensor(x.Const)
	}
	if x.Const != nil || x.Sym == nil || !isIntegral(x.DType) {
		return
	}
	sizes, ok := x.Shape.Static()
	if !ok || NumElements(sizes) != int64(len(x.Sym)) {
		x.Sym = nil // inconsistent contents are worse than none
		return
	}
	t := NewTensor(x.DType, sizes...)
	for i, s := range x.Sym {
		if !s.IsConst() {
			return
		}
		switch x.DType {
		case Int64:
			t.I64[i] = s.Val
		case Int32:
			t.I32[i] = int32(s.Val)
		case Int8:
			t.I8[i] = int8(s.Val)
		case Uint8:
			t.U8[i] = uint8(s.Val)
		case Bool:
			t.Bool[i] = s.Val != 0
		}
	}
	x.Const = t
}

// mergeValue combines an inferred dtype and shape with a declared one.
func mergeValue(dt DType, s Shape, declDT DType, decl Shape) (DType, Shape, error) {
	switch {
	case dt == Undefined:
		dt = declDT
	case declDT != Undefined && declDT != dt:
		return dt, s, fmt.Errorf("%w: declared %s, inferred %s", ErrDTypeMismatch, declDT, dt)
	}
	switch {
	case decl == nil:
		return dt, s.Clone(), nil
	case s == nil:
		return dt, decl.Clone(), nil
	case len(s) != len(decl):
		return dt, s, fmt.Errorf("%w: declared %s, inferred %s", ErrShapeMismatch, decl, s)
	}
	out := make(Shape, len(s))
	for i := range s {
		a, b := s[i], decl[i]
		switch {
		case a.Known() && b.Known() && a.Size != b.Size:
			return dt, s, fmt.Errorf("%w: declared %s, inferred %s", ErrShapeMismatch, decl, s)
		case a.Known():
			out[i] = a
		case b.Known():
			out[i] = b
		case a.Param != "":
			out[i] = a
		default:
			out[i] = b
		}
	}
	return dt, out, nil
}

package compiler

import (
	"fmt"
	"slices"
)

// Building blocks for the op table's shape rules and constant folding of
// small integer tensors (the Shape -> Gather -> Concat -> Reshape chains
// that torch.onnx.export emits).

// maxSymElements bounds the integer tensors whose contents inference
// tracks; shape vectors have at most a handful of elements.
const maxSymElements = 64

// dtype sets used by the rules.
func floatTypes() []DType   { return []DType{Float32, Float64} }
func indexTypes() []DType   { return []DType{Int32, Int64} }
func numericTypes() []DType { return []DType{Float32, Float64, Int32, Int64, Int8, Uint8} }
func signedTypes() []DType  { return []DType{Float32, Float64, Int32, Int64, Int8} }
func allTypes() []DType {
	return []DType{Float32, Float64, Int64, Int32, Int8, Uint8, Bool}
}

// isIntegral reports whether inference tracks contents of this dtype.
func isIntegral(dt DType) bool {
	return dt == Int64 || dt == Int32 || dt == Int8 || dt == Uint8 || dt == Bool
}

func (a *InferArgs) in(i int) InferInput {
	if i < len(a.In) {
		return a.In[i]
	}
	return InferInput{}
}

func (a *InferArgs) present(i int) bool { return a.in(i).Present }

// ints returns the elements of input i when every one is a known constant.
func (a *InferArgs) ints(i int) ([]int64, bool) {
	return constInts(a.in(i))
}

func constInts(x InferInput) ([]int64, bool) {
	if !x.Present {
		return nil, false
	}
	if x.Sym != nil {
		out := make([]int64, len(x.Sym))
		for i, s := range x.Sym {
			if !s.IsConst() {
				return nil, false
			}
			out[i] = s.Val
		}
		return out, true
	}
	if t := x.Const; t != nil && t.Len() <= maxSymElements {
		switch t.DType {
		case Int64:
			return append([]int64(nil), t.I64...), true
		case Int32:
			out := make([]int64, len(t.I32))
			for i, v := range t.I32 {
				out[i] = int64(v)
			}
			return out, true
		}
	}
	return nil, false
}

// syms returns input i's elements, possibly symbolic, when tracked.
func (a *InferArgs) syms(i int) ([]SymInt, bool) {
	x := a.in(i)
	if !x.Present {
		return nil, false
	}
	if x.Sym != nil {
		return x.Sym, true
	}
	if v, ok := constInts(x); ok {
		out := make([]SymInt, len(v))
		for i, e := range v {
			out[i] = SymInt{Val: e}
		}
		return out, true
	}
	return nil, false
}

// one wraps a single result.
func one(shape Shape) []Inferred { return []Inferred{{Shape: shape}} }

// sameShapeRule: output 0 has input 0's shape (and contents, when the op
// leaves integers unchanged, as Identity does).
func sameShapeRule(a *InferArgs) ([]Inferred, error) {
	return one(a.in(0).Shape.Clone()), nil
}

// axesArg reads the axes of Unsqueeze/Squeeze/Reduce*: from the "axes"
// attribute (older opsets) or from input 1. ok is false when they are given
// but not known; present is false when neither form is used.
func (a *InferArgs) axesArg() (axes []int64, present, ok bool) {
	if v, has := a.Node.AttrInts("axes"); has {
		return v, true, true
	}
	if a.present(1) {
		v, known := a.ints(1)
		return v, true, known
	}
	return nil, false, true
}

// foldElementwise computes the broadcast result of f over small integer
// inputs whose contents and static shapes are known.
func foldElementwise(in []InferInput, out Shape, f func(xs []SymInt) SymInt) []SymInt {
	outSizes, ok := out.Static()
	if !ok || NumElements(outSizes) > maxSymElements {
		return nil
	}
	type src struct {
		sym     []SymInt
		strides []int64 // in output coordinates; 0 on broadcast axes
	}
	srcs := make([]src, len(in))
	for k, x := range in {
		sizes, ok := x.Shape.Static()
		if !ok || x.Sym == nil || int64(len(x.Sym)) != NumElements(sizes) {
			return nil
		}
		st := make([]int64, len(outSizes))
		stride := int64(1)
		for i := len(sizes) - 1; i >= 0; i-- {
			j := len(outSizes) - len(sizes) + i
			if sizes[i] != 1 {
				st[j] = stride
			}
			stride *= sizes[i]
		}
		srcs[k] = src{x.Sym, st}
	}
	n := NumElements(outSizes)
	res := make([]SymInt, n)
	idx := make([]int64, len(outSizes))
	args := make([]SymInt, len(in))
	for e := range n {
		for k, s := range srcs {
			off := int64(0)
			for i, v := range idx {
				off += v * s.strides[i]
			}
			args[k] = s.sym[off]
		}
		res[e] = f(args)
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < outSizes[i] {
				break
			}
			idx[i] = 0
		}
	}
	return res
}

// broadcastRule is the shape rule of elementwise ops; fold, when set,
// computes integer contents.
func broadcastRule(fold func(xs []SymInt) SymInt) ShapeFunc {
	return func(a *InferArgs) ([]Inferred, error) {
		shapes := make([]Shape, len(a.In))
		for i, x := range a.In {
			shapes[i] = x.Shape
		}
		s, err := broadcastShapes(shapes...)
		if err != nil {
			return nil, err
		}
		r := Inferred{Shape: s}
		if fold != nil {
			r.Sym = foldElementwise(a.In, s, fold)
		}
		return []Inferred{r}, nil
	}
}

// Integer folds. Each returns unknown unless the result is certain.
func foldAdd(x []SymInt) SymInt {
	a, b := x[0], x[1]
	switch {
	case a.IsConst() && b.IsConst():
		return SymInt{Val: a.Val + b.Val}
	case a.IsConst() && a.Val == 0:
		return b
	case b.IsConst() && b.Val == 0:
		return a
	}
	return symUnknown()
}

func foldSub(x []SymInt) SymInt {
	a, b := x[0], x[1]
	switch {
	case a.IsConst() && b.IsConst():
		return SymInt{Val: a.Val - b.Val}
	case b.IsConst() && b.Val == 0:
		return a
	case a.Param != "" && a.Param == b.Param:
		return SymInt{}
	}
	return symUnknown()
}

func foldMul(x []SymInt) SymInt {
	a, b := x[0], x[1]
	switch {
	case a.IsConst() && b.IsConst():
		return SymInt{Val: a.Val * b.Val}
	case a.IsConst() && a.Val == 1:
		return b
	case b.IsConst() && b.Val == 1:
		return a
	case (a.IsConst() && a.Val == 0) || (b.IsConst() && b.Val == 0):
		return SymInt{}
	case a.Param != "" && b.IsConst():
		return scaledSym(a, b.Val)
	case b.Param != "" && a.IsConst():
		return scaledSym(b, a.Val)
	}
	return symUnknown()
}

// foldDiv truncates toward zero, as ONNX integer Div does.
func foldDiv(x []SymInt) SymInt {
	a, b := x[0], x[1]
	switch {
	case a.IsConst() && b.IsConst() && b.Val != 0:
		return SymInt{Val: a.Val / b.Val}
	case b.IsConst() && b.Val == 1:
		return a
	case a.Param != "" && a.Param == b.Param:
		return SymInt{Val: 1}
	case a.Param != "" && b.IsConst() && b.Val > 0:
		// k·base / d is exact only where d divides k: a dim is never
		// negative, so truncation toward zero is not at issue.
		if c, base := SplitScaledParam(a.Param); c%b.Val == 0 {
			return SymInt{Param: ScaledParam(c/b.Val, base)}
		}
	}
	return symUnknown()
}

func boolSym(v bool) SymInt {
	if v {
		return SymInt{Val: 1}
	}
	return SymInt{}
}

// foldEqual also knows that a symbolic dim (never negative) differs from a
// negative constant, which resolves torch's Where(Equal(shape, -1), ...).
func foldEqual(x []SymInt) SymInt {
	a, b := x[0], x[1]
	switch {
	case a.IsConst() && b.IsConst():
		return boolSym(a.Val == b.Val)
	case a.Param != "" && a.Param == b.Param:
		return boolSym(true)
	case a.Param != "" && b.IsConst() && b.Val < 0, b.Param != "" && a.IsConst() && a.Val < 0:
		return boolSym(false)
	}
	return symUnknown()
}

func foldLess(x []SymInt) SymInt {
	a, b := x[0], x[1]
	switch {
	case a.IsConst() && b.IsConst():
		return boolSym(a.Val < b.Val)
	case a.Param != "" && a.Param == b.Param:
		return boolSym(false)
	case a.Param != "" && b.IsConst() && b.Val <= 0:
		return boolSym(false)
	case b.Param != "" && a.IsConst() && a.Val < 0:
		return boolSym(true)
	}
	return symUnknown()
}

func foldGreater(x []SymInt) SymInt { return foldLess([]SymInt{x[1], x[0]}) }

// foldGreaterOrEqual is Not(Less): certain where Less is.
func foldGreaterOrEqual(x []SymInt) SymInt { return foldNot([]SymInt{foldLess(x)}) }

func foldLessOrEqual(x []SymInt) SymInt { return foldGreaterOrEqual([]SymInt{x[1], x[0]}) }

// foldAnd and foldOr are certain when one side decides or both are known.
func foldAnd(x []SymInt) SymInt {
	a, b := x[0], x[1]
	switch {
	case a.IsConst() && a.Val == 0, b.IsConst() && b.Val == 0:
		return boolSym(false)
	case a.IsConst() && b.IsConst():
		return boolSym(true)
	}
	return symUnknown()
}

func foldOr(x []SymInt) SymInt {
	a, b := x[0], x[1]
	switch {
	case a.IsConst() && a.Val != 0, b.IsConst() && b.Val != 0:
		return boolSym(true)
	case a.IsConst() && b.IsConst():
		return boolSym(false)
	}
	return symUnknown()
}

// foldMax folds the maximum of known values, foldMin the minimum.
func foldMax(x []SymInt) SymInt { return foldExtremum(x, func(a, b int64) int64 { return max(a, b) }) }
func foldMin(x []SymInt) SymInt { return foldExtremum(x, func(a, b int64) int64 { return min(a, b) }) }

func foldExtremum(x []SymInt, pick func(a, b int64) int64) SymInt {
	m := x[0]
	for _, v := range x[1:] {
		if !m.IsConst() || !v.IsConst() {
			return symUnknown()
		}
		m.Val = pick(m.Val, v.Val)
	}
	if !m.IsConst() {
		return symUnknown()
	}
	return m
}

func foldNot(x []SymInt) SymInt {
	if x[0].IsConst() {
		return boolSym(x[0].Val == 0)
	}
	return symUnknown()
}

// foldAbs folds |x| where no dtype's most negative value (which Abs
// leaves as it is) can be involved: x > -128.
func foldAbs(x []SymInt) SymInt {
	if x[0].IsConst() && x[0].Val > -128 {
		return SymInt{Val: max(x[0].Val, -x[0].Val)}
	}
	return symUnknown()
}

func foldNeg(x []SymInt) SymInt {
	if x[0].IsConst() {
		return SymInt{Val: -x[0].Val}
	}
	return symUnknown()
}

func foldWhere(x []SymInt) SymInt {
	c, a, b := x[0], x[1], x[2]
	switch {
	case c.IsConst() && c.Val != 0:
		return a
	case c.IsConst():
		return b
	case a == b:
		return a
	}
	return symUnknown()
}

// unaryFold folds a one-input elementwise op.
func unaryFold(f func(xs []SymInt) SymInt) ShapeFunc {
	return func(a *InferArgs) ([]Inferred, error) {
		s := a.in(0).Shape.Clone()
		return []Inferred{{Shape: s, Sym: foldElementwise(a.In[:1], s, f)}}, nil
	}
}

// passSym keeps input 0's integer contents when the output has the same
// elements in the same order (Identity, Reshape, Unsqueeze, Squeeze).
func passSym(a *InferArgs, out Shape) []SymInt {
	x := a.in(0)
	if x.Sym == nil {
		return nil
	}
	sizes, ok := out.Static()
	if !ok || NumElements(sizes) != int64(len(x.Sym)) {
		return nil
	}
	return slices.Clone(x.Sym)
}

// symTensorShape is the static shape of a rank-0 or rank-1 tensor of n
// elements.
func vectorShape(n int) Shape { return StaticShape(int64(n)) }

// requireRank returns an error unless s has the given rank (unknown ranks
// pass).
func requireRank(what string, s Shape, ranks ...int) error {
	if s == nil || slices.Contains(ranks, len(s)) {
		return nil
	}
	return fmt.Errorf("%w: %s has rank %d, want %v", ErrShapeMismatch, what, len(s), ranks)
}

package compiler

import (
	"fmt"
	"math"
	"slices"
)

// Shape rules and attribute checks of individual ONNX ops.

// sliceEndAll is the smallest "end" torch uses to mean "to the end"
// (INT64_MAX in practice; INT32_MAX-sized values also occur).
const sliceEndAll = math.MaxInt32

func castTarget(n *Node) (DType, error) {
	code := n.AttrInt("to", 0)
	dt, ok := DTypeFromONNX(code)
	if !ok {
		return Undefined, fmt.Errorf("%w: Cast to ONNX type %d is not supported", ErrUnsupportedOp, code)
	}
	return dt, nil
}

func castShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0)
	r := Inferred{Shape: x.Shape.Clone()}
	to, err := castTarget(a.Node)
	if err != nil || x.Sym == nil || !isIntegral(x.DType) {
		return []Inferred{r}, nil
	}
	switch to {
	case Int64, Int32:
		r.Sym = passSym(a, r.Shape)
	case Bool:
		r.Sym = foldElementwise(a.In[:1], r.Shape, func(xs []SymInt) SymInt {
			switch {
			case xs[0].IsConst():
				return boolSym(xs[0].Val != 0)
			}
			return symUnknown()
		})
	}
	return []Inferred{r}, nil
}

func matMulShape(a *InferArgs) ([]Inferred, error) {
	sa, sb := a.in(0).Shape, a.in(1).Shape
	if sa == nil || sb == nil {
		return one(nil), nil
	}
	if len(sa) == 0 || len(sb) == 0 {
		return nil, fmt.Errorf("%w: MatMul of a scalar", ErrShapeMismatch)
	}
	vecA, vecB := len(sa) == 1, len(sb) == 1
	if vecA {
		sa = Shape{{Size: 1}, sa[0]}
	}
	if vecB {
		sb = Shape{sb[0], {Size: 1}}
	}
	ka, kb := sa[len(sa)-1], sb[len(sb)-2]
	if !dimsMatch(ka, kb) {
		return nil, fmt.Errorf("%w: MatMul inner dims differ: %s @ %s", ErrShapeMismatch, a.in(0).Shape, a.in(1).Shape)
	}
	out, err := broadcastShapes(sa[:len(sa)-2], sb[:len(sb)-2])
	if err != nil {
		return nil, err
	}
	if !vecA {
		out = append(out, sa[len(sa)-2])
	}
	if !vecB {
		out = append(out, sb[len(sb)-1])
	}
	return one(out), nil
}

func gemmCheck(n *Node, opset int64) error {
	for _, name := range []string{"transA", "transB"} {
		if v := n.AttrInt(name, 0); v != 0 && v != 1 {
			return fmt.Errorf("attribute %s = %d, want 0 or 1", name, v)
		}
	}
	if opset > 0 && opset < 11 && len(n.Inputs) < 3 {
		return fmt.Errorf("opset %d Gemm requires input C", opset)
	}
	return nil
}

func gemmShape(a *InferArgs) ([]Inferred, error) {
	sa, sb := a.in(0).Shape, a.in(1).Shape
	if err := requireRank("Gemm input A", sa, 2); err != nil {
		return nil, err
	}
	if err := requireRank("Gemm input B", sb, 2); err != nil {
		return nil, err
	}
	if sa == nil || sb == nil {
		return one(Shape{unknownDim(), unknownDim()}), nil
	}
	m, ka := sa[0], sa[1]
	if a.Node.AttrInt("transA", 0) != 0 {
		m, ka = ka, m
	}
	kb, n := sb[0], sb[1]
	if a.Node.AttrInt("transB", 0) != 0 {
		kb, n = n, kb
	}
	if !dimsMatch(ka, kb) {
		return nil, fmt.Errorf("%w: Gemm inner dims differ: %s and %s", ErrShapeMismatch, ka, kb)
	}
	out := Shape{m, n}
	if c := a.in(2); c.Present && c.Shape != nil {
		if len(c.Shape) > 2 {
			return nil, fmt.Errorf("%w: Gemm input C has rank %d", ErrShapeMismatch, len(c.Shape))
		}
		if _, err := broadcastShapes(out, c.Shape); err != nil {
			return nil, err
		}
	}
	return one(out), nil
}

func gatherShape(a *InferArgs) ([]Inferred, error) {
	data, idx := a.in(0), a.in(1)
	if data.Shape == nil || idx.Shape == nil {
		return one(nil), nil
	}
	if len(data.Shape) == 0 {
		return nil, fmt.Errorf("%w: Gather from a scalar", ErrShapeMismatch)
	}
	axis, err := normAxis(a.Node.AttrInt("axis", 0), len(data.Shape))
	if err != nil {
		return nil, err
	}
	out := append(append(append(Shape{}, data.Shape[:axis]...), idx.Shape...), data.Shape[axis+1:]...)
	r := Inferred{Shape: out.Clone()}
	if ix, ok := a.ints(1); ok {
		d := data.Shape[axis]
		for _, v := range ix {
			if d.Known() && (v < -d.Size || v >= d.Size) {
				return nil, fmt.Errorf("%w: Gather index %d out of range for dim %d", ErrShapeMismatch, v, d.Size)
			}
		}
		if data.Sym != nil && len(data.Shape) == 1 && d.Known() && int64(len(data.Sym)) == d.Size {
			r.Sym = make([]SymInt, len(ix))
			for i, v := range ix {
				if v < 0 {
					v += d.Size
				}
				r.Sym[i] = data.Sym[v]
			}
		}
	}
	return []Inferred{r}, nil
}

func reduceShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0).Shape
	keep := a.Node.AttrInt("keepdims", 1) != 0
	axes, present, known := a.axesArg()
	if x == nil {
		return one(nil), nil
	}
	if !known {
		if keep {
			return one(unknownShape(len(x))), nil
		}
		if s, ok := a.in(1).Shape.Static(); ok && len(s) == 1 {
			return one(unknownShape(len(x) - int(s[0]))), nil
		}
		return one(nil), nil
	}
	if !present || len(axes) == 0 {
		if a.Node.AttrInt("noop_with_empty_axes", 0) != 0 {
			return one(x.Clone()), nil
		}
		axes = make([]int64, len(x))
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	reduced := make([]bool, len(x))
	for _, ax := range axes {
		i, err := normAxis(ax, len(x))
		if err != nil {
			return nil, err
		}
		reduced[i] = true
	}
	out := Shape{}
	for i, d := range x {
		switch {
		case !reduced[i]:
			out = append(out, d)
		case keep:
			out = append(out, Dim{Size: 1})
		}
	}
	return one(out), nil
}

func unknownShape(rank int) Shape {
	if rank < 0 {
		return nil
	}
	s := make(Shape, rank)
	for i := range s {
		s[i] = unknownDim()
	}
	return s
}

func layerNormShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0).Shape
	res := make([]Inferred, len(a.Node.Outputs))
	if x == nil {
		return res, nil
	}
	axis, err := normAxis(a.Node.AttrInt("axis", -1), len(x))
	if err != nil {
		return nil, err
	}
	if s := a.in(1).Shape; s != nil {
		if _, err := broadcastShapes(x[axis:], s); err != nil || len(s) > len(x)-axis {
			return nil, fmt.Errorf("%w: LayerNormalization Scale %s does not fit normalized dims %s", ErrShapeMismatch, s, x[axis:])
		}
	}
	res[0].Shape = x.Clone()
	stat := x.Clone()
	for i := axis; i < len(stat); i++ {
		stat[i] = Dim{Size: 1}
	}
	for i := 1; i < len(res); i++ {
		res[i].Shape = stat.Clone()
	}
	return res, nil
}

func softmaxShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0).Shape
	def := int64(-1)
	if a.Opset > 0 && a.Opset < 13 {
		def = 1
	}
	if x != nil {
		if _, err := normAxis(a.Node.AttrInt("axis", def), len(x)); err != nil {
			return nil, err
		}
	}
	return one(x.Clone()), nil
}

func transposeCheck(n *Node, _ int64) error {
	perm, ok := n.AttrInts("perm")
	if !ok {
		return nil
	}
	seen := make([]bool, len(perm))
	for _, p := range perm {
		if p < 0 || p >= int64(len(perm)) || seen[p] {
			return fmt.Errorf("perm %v is not a permutation", perm)
		}
		seen[p] = true
	}
	return nil
}

func transposeShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0).Shape
	if x == nil {
		return one(nil), nil
	}
	perm, ok := a.Node.AttrInts("perm")
	if !ok {
		perm = make([]int64, len(x))
		for i := range perm {
			perm[i] = int64(len(x) - 1 - i)
		}
	}
	if len(perm) != len(x) {
		return nil, fmt.Errorf("%w: perm %v for rank %d", ErrShapeMismatch, perm, len(x))
	}
	out := make(Shape, len(x))
	for i, p := range perm {
		out[i] = x[p]
	}
	r := Inferred{Shape: out}
	if len(x) <= 1 {
		r.Sym = passSym(a, out)
	}
	return []Inferred{r}, nil
}

func reshapeShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0).Shape
	target, ok := a.syms(1)
	if !ok {
		if s, ok := a.in(1).Shape.Static(); ok && len(s) == 1 {
			return one(unknownShape(int(s[0]))), nil
		}
		return one(nil), nil
	}
	allowZero := a.Node.AttrInt("allowzero", 0) != 0
	out := make(Shape, len(target))
	infer := -1
	for i, t := range target {
		switch {
		case t.IsConst() && t.Val == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("%w: Reshape target has more than one -1", ErrShapeMismatch)
			}
			infer = i
		case t.IsConst() && t.Val == 0 && !allowZero:
			if x == nil {
				out[i] = unknownDim()
			} else if i < len(x) {
				out[i] = x[i]
			} else {
				return nil, fmt.Errorf("%w: Reshape copies dim %d of a rank-%d input", ErrShapeMismatch, i, len(x))
			}
		case t.IsConst() && t.Val < -1:
			return nil, fmt.Errorf("%w: Reshape target dim %d", ErrShapeMismatch, t.Val)
		default:
			out[i] = dimFromSym(t)
		}
	}
	if infer >= 0 {
		out[infer] = unknownDim()
		if x != nil {
			rest := slices.Concat(out[:infer], out[infer+1:])
			out[infer] = productOf(x).div(productOf(rest))
		}
	}
	if in, ok := x.Static(); ok {
		if o, ok := out.Static(); ok && NumElements(in) != NumElements(o) {
			return nil, fmt.Errorf("%w: Reshape %s (%d elements) to %s (%d elements)", ErrShapeMismatch, x, NumElements(in), out, NumElements(o))
		}
	}
	return []Inferred{{Shape: out, Sym: passSym(a, out)}}, nil
}

// axesFormCheck enforces, for opset-aware graphs, that axes is an
// attribute before opset since and input 1 from it on.
func axesFormCheck(since int64, required bool) func(n *Node, opset int64) error {
	return func(n *Node, opset int64) error {
		_, hasAttr := n.Attrs["axes"]
		hasInput := len(n.Inputs) > 1 && n.Inputs[1] != ""
		switch {
		case hasAttr && hasInput:
			return fmt.Errorf("axes given both as attribute and as input")
		case opset > 0 && opset < since && len(n.Inputs) > 1:
			return fmt.Errorf("opset %d takes axes as an attribute, not an input (input form from opset %d)", opset, since)
		case opset >= since && hasAttr:
			return fmt.Errorf("opset %d takes axes as input 1, not an attribute (attribute form before opset %d)", opset, since)
		case required && !hasAttr && !hasInput:
			return fmt.Errorf("missing axes")
		}
		if _, ok := n.Attrs["noop_with_empty_axes"]; ok && opset > 0 && opset < since {
			return fmt.Errorf("attribute noop_with_empty_axes needs opset %d", since)
		}
		return nil
	}
}

func unsqueezeShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0).Shape
	axes, _, known := a.axesArg()
	if x == nil {
		return one(nil), nil
	}
	if !known {
		if s, ok := a.in(1).Shape.Static(); ok && len(s) == 1 {
			return one(unknownShape(len(x) + int(s[0]))), nil
		}
		return one(nil), nil
	}
	rank := len(x) + len(axes)
	ones := make([]bool, rank)
	for _, ax := range axes {
		i, err := normAxis(ax, rank)
		if err != nil {
			return nil, err
		}
		if ones[i] {
			return nil, fmt.Errorf("%w: Unsqueeze axis %d repeated", ErrShapeMismatch, ax)
		}
		ones[i] = true
	}
	out := make(Shape, 0, rank)
	j := 0
	for i := range rank {
		if ones[i] {
			out = append(out, Dim{Size: 1})
			continue
		}
		out = append(out, x[j])
		j++
	}
	return []Inferred{{Shape: out, Sym: passSym(a, out)}}, nil
}

func squeezeShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0).Shape
	axes, present, known := a.axesArg()
	if x == nil || !known {
		return one(nil), nil
	}
	drop := make([]bool, len(x))
	if present {
		for _, ax := range axes {
			i, err := normAxis(ax, len(x))
			if err != nil {
				return nil, err
			}
			if x[i].Known() && x[i].Size != 1 {
				return nil, fmt.Errorf("%w: Squeeze axis %d has size %d", ErrShapeMismatch, ax, x[i].Size)
			}
			drop[i] = true
		}
	} else {
		for i, d := range x {
			if !d.Known() && d.Param == "" {
				return one(nil), nil // a "?" dim may or may not be 1
			}
			// Symbolic dims are taken to be other than 1.
			drop[i] = d.Known() && d.Size == 1
		}
	}
	out := Shape{}
	for i, d := range x {
		if !drop[i] {
			out = append(out, d)
		}
	}
	return []Inferred{{Shape: out, Sym: passSym(a, out)}}, nil
}

func concatShape(a *InferArgs) ([]Inferred, error) {
	var ref Shape
	for _, x := range a.In {
		if x.Shape != nil {
			ref = x.Shape
			break
		}
	}
	if ref == nil {
		return one(nil), nil
	}
	axis, err := normAxis(a.Node.AttrInt("axis", 0), len(ref))
	if err != nil {
		return nil, err
	}
	out := ref.Clone()
	var sum int64
	var params []string
	unknown := false
	for k, x := range a.In {
		if x.Shape == nil {
			unknown = true
			continue
		}
		if len(x.Shape) != len(ref) {
			return nil, fmt.Errorf("%w: Concat input %d has rank %d, input 0 rank %d", ErrShapeMismatch, k, len(x.Shape), len(ref))
		}
		for i, d := range x.Shape {
			if i == axis {
				switch {
				case d.Param != "":
					params = append(params, d.Param)
				case d.Size < 0:
					unknown = true
				default:
					sum += d.Size
				}
				continue
			}
			if !dimsMatch(out[i], d) {
				return nil, fmt.Errorf("%w: Concat input %d dim %d is %s, want %s", ErrShapeMismatch, k, i, d, out[i])
			}
			if !out[i].Known() && (d.Known() || out[i].Param == "") {
				out[i] = d
			}
		}
	}
	switch {
	case unknown || len(params) > 1 || (len(params) == 1 && sum != 0):
		out[axis] = unknownDim()
	case len(params) == 1:
		out[axis] = SymDim(params[0])
	default:
		out[axis] = Dim{Size: sum}
	}
	r := Inferred{Shape: out}
	if len(out) == 1 {
		var all []SymInt
		for _, x := range a.In {
			if x.Sym == nil {
				all = nil
				break
			}
			all = append(all, x.Sym...)
		}
		if all != nil && len(all) <= maxSymElements {
			r.Sym = all
		}
	}
	return []Inferred{r}, nil
}

func sliceCheck(n *Node, opset int64) error {
	_, hasStarts := n.Attrs["starts"]
	_, hasEnds := n.Attrs["ends"]
	attrForm := hasStarts || hasEnds
	if _, hasAxes := n.Attrs["axes"]; hasAxes {
		attrForm = true
	}
	switch {
	case attrForm && (opset >= 10 || len(n.Inputs) > 1):
		return fmt.Errorf("opset %d Slice takes starts/ends/axes as inputs, not attributes (attribute form before opset 10)", opset)
	case attrForm && (!hasStarts || !hasEnds):
		return fmt.Errorf("Slice needs both starts and ends attributes")
	case !attrForm && opset > 0 && opset < 10:
		return fmt.Errorf("opset %d Slice takes attributes starts and ends (input form from opset 10)", opset)
	case !attrForm && len(n.Inputs) < 3:
		return fmt.Errorf("Slice takes inputs data, starts, ends, optional axes and steps; has %d inputs", len(n.Inputs))
	}
	return nil
}

func sliceShape(a *InferArgs) ([]Inferred, error) {
	data := a.in(0)
	x := data.Shape
	if x == nil {
		return one(nil), nil
	}
	var starts, ends []SymInt
	var axes, steps []int64
	okS, okE, okA, okSt := true, true, true, true
	if v, has := a.Node.AttrInts("starts"); has {
		starts = symsOfInts(v)
		e, _ := a.Node.AttrInts("ends")
		ends = symsOfInts(e)
		axes, _ = a.Node.AttrInts("axes")
	} else {
		starts, okS = a.syms(1)
		ends, okE = a.syms(2)
		if a.present(3) {
			axes, okA = a.ints(3)
		}
		if a.present(4) {
			steps, okSt = a.ints(4)
		}
	}
	if !okA {
		return one(unknownShape(len(x))), nil
	}
	if axes == nil {
		n := len(starts)
		if !okS {
			if s, ok := a.in(1).Shape.Static(); ok && len(s) == 1 {
				n = int(s[0])
			} else {
				return one(unknownShape(len(x))), nil
			}
		}
		axes = make([]int64, n)
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	out := x.Clone()
	norm := make([]int, len(axes))
	for k, ax := range axes {
		i, err := normAxis(ax, len(x))
		if err != nil {
			return nil, err
		}
		norm[k] = i
		out[i] = unknownDim()
	}
	if !okS || !okE || !okSt {
		return one(out), nil
	}
	if steps == nil {
		steps = slices.Repeat([]int64{1}, len(axes))
	}
	if len(starts) != len(axes) || len(ends) != len(axes) || len(steps) != len(axes) {
		return nil, fmt.Errorf("%w: Slice has %d starts, %d ends, %d axes, %d steps", ErrShapeMismatch, len(starts), len(ends), len(axes), len(steps))
	}
	type span struct{ start, step, n int64 }
	spans := map[int]span{}
	for k, i := range norm {
		if steps[k] == 0 {
			return nil, fmt.Errorf("%w: Slice step 0", ErrShapeMismatch)
		}
		out[i] = sliceDim(x[i], starts[k], ends[k], steps[k])
		if x[i].Known() && starts[k].IsConst() && out[i].Known() {
			spans[i] = span{clampStart(starts[k].Val, x[i].Size, steps[k]), steps[k], out[i].Size}
		}
	}
	r := Inferred{Shape: out}
	if data.Sym != nil && len(x) == 1 && x[0].Known() && int64(len(data.Sym)) == x[0].Size {
		if sp, ok := spans[0]; ok {
			r.Sym = make([]SymInt, sp.n)
			for j := range sp.n {
				r.Sym[j] = data.Sym[sp.start+j*sp.step]
			}
		}
	}
	return []Inferred{r}, nil
}

func symsOfInts(v []int64) []SymInt {
	out := make([]SymInt, len(v))
	for i, e := range v {
		out[i] = SymInt{Val: e}
	}
	return out
}

// clampStart applies ONNX Slice's start adjustment for a dim of size d.
func clampStart(s, d, step int64) int64 {
	if s < 0 {
		s += d
	}
	if step > 0 {
		return min(max(s, 0), d)
	}
	return min(max(s, 0), d-1)
}

func clampEnd(e, d, step int64) int64 {
	if e < 0 {
		e += d
	}
	if step > 0 {
		return min(max(e, 0), d)
	}
	return min(max(e, -1), d-1)
}

// sliceDim is the size of one sliced axis. Symbolic ends are taken to lie
// within the dim (torch slices the position-ids buffer [0:sequence]).
func sliceDim(d Dim, s, e SymInt, step int64) Dim {
	if d.Known() && s.IsConst() && e.IsConst() {
		start, end := clampStart(s.Val, d.Size, step), clampEnd(e.Val, d.Size, step)
		if step > 0 {
			return Dim{Size: max(0, (end-start+step-1)/step)}
		}
		return Dim{Size: max(0, (start-end-step-1)/-step)}
	}
	if step != 1 || !s.IsConst() || s.Val != 0 {
		return unknownDim()
	}
	switch {
	case e.IsConst() && e.Val >= sliceEndAll:
		return d
	case e.Param != "":
		return SymDim(e.Param)
	}
	return unknownDim()
}

func shapeOpShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0).Shape
	if x == nil {
		return one(Shape{unknownDim()}), nil
	}
	r := int64(len(x))
	start := clampAxis(a.Node.AttrInt("start", 0), r)
	end := clampAxis(a.Node.AttrInt("end", r), r)
	if end < start {
		end = start
	}
	sym := make([]SymInt, 0, end-start)
	for _, d := range x[start:end] {
		sym = append(sym, symFromDim(d))
	}
	return []Inferred{{Shape: vectorShape(len(sym)), Sym: sym}}, nil
}

// clampAxis handles Shape's start/end: negative counts from the end, then
// clamped to [0, rank].
func clampAxis(v, rank int64) int64 {
	if v < 0 {
		v += rank
	}
	return min(max(v, 0), rank)
}

// constantValue builds the tensor a Constant node produces.
func constantValue(n *Node) (*Tensor, error) {
	for _, name := range []string{"value", "value_float", "value_floats", "value_int", "value_ints"} {
		at, ok := n.Attrs[name]
		if !ok {
			continue
		}
		switch name {
		case "value":
			if at.Tensor == nil {
				return nil, fmt.Errorf("attribute value has no tensor")
			}
			return at.Tensor, nil
		case "value_float":
			return &Tensor{DType: Float32, Shape: []int64{}, F32: []float32{at.Float}}, nil
		case "value_floats":
			return &Tensor{DType: Float32, Shape: []int64{int64(len(at.Floats))}, F32: slices.Clone(at.Floats)}, nil
		case "value_int":
			return &Tensor{DType: Int64, Shape: []int64{}, I64: []int64{at.Int}}, nil
		case "value_ints":
			return &Tensor{DType: Int64, Shape: []int64{int64(len(at.Ints))}, I64: slices.Clone(at.Ints)}, nil
		}
	}
	return nil, fmt.Errorf("Constant has no value attribute")
}

func constantCheck(n *Node, _ int64) error {
	if len(n.Attrs) != 1 {
		return fmt.Errorf("Constant needs exactly one value attribute, has %d attributes", len(n.Attrs))
	}
	_, err := constantValue(n)
	return err
}

func constantDType(n *Node) (DType, error) {
	t, err := constantValue(n)
	if err != nil {
		return Undefined, err
	}
	return t.DType, nil
}

func constantShape(a *InferArgs) ([]Inferred, error) {
	t, err := constantValue(a.Node)
	if err != nil {
		return nil, err
	}
	return []Inferred{{Shape: StaticShape(t.Shape...), Const: t}}, nil
}

func constantOfShapeCheck(n *Node, _ int64) error {
	if at, ok := n.Attrs["value"]; ok && at.Tensor != nil && at.Tensor.Len() != 1 {
		return fmt.Errorf("ConstantOfShape value must have one element, has %d", at.Tensor.Len())
	}
	return nil
}

func constantOfShapeDType(n *Node) (DType, error) {
	if at, ok := n.Attrs["value"]; ok && at.Tensor != nil {
		return at.Tensor.DType, nil
	}
	return Float32, nil
}

func constantOfShapeShape(a *InferArgs) ([]Inferred, error) {
	dims, ok := a.syms(0)
	if !ok {
		if s, ok := a.in(0).Shape.Static(); ok && len(s) == 1 {
			return one(unknownShape(int(s[0]))), nil
		}
		return one(nil), nil
	}
	out := make(Shape, len(dims))
	for i, d := range dims {
		if d.IsConst() && d.Val < 0 {
			return nil, fmt.Errorf("%w: ConstantOfShape dim %d", ErrShapeMismatch, d.Val)
		}
		out[i] = dimFromSym(d)
	}
	r := Inferred{Shape: out}
	if at, ok := a.Node.Attrs["value"]; ok && at.Tensor != nil && isIntegral(at.Tensor.DType) && at.Tensor.Len() == 1 {
		if sizes, ok := out.Static(); ok && NumElements(sizes) <= maxSymElements {
			v := SymInt{Val: tensorInt(at.Tensor, 0)}
			r.Sym = slices.Repeat([]SymInt{v}, int(NumElements(sizes)))
		}
	}
	return []Inferred{r}, nil
}

// tensorInt reads element i of an integral tensor as int64.
func tensorInt(t *Tensor, i int) int64 {
	switch t.DType {
	case Int64:
		return t.I64[i]
	case Int32:
		return int64(t.I32[i])
	case Int8:
		return int64(t.I8[i])
	case Uint8:
		return int64(t.U8[i])
	case Bool:
		if t.Bool[i] {
			return 1
		}
	}
	return 0
}

func expandShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0).Shape
	target, ok := a.syms(1)
	if !ok {
		if s, ok := a.in(1).Shape.Static(); ok && len(s) == 1 && x != nil {
			return one(unknownShape(max(len(x), int(s[0])))), nil
		}
		return one(nil), nil
	}
	ts := make(Shape, len(target))
	for i, t := range target {
		ts[i] = dimFromSym(t)
	}
	out, err := broadcastShapes(x, ts)
	if err != nil {
		return nil, err
	}
	return one(out), nil
}

// tileShape: each dim times its repeat count; a dim of 1 takes the count's
// symbol and a count of 1 keeps the dim, and a known dim times a symbolic
// count is that symbol scaled (ScaledParam): a Tile by [batch, 1, 1] of a
// per-head table [heads, r, d] is [heads·batch, r, d].
func tileShape(a *InferArgs) ([]Inferred, error) {
	x := a.in(0).Shape
	if s, ok := a.in(1).Shape.Static(); ok && x != nil && (len(s) != 1 || s[0] != int64(len(x))) {
		return nil, fmt.Errorf("%w: Tile repeats of shape %v for a rank-%d input", ErrShapeMismatch, s, len(x))
	}
	reps, ok := a.syms(1)
	if x == nil {
		return one(nil), nil
	}
	if !ok || len(reps) != len(x) {
		return one(unknownShape(len(x))), nil
	}
	out := make(Shape, len(x))
	for i, d := range x {
		r := reps[i]
		switch {
		case r.IsConst() && r.Val == 1:
			out[i] = d
		case d.Size == 1:
			out[i] = dimFromSym(r)
		case r.IsConst() && d.Known():
			out[i] = Dim{Size: d.Size * r.Val}
		case r.Param != "" && d.Known():
			out[i] = dimFromSym(scaledSym(r, d.Size))
		default:
			out[i] = unknownDim()
		}
	}
	return one(out), nil
}

func rangeShape(a *InferArgs) ([]Inferred, error) {
	for i := range 3 {
		if err := requireRank(fmt.Sprintf("Range input %d", i), a.in(i).Shape, 0); err != nil {
			return nil, err
		}
	}
	if v, ok := rangeInts(a); ok {
		start, limit, delta := v[0], v[1], v[2]
		if delta == 0 {
			return nil, fmt.Errorf("%w: Range delta 0", ErrShapeMismatch)
		}
		n := max(0, ceilDiv(limit-start, delta))
		r := Inferred{Shape: StaticShape(n)}
		if n <= maxSymElements {
			r.Sym = make([]SymInt, n)
			for i := range n {
				r.Sym[i] = SymInt{Val: start + i*delta}
			}
		}
		return []Inferred{r}, nil
	}
	if v, ok := rangeFloats(a); ok {
		if v[2] == 0 {
			return nil, fmt.Errorf("%w: Range delta 0", ErrShapeMismatch)
		}
		return one(StaticShape(int64(max(0, math.Ceil((v[1]-v[0])/v[2]))))), nil
	}
	s, okS := a.syms(0)
	l, okL := a.syms(1)
	d, okD := a.syms(2)
	if okS && okL && okD && len(s) == 1 && len(l) == 1 && len(d) == 1 &&
		s[0].IsConst() && s[0].Val == 0 && d[0].IsConst() && d[0].Val == 1 && l[0].Param != "" {
		return one(Shape{SymDim(l[0].Param)}), nil
	}
	return one(Shape{unknownDim()}), nil
}

func rangeInts(a *InferArgs) ([3]int64, bool) {
	var v [3]int64
	for i := range 3 {
		x, ok := a.ints(i)
		if !ok || len(x) != 1 {
			return v, false
		}
		v[i] = x[0]
	}
	return v, true
}

func rangeFloats(a *InferArgs) ([3]float64, bool) {
	var v [3]float64
	for i := range 3 {
		t := a.in(i).Const
		switch {
		case t == nil:
			return v, false
		case t.DType == Float32 && len(t.F32) == 1:
			v[i] = float64(t.F32[0])
		case t.DType == Float64 && len(t.F64) == 1:
			v[i] = t.F64[0]
		default:
			return v, false
		}
	}
	return v, true
}

// ceilDiv is ceil(a/b) for b != 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) == (b < 0)) {
		q++
	}
	return q
}

// gatherNDShape: indices[:-1] + data[batch_dims + k:], k = indices' last
// dim, which must be known to know the rank.
func gatherNDShape(a *InferArgs) ([]Inferred, error) {
	data, idx := a.in(0).Shape, a.in(1).Shape
	if data == nil || idx == nil {
		return one(nil), nil
	}
	b := a.Node.AttrInt("batch_dims", 0)
	if len(idx) == 0 || b < 0 || b >= int64(len(idx)) || b >= int64(len(data)) {
		return nil, fmt.Errorf("%w: GatherND of indices %s with batch_dims %d on data %s", ErrShapeMismatch, idx, b, data)
	}
	k := idx[len(idx)-1]
	if !k.Known() {
		return one(nil), nil
	}
	if k.Size < 1 || b+k.Size > int64(len(data)) {
		return nil, fmt.Errorf("%w: GatherND index tuples of length %d with batch_dims %d on data %s", ErrShapeMismatch, k.Size, b, data)
	}
	for i := range b {
		if !dimsMatch(data[i], idx[i]) {
			return nil, fmt.Errorf("%w: GatherND batch dim %d: data %s, indices %s", ErrShapeMismatch, i, data, idx)
		}
	}
	out := append(idx[:len(idx)-1].Clone(), data[b+k.Size:]...)
	return one(out), nil
}

// gatherElementsShape: the indices' shape, of the data's rank.
func gatherElementsShape(a *InferArgs) ([]Inferred, error) {
	data, idx := a.in(0).Shape, a.in(1).Shape
	if data == nil || idx == nil {
		return one(idx.Clone()), nil
	}
	if len(idx) != len(data) || len(data) == 0 {
		return nil, fmt.Errorf("%w: GatherElements indices %s on data %s (ranks must match)", ErrShapeMismatch, idx, data)
	}
	if _, err := normAxis(a.Node.AttrInt("axis", 0), len(data)); err != nil {
		return nil, err
	}
	return one(idx.Clone()), nil
}

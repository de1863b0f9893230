package ops

import (
	"fmt"
	"math"
	"slices"
)

// This file holds the ops that move data without arithmetic: views
// (Reshape, Squeeze, Unsqueeze, Identity share their input's storage) and
// copies (Transpose, Slice, Concat, Expand, Gather).

func identity(c *call) ([]*Tensor, error) {
	return []*Tensor{c.in[0]}, nil
}

func transpose(c *call) ([]*Tensor, error) {
	x := c.in[0]
	rank := len(x.Shape)
	perm, ok := c.node.Attrs.Ints("perm")
	if !ok {
		perm = make([]int64, rank)
		for i := range perm {
			perm[i] = int64(rank - 1 - i)
		}
	}
	if len(perm) != rank {
		return nil, fmt.Errorf("%w: perm %v for rank %d", ErrShapeMismatch, perm, rank)
	}
	seen := make([]bool, rank)
	shape := make([]int64, rank)
	for i, p := range perm {
		if p < 0 || p >= int64(rank) || seen[p] {
			return nil, fmt.Errorf("%w: perm %v is not a permutation of 0..%d", ErrShapeMismatch, perm, rank-1)
		}
		seen[p] = true
		shape[i] = x.Shape[p]
	}
	if rank == 0 {
		return []*Tensor{x}, nil
	}
	// Source strides in output-dim order; odometer over the output.
	inStr := stridesOf(x.Shape)
	str := make([]int, rank)
	for i, p := range perm {
		str[i] = inStr[p]
	}
	idx := make([]int, x.Len())
	pos := make([]int64, rank)
	src := 0
	for o := range idx {
		idx[o] = src
		for d := rank - 1; d >= 0; d-- {
			pos[d]++
			src += str[d]
			if pos[d] < shape[d] {
				break
			}
			src -= int(pos[d]) * str[d]
			pos[d] = 0
		}
	}
	return []*Tensor{take(x, shape, idx)}, nil
}

// reshape is ONNX Reshape: 0 copies the input dim (unless allowzero=1, when
// it means a zero-size dim) and one -1 is inferred.
func reshape(c *call) ([]*Tensor, error) {
	x := c.in[0]
	var spec []int64
	if len(c.in) > 1 && c.in[1] != nil {
		var err error
		if spec, err = intValues(c.in[1], "Reshape shape"); err != nil {
			return nil, err
		}
	} else if s, ok := c.node.Attrs.Ints("shape"); ok { // opset < 5
		spec = s
	} else {
		return nil, fmt.Errorf("%w: Reshape has no shape", ErrMalformed)
	}
	allowZero := c.node.Attrs.Int("allowzero", 0) != 0
	shape := make([]int64, len(spec))
	infer := -1
	known := int64(1)
	for i, d := range spec {
		switch {
		case d == 0 && !allowZero:
			if i >= len(x.Shape) {
				return nil, fmt.Errorf("%w: Reshape shape %v copies dim %d of an input of rank %d", ErrShapeMismatch, spec, i, len(x.Shape))
			}
			shape[i] = x.Shape[i]
		case d == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("%w: Reshape shape %v has more than one -1", ErrShapeMismatch, spec)
			}
			infer = i
			continue
		case d < -1:
			return nil, fmt.Errorf("%w: Reshape shape %v has a negative dim", ErrShapeMismatch, spec)
		default:
			shape[i] = d
		}
		if _, err := CheckedElements(shape[:i+1]); err != nil {
			return nil, err
		}
		known *= shape[i]
	}
	n := int64(x.Len())
	if infer >= 0 {
		if known == 0 || n%known != 0 {
			return nil, fmt.Errorf("%w: cannot reshape %v (%d elements) to %v", ErrShapeMismatch, x.Shape, n, spec)
		}
		shape[infer] = n / known
	} else if known != n {
		return nil, fmt.Errorf("%w: cannot reshape %v (%d elements) to %v", ErrShapeMismatch, x.Shape, n, spec)
	}
	return []*Tensor{withShape(x, shape)}, nil
}

// axesOperand reads the axes of Unsqueeze, Squeeze, ReduceSum and
// ReduceMean: the optional second input from the opset that moved them
// there, else the "axes" attribute. present is false when neither is given.
func axesOperand(c *call) (axes []int64, present bool, err error) {
	if len(c.in) > 1 && c.in[1] != nil {
		axes, err = intValues(c.in[1], "axes")
		return axes, true, err
	}
	axes, present = c.node.Attrs.Ints("axes")
	return axes, present, nil
}

// normAxes normalises and range-checks axes for rank, rejecting repeats.
func normAxes(axes []int64, rank int) ([]int, error) {
	out := make([]int, len(axes))
	for i, a := range axes {
		n, err := normAxis(a, rank)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out[:i], n) {
			return nil, fmt.Errorf("%w: axis %d repeated in %v", ErrShapeMismatch, a, axes)
		}
		out[i] = n
	}
	return out, nil
}

func unsqueeze(c *call) ([]*Tensor, error) {
	x := c.in[0]
	axes, ok, err := axesOperand(c)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: Unsqueeze has no axes", ErrMalformed)
	}
	rank := len(x.Shape) + len(axes)
	ax, err := normAxes(axes, rank)
	if err != nil {
		return nil, err
	}
	shape := make([]int64, 0, rank)
	rest := x.Shape
	for i := range rank {
		if slices.Contains(ax, i) {
			shape = append(shape, 1)
		} else {
			shape = append(shape, rest[0])
			rest = rest[1:]
		}
	}
	return []*Tensor{withShape(x, shape)}, nil
}

func squeeze(c *call) ([]*Tensor, error) {
	x := c.in[0]
	axes, ok, err := axesOperand(c)
	if err != nil {
		return nil, err
	}
	var ax []int
	if ok {
		if ax, err = normAxes(axes, len(x.Shape)); err != nil {
			return nil, err
		}
		for _, a := range ax {
			if x.Shape[a] != 1 {
				return nil, fmt.Errorf("%w: cannot squeeze axis %d of size %d", ErrShapeMismatch, a, x.Shape[a])
			}
		}
	} else {
		for i, d := range x.Shape {
			if d == 1 {
				ax = append(ax, i)
			}
		}
	}
	shape := []int64{}
	for i, d := range x.Shape {
		if !slices.Contains(ax, i) {
			shape = append(shape, d)
		}
	}
	return []*Tensor{withShape(x, shape)}, nil
}

func concat(c *call) ([]*Tensor, error) {
	first := c.in[0]
	if _, ok := c.node.Attrs["axis"]; !ok {
		return nil, fmt.Errorf("%w: Concat needs attribute axis", ErrMalformed)
	}
	rank := len(first.Shape)
	axis, err := normAxis(c.node.Attrs.Int("axis", 0), rank)
	if err != nil {
		return nil, err
	}
	shape := slices.Clone(first.Shape)
	shape[axis] = 0
	for i, t := range c.in {
		if t == nil {
			return nil, fmt.Errorf("%w: Concat input %d is empty", ErrMalformed, i)
		}
		if err := sameDType(first, t); err != nil {
			return nil, err
		}
		if len(t.Shape) != rank {
			return nil, fmt.Errorf("%w: Concat of ranks %d and %d", ErrShapeMismatch, rank, len(t.Shape))
		}
		for d := range rank {
			if d != axis && t.Shape[d] != first.Shape[d] {
				return nil, fmt.Errorf("%w: Concat on axis %d of %v and %v", ErrShapeMismatch, axis, first.Shape, t.Shape)
			}
		}
		shape[axis] += t.Shape[axis]
	}
	if _, err := CheckedElements(shape); err != nil {
		return nil, err
	}
	out := NewTensor(first.DType, shape...)
	outer := int(NumElements(shape[:axis]))
	inner := int(NumElements(shape[axis+1:]))
	rowLen := int(shape[axis]) * inner
	off := 0
	for _, t := range c.in {
		chunk := int(t.Shape[axis]) * inner
		for o := range outer {
			CopyElems(out, o*rowLen+off, t, o*chunk, chunk)
		}
		off += chunk
	}
	return []*Tensor{out}, nil
}

// slice is ONNX Slice (starts, ends, axes, steps as inputs from opset 10,
// as attributes before), with numpy's clamping of out-of-range indices.
func slice(c *call) ([]*Tensor, error) {
	x := c.in[0]
	rank := len(x.Shape)
	var starts, ends, axes, steps []int64
	var err error
	if len(c.in) > 1 {
		operand := func(i int, what string) ([]int64, error) {
			if i >= len(c.in) || c.in[i] == nil {
				return nil, nil
			}
			return intValues(c.in[i], "Slice "+what)
		}
		if starts, err = operand(1, "starts"); err != nil {
			return nil, err
		}
		if ends, err = operand(2, "ends"); err != nil {
			return nil, err
		}
		if axes, err = operand(3, "axes"); err != nil {
			return nil, err
		}
		if steps, err = operand(4, "steps"); err != nil {
			return nil, err
		}
	} else {
		starts, _ = c.node.Attrs.Ints("starts")
		ends, _ = c.node.Attrs.Ints("ends")
		axes, _ = c.node.Attrs.Ints("axes")
	}
	if starts == nil || ends == nil || len(starts) != len(ends) {
		return nil, fmt.Errorf("%w: Slice starts %v and ends %v", ErrShapeMismatch, starts, ends)
	}
	if axes == nil {
		axes = make([]int64, len(starts))
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	if steps == nil {
		steps = make([]int64, len(starts))
		for i := range steps {
			steps[i] = 1
		}
	}
	if len(axes) != len(starts) || len(steps) != len(starts) {
		return nil, fmt.Errorf("%w: Slice starts %v, axes %v and steps %v differ in length", ErrShapeMismatch, starts, axes, steps)
	}
	ax, err := normAxes(axes, rank)
	if err != nil {
		return nil, err
	}
	// Per dim: first index, step and count.
	first := make([]int64, rank)
	step := make([]int64, rank)
	shape := slices.Clone(x.Shape)
	for d := range step {
		step[d] = 1
	}
	for i, d := range ax {
		dim := x.Shape[d]
		st := steps[i]
		if st == 0 {
			return nil, fmt.Errorf("%w: Slice step 0 on axis %d", ErrShapeMismatch, d)
		}
		s, e := starts[i], ends[i]
		if s < 0 {
			s = addClamped(s, dim)
		}
		if e < 0 {
			e = addClamped(e, dim)
		}
		var n int64
		if st > 0 {
			s, e = min(max(s, 0), dim), min(max(e, 0), dim)
			if e > s {
				n = (e - s + st - 1) / st
			}
		} else {
			s, e = min(max(s, 0), dim-1), min(max(e, -1), dim-1)
			if s > e {
				n = (s - e + (-st) - 1) / (-st)
			}
		}
		first[d], step[d], shape[d] = s, st, n
	}
	if _, err := CheckedElements(shape); err != nil {
		return nil, err
	}
	str := stridesOf(x.Shape)
	n := int(NumElements(shape))
	idx := make([]int, n)
	if n > 0 {
		pos := make([]int64, rank)
		base := 0
		for d := range rank {
			base += int(first[d]) * str[d]
		}
		src := base
		for o := range idx {
			idx[o] = src
			for d := rank - 1; d >= 0; d-- {
				pos[d]++
				src += int(step[d]) * str[d]
				if pos[d] < shape[d] {
					break
				}
				src -= int(pos[d]*step[d]) * str[d]
				pos[d] = 0
			}
		}
	}
	return []*Tensor{take(x, shape, idx)}, nil
}

// addClamped adds dim to a negative index without overflowing for
// math.MinInt64, which exporters use to mean "from the very end".
func addClamped(i, dim int64) int64 {
	if i < math.MinInt64+dim {
		return math.MinInt64 + dim
	}
	return i + dim
}

// shapeOp is ONNX Shape with opset 15's optional start and end.
func shapeOp(c *call) ([]*Tensor, error) {
	x := c.in[0]
	rank := int64(len(x.Shape))
	clampIdx := func(i int64) int64 {
		if i < 0 {
			i += rank
		}
		return min(max(i, 0), rank)
	}
	start := clampIdx(c.node.Attrs.Int("start", 0))
	end := clampIdx(c.node.Attrs.Int("end", rank))
	dims := []int64{}
	if end > start {
		dims = slices.Clone(x.Shape[start:end])
	}
	return []*Tensor{FromSlice([]int64{int64(len(dims))}, dims)}, nil
}

// expand is ONNX Expand: bidirectional broadcast of the input with shape.
func expand(c *call) ([]*Tensor, error) {
	x := c.in[0]
	spec, err := intValues(c.in[1], "Expand shape")
	if err != nil {
		return nil, err
	}
	shape, err := BroadcastShapes(x.Shape, spec)
	if err != nil {
		return nil, err
	}
	if err := c.checkValueShape(shape); err != nil {
		return nil, err
	}
	return one(expandTo(x, shape))
}

// tile is ONNX Tile: the input repeated repeats[i] times along each axis
// i, out.shape[i] = in.shape[i] · repeats[i].
func tile(c *call) ([]*Tensor, error) {
	x := c.in[0]
	repeats, err := intValues(c.in[1], "Tile repeats")
	if err != nil {
		return nil, err
	}
	if len(repeats) != len(x.Shape) {
		return nil, fmt.Errorf("%w: Tile repeats %v for a rank-%d input", ErrShapeMismatch, repeats, len(x.Shape))
	}
	shape := make([]int64, len(x.Shape))
	for i, r := range repeats {
		if r < 0 {
			return nil, fmt.Errorf("%w: Tile repeats %v has a negative count", ErrShapeMismatch, repeats)
		}
		shape[i] = x.Shape[i] * r
	}
	n, err := CheckedElements(shape)
	if err != nil {
		return nil, err
	}
	if err := c.checkValueShape(shape); err != nil {
		return nil, err
	}
	// Each output index's source: its coordinate modulo the input's dim
	// on every axis.
	idx := make([]int, n)
	coord := make([]int64, len(shape))
	for o := range idx {
		src, stride := 0, 1
		for a := len(shape) - 1; a >= 0; a-- {
			src += int(coord[a]%x.Shape[a]) * stride
			stride *= int(x.Shape[a])
		}
		idx[o] = src
		for a := len(shape) - 1; a >= 0; a-- {
			if coord[a]++; coord[a] < shape[a] {
				break
			}
			coord[a] = 0
		}
	}
	return one(take(x, shape, idx), nil)
}

// gather is ONNX Gather: out = data.shape[:axis] + indices.shape +
// data.shape[axis+1:], negative indices counting from the end.
func gather(c *call) ([]*Tensor, error) {
	data, indices := c.in[0], c.in[1]
	rank := len(data.Shape)
	if rank == 0 {
		return nil, fmt.Errorf("%w: Gather on a scalar", ErrShapeMismatch)
	}
	axis, err := normAxis(c.node.Attrs.Int("axis", 0), rank)
	if err != nil {
		return nil, err
	}
	ind, err := intValues(indices, "Gather indices")
	if err != nil {
		return nil, err
	}
	dim := data.Shape[axis]
	shape := append(append(slices.Clone(data.Shape[:axis]), indices.Shape...), data.Shape[axis+1:]...)
	if _, err := CheckedElements(shape); err != nil {
		return nil, err
	}
	out := NewTensor(data.DType, shape...)
	outer := int(NumElements(data.Shape[:axis]))
	inner := int(NumElements(data.Shape[axis+1:]))
	for j, i := range ind {
		if i < 0 {
			i += dim
		}
		if i < 0 || i >= dim {
			return nil, fmt.Errorf("%w: Gather index %d out of range [%d, %d)", ErrShapeMismatch, ind[j], -dim, dim)
		}
		for o := range outer {
			CopyElems(out, (o*len(ind)+j)*inner, data, (o*int(dim)+int(i))*inner, inner)
		}
	}
	return []*Tensor{out}, nil
}

// gatherND is ONNX GatherND: for each index tuple on indices' last axis
// (length k), the slice data[batch..., tuple..., :], the first batch_dims
// axes shared by data and indices.
func gatherND(c *call) ([]*Tensor, error) {
	data, indices := c.in[0], c.in[1]
	b := int(c.node.Attrs.Int("batch_dims", 0))
	ir := len(indices.Shape)
	if ir == 0 || b < 0 || b >= ir || b >= len(data.Shape) {
		return nil, fmt.Errorf("%w: GatherND of indices %v with batch_dims %d on data %v", ErrShapeMismatch, indices.Shape, b, data.Shape)
	}
	k := int(indices.Shape[ir-1])
	if k < 1 || b+k > len(data.Shape) {
		return nil, fmt.Errorf("%w: GatherND index tuples of length %d with batch_dims %d on data %v", ErrShapeMismatch, k, b, data.Shape)
	}
	if !slices.Equal(data.Shape[:b], indices.Shape[:b]) {
		return nil, fmt.Errorf("%w: GatherND batch dims of data %v and indices %v differ", ErrShapeMismatch, data.Shape, indices.Shape)
	}
	ind, err := intValues(indices, "GatherND indices")
	if err != nil {
		return nil, err
	}
	shape := append(slices.Clone(indices.Shape[:ir-1]), data.Shape[b+k:]...)
	if _, err := CheckedElements(shape); err != nil {
		return nil, err
	}
	out := NewTensor(data.DType, shape...)
	inner := int(NumElements(data.Shape[b+k:]))         // elements per gathered slice
	perBatch := int(NumElements(data.Shape[b:]))        // data elements per batch entry
	tuples := int(NumElements(indices.Shape[b : ir-1])) // tuples per batch entry
	for bi := range int(NumElements(data.Shape[:b])) {
		for t := range tuples {
			at := (bi*tuples + t) * k
			off := 0
			for j := range k {
				d := data.Shape[b+j]
				i := ind[at+j]
				if i < 0 {
					i += d
				}
				if i < 0 || i >= d {
					return nil, fmt.Errorf("%w: GatherND index %d out of range [%d, %d) on axis %d", ErrShapeMismatch, ind[at+j], -d, d, b+j)
				}
				off = off*int(d) + int(i)
			}
			CopyElems(out, (bi*tuples+t)*inner, data, bi*perBatch+off*inner, inner)
		}
	}
	return []*Tensor{out}, nil
}

// gatherElements is ONNX GatherElements: out[i] = data[i with its axis
// coordinate replaced by indices[i]], out shaped as indices.
func gatherElements(c *call) ([]*Tensor, error) {
	data, indices := c.in[0], c.in[1]
	rank := len(data.Shape)
	if rank == 0 || len(indices.Shape) != rank {
		return nil, fmt.Errorf("%w: GatherElements indices %v on data %v (ranks must match)", ErrShapeMismatch, indices.Shape, data.Shape)
	}
	axis, err := normAxis(c.node.Attrs.Int("axis", 0), rank)
	if err != nil {
		return nil, err
	}
	ind, err := intValues(indices, "GatherElements indices")
	if err != nil {
		return nil, err
	}
	out := NewTensor(data.DType, indices.Shape...)
	// Row-major strides of data, walking indices' coordinates.
	strides := make([]int, rank)
	stride := 1
	for i := rank - 1; i >= 0; i-- {
		strides[i] = stride
		stride *= int(data.Shape[i])
	}
	coord := make([]int64, rank)
	dim := data.Shape[axis]
	for n, v := range ind {
		if v < 0 {
			v += dim
		}
		if v < 0 || v >= dim {
			return nil, fmt.Errorf("%w: GatherElements index %d out of range [%d, %d)", ErrShapeMismatch, ind[n], -dim, dim)
		}
		at := 0
		for i, x := range coord {
			if i == axis {
				x = v
			} else if x >= data.Shape[i] {
				return nil, fmt.Errorf("%w: GatherElements indices %v exceed data %v on axis %d", ErrShapeMismatch, indices.Shape, data.Shape, i)
			}
			at += int(x) * strides[i]
		}
		CopyElems(out, n, data, at, 1)
		for i := rank - 1; i >= 0; i-- { // next coordinate of indices
			coord[i]++
			if coord[i] < indices.Shape[i] {
				break
			}
			coord[i] = 0
		}
	}
	return []*Tensor{out}, nil
}

package onnx

import (
	"fmt"
	"math"

	"github.com/sqc-dev/sqc/compiler"
)

// onnxSplit reads Split as the Slices it is: output i is input[start_i :
// start_i + size_i] on the axis. The sizes come from the split attribute
// (before opset 13) or the constant split input (opset 13+); without them
// the axis is cut into len(outputs) parts, or num_outputs parts (opset
// 18+), of ceil(dim / parts) each, the last one shorter where the dim does
// not divide (ONNX's definition; the even split of older opsets is the
// case where it does). The dim need not be known: then the bounds are
// computed from the input's shape when the graph runs. Slices are what
// the rest of sqc reads: transformers' chunk and unbind (ModernBERT's
// fused QKV and GLU projections) and its rotate_half all come out as the
// same ops however the exporter wrote them.
func (e *contribExpander) onnxSplit(n *compiler.Node) error {
	if err := need(n, 0); err != nil {
		return err
	}
	x, s := n.Inputs[0], scope(n)
	axis := n.AttrInt("axis", 0)
	sizes, hasSizes := n.AttrInts("split")
	if name := input(n, 1); name != "" {
		t := e.constant(name)
		if t == nil || t.DType != compiler.Int64 || len(t.Shape) != 1 {
			return fmt.Errorf("%w: input split (%s) is not a constant 1-D int64 tensor in the file; sqc needs the part sizes when it compiles", ErrUnsupportedFeature, name)
		}
		sizes, hasSizes = t.I64, true
	}
	parts := int64(len(n.Outputs))
	if v := n.AttrInt("num_outputs", 0); v != 0 {
		if v != parts {
			return fmt.Errorf("%w: num_outputs is %d but the node has %d outputs", compiler.ErrMalformed, v, parts)
		}
		if hasSizes {
			return fmt.Errorf("%w: both num_outputs and split are given", compiler.ErrMalformed)
		}
	}
	axes := e.b.Ints(fmt.Sprintf("const.i64.[%d]", axis), axis)
	slice := func(i int, start, end string) {
		if n.Outputs[i] == "" {
			return
		}
		e.b.Rename(e.b.Op("Slice", fmt.Sprintf("%s/part%d", s, i), x, start, end, axes), n.Outputs[i])
	}
	if hasSizes {
		if int64(len(sizes)) != parts {
			return fmt.Errorf("%w: split gives %d sizes for %d outputs", compiler.ErrMalformed, len(sizes), parts)
		}
		var at int64
		for i, size := range sizes {
			if size < 0 {
				return fmt.Errorf("%w: split size %d is negative", compiler.ErrMalformed, size)
			}
			if at > math.MaxInt64-size {
				return fmt.Errorf("%w: split sizes %v overflow", compiler.ErrMalformed, sizes)
			}
			slice(i, e.b.Ints(fmt.Sprintf("const.i64.[%d]", at), at), e.b.Ints(fmt.Sprintf("const.i64.[%d]", at+size), at+size))
			at += size
		}
		return nil
	}
	// The dim as a 1-D tensor: Shape(x)[axis : axis+1], axis -1 reading to
	// the end.
	end := axis + 1
	if end == 0 {
		end = math.MaxInt64
	}
	dim := e.b.Op("Slice", s+"/dim", e.b.Op("Shape", s+"/shape", x), axes, e.b.Ints(fmt.Sprintf("const.i64.[%d]", end), end))
	// chunk = ceil(dim / parts) = (dim + parts - 1) / parts, dims being
	// non-negative.
	chunk := e.b.Op("Div", s+"/chunk", e.b.Op("Add", s+"/dim_rounded_up", dim, e.b.Ints(fmt.Sprintf("const.i64.[%d]", parts-1), parts-1)),
		e.b.Ints(fmt.Sprintf("const.i64.[%d]", parts), parts))
	bound := func(i int64) string {
		if i == 0 {
			return e.b.Ints("const.i64.[0]", 0)
		}
		if i == parts {
			return e.b.Ints("const.i64.[max]", math.MaxInt64)
		}
		return e.b.Op("Mul", fmt.Sprintf("%s/bound%d", s, i), chunk, e.b.Ints(fmt.Sprintf("const.i64.[%d]", i), i))
	}
	for i := range parts {
		slice(int(i), bound(i), bound(i+1))
	}
	return nil
}

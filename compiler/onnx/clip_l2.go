package onnx

import (
	"fmt"
	"math"

	"github.com/sqc-dev/sqc/compiler"
)

// Clip and ReduceL2 are read as the ops they are made of, as Split is
// (split.go): the mean pooling and L2 normalisation of a
// sentence-transformers model that optimum exports with its
// sentence_embedding write torch.clamp and F.normalize with them.

// onnxClip: Clip(X, min, max) = Min(Max(X, min), max), min and max the
// optional inputs (opset 11+) or the attributes (before); an absent bound
// does not clip. NaN stays NaN either way (Max and Min propagate it).
func (e *contribExpander) onnxClip(n *compiler.Node) error {
	if err := need(n, 0); err != nil {
		return err
	}
	s := scope(n)
	y := n.Inputs[0]
	lo, hi := input(n, 1), input(n, 2)
	if v, ok := n.Attrs["min"]; ok && lo == "" {
		if v.Float != float32(math.Inf(-1)) {
			lo = e.b.Scalar(fmt.Sprintf("const.clip_min.%g", v.Float), v.Float)
		}
	}
	if v, ok := n.Attrs["max"]; ok && hi == "" {
		if v.Float != float32(math.Inf(1)) {
			hi = e.b.Scalar(fmt.Sprintf("const.clip_max.%g", v.Float), v.Float)
		}
	}
	if lo != "" {
		y = e.b.Op("Max", s+"/min", y, lo)
	}
	if hi != "" {
		y = e.b.Op("Min", s+"/max", y, hi)
	}
	if y == n.Inputs[0] {
		y = e.b.Op("Identity", s+"/unclipped", y)
	}
	e.finish(n, y)
	return nil
}

// onnxReduceL2: ReduceL2(X) = Sqrt(ReduceSum(X·X)) over the same axes
// (the attribute before opset 18, input 1 from 18) with the same keepdims
// and noop_with_empty_axes. The squares are float32 products summed in
// float64 (ReduceSum's kernel), then rounded and rooted.
func (e *contribExpander) onnxReduceL2(n *compiler.Node) error {
	if err := need(n, 0); err != nil {
		return err
	}
	s := scope(n)
	attrs := map[string]compiler.Attr{}
	for _, k := range []string{"keepdims", "noop_with_empty_axes"} {
		if v, ok := n.Attrs[k]; ok {
			attrs[k] = v
		}
	}
	ins := []string{e.b.Op("Mul", s+"/square", n.Inputs[0], n.Inputs[0])}
	axes := input(n, 1)
	if v, ok := n.AttrInts("axes"); ok {
		axes = e.b.Ints(fmt.Sprintf("const.i64.%v", v), v...)
	}
	if axes != "" {
		ins = append(ins, axes) // ReduceSum takes its axes as input 1 from opset 13, which sqc reads at every opset
	}
	e.finish(n, e.b.Op("Sqrt", s+"/root", e.b.OpAttrs("ReduceSum", s+"/sum_of_squares", attrs, ins...)))
	return nil
}

// Package compiler holds sqc's graph IR and the machinery around it: the op
// table (the single source of truth for every op's arity, dtype rule, shape
// rule and meaning), the verifier, shape inference with symbolic dimensions,
// and the stable textual form (printer and parser) that `sqc inspect` shows
// and that pass tests are written in.
//
// The IR is deliberately ONNX-like: values are named, nodes carry ONNX op
// names and attributes, weights live in Graph.Initializers. Frontends
// (compiler/onnx, compiler/hf) build it, compiler/interp executes it in FP32
// as the reference oracle, and the passes rewrite it.
package compiler

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
//
// Where things are:
//   - graph.go, tensor.go, dtype.go: the IR types; errors.go: typed errors.
//   - ops.go: OpDef, LookupOp, Ops; ops_onnx.go and ops_sqc*.go: the table;
//     ops_rules.go, ops_shapes.go, shapes.go: shape rules and dim algebra.
//   - verify.go: Graph.Verify. infer.go: Graph.InferShapes.
//   - text.go, textparse.go: Graph.Text / WriteText and ParseText (the
//     syntax is documented in text.go).
//   - summary.go: Graph.Summary for `sqc inspect`; graphutil.go: Clone,
//     Producers, Consumers, RemoveUnused, SortTopological, Namer.
package compiler

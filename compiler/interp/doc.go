// Package interp is sqc's FP32 reference interpreter: it executes a
// compiler.Graph node by node in pure Go, with the ONNX meaning of every op
// (numpy-style broadcasting, opset-dependent attributes) plus sqc's canonical
// ops Gelu and Linear.
//
// It is the oracle that compiled packages are checked against and the engine
// of INT8 calibration: Options.OnValue sees every activation as it is
// produced. Accuracy comes before speed, but MatMul is blocked and parallel so
// a small BERT runs a whole dev set in seconds.
//
// Float32 math follows what PyTorch and ONNX Runtime do closely enough to
// match their logits to about 1e-6: elementwise arithmetic is float32, as
// theirs is; dot products accumulate in float32 in plain k order (so
// results do not depend on Options.Threads); reductions, normalisations,
// softmax and transcendental functions are computed in float64 and rounded
// once.
//
// Bad input never panics: shapes, indices and dtypes are checked, and every
// error is a compiler.InputError naming the model file (Graph.Meta
// "source") and the node, e.g. `model.onnx: node "/MatMul" (MatMul): shape
// mismatch: ...`, so errors.Is(err, compiler.ErrBadInput) holds.
//
// Opset-dependent meaning (Softmax's axis before opset 13, axes as
// attribute or input for Unsqueeze, Squeeze, ReduceSum and ReduceMean,
// Slice's attributes before opset 10) follows Graph.Opset; a graph with
// Opset 0, built by hand, gets the newest meaning.
//
// Usage:
//
//	it, err := interp.New(g)          // validates once
//	out, err := it.Run(inputs, &interp.Options{Threads: 2})
//
// An Interpreter never mutates its graph or the caller's input tensors and
// is safe for concurrent Run calls. Tensors passed to OnValue may share
// storage with the graph's initializers or with inputs and must be treated
// as read-only; the tensors Run returns are fresh copies the caller owns.
package interp

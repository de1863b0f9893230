// Package ops holds sqc's generic tensor kernels: the ONNX meaning of every
// op outside sqc's fused vocabulary (shape plumbing such as Shape, Gather,
// Unsqueeze, Concat, Slice, Range, Expand; Cast, Equal, Where, arithmetic
// with numpy broadcasting; reductions, MatMul, Softmax, LayerNormalization)
// on dense row-major Tensors.
//
// One implementation serves three callers, so they agree bit for bit: the
// FP32 reference interpreter (compiler/interp) evaluates every generic node
// with it; the INT8 engine (compiler/exec) runs the nodes it has no fused
// kernel for through it; and the Go packages `sqc compile` generates call it
// for those same nodes. It imports only the standard library, as everything
// generated packages import must.
//
// Float32 math follows what PyTorch and ONNX Runtime do closely enough to
// match their logits to about 1e-6: elementwise arithmetic is float32, as
// theirs is; dot products accumulate in float32 in plain k order (so
// results do not depend on Options.Threads); reductions, normalisations,
// softmax and transcendental functions are computed in float64 and rounded
// once. Opset-dependent meaning (Softmax's axis before opset 13, axes as
// attribute or input for Unsqueeze, Squeeze, ReduceSum and ReduceMean,
// Slice's attributes before opset 10) follows Node.Opset.
//
//	n := &ops.Node{Op: "Cast", Attrs: ops.Attrs{"to": {Kind: ops.AttrInt, Int: 1}}}
//	out, err := n.Eval([]*ops.Tensor{mask}, ops.Options{})
package ops

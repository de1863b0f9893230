// Package exec is sqc's in-process INT8 engine: it lowers a canonical,
// quantised graph (sqc.QLinear, LayerNormalization, sqc.Attention, ...)
// into a Program, a flat list of Steps, each one call into the runtime
// packages that generated code imports (runtime/qgemm's GEMM with its
// Epilogue, runtime/nn's LayerNorm, Attention, QuantizeU8, ...), with
// constant parameters, weights packed once, and numbered buffer slots.
//
// The code generator prints the same Steps as straight-line Go, so a
// Program and the generated package make the same calls in the same order
// and give identical bits. String lists the steps for inspection.
//
// Lower makes the Program's Schedule alone, as pure data (no workers, no
// CPU permission requests): what the code generator prints. Compile is
// Lower and NewProgram.
//
//	prog, err := exec.Compile(g, exec.Options{Threads: 2})
//	defer prog.Close()
//	out, err := prog.Run(map[string]*compiler.Tensor{"input_ids": ids, ...})
//
// # Lowering
//
// Each node becomes one step; the fusions below were made by the passes,
// in the IR, and keep the bits of the unfused graph:
//
//   - sqc.Quantize (passes.MaterializeQuantize, one per value and
//     parameters after DeduplicateQuantize) is a quantise step
//     (nn.QuantizeU8Parallel, or nn.QuantizeRowsU8Parallel in dynamic
//     mode) and sqc.QLinear a qgemm GEMM step reading its u8 output. A
//     QLinear still reading f32 (a graph that did not run those passes)
//     is an error: lowering makes no quantisation of its own.
//   - The GEMM epilogue runs what the QLinear's attributes and inputs say
//     (act, residual, out_scale): passes.FuseQLinearEpilogues fused a
//     following sqc.Gelu or Relu and residual Add into it in the IR. A
//     graph that did not run that pass lowers its Gelu and Add to steps of
//     their own, the same bits.
//   - sqc.Attention with qkv_packed (passes.FuseQKV) reads Q, K and V in
//     place from the one [batch, seq, 3W] output of the fused projection,
//     with row stride 3W (PackedAttentionLayout).
//   - A QLinear or sqc.LayerNormDual with out_scale, or an sqc.LayerNorm
//     (passes.WriteU8Directly decided it), writes its readers' u8 input
//     directly (qgemm's OutU8, nn.LayerNormU8, nn.LayerNormDual), with the
//     same quantisation function a separate step would use. The lowering
//     decides none of this: it translates the IR's quantise nodes and u8
//     outputs one to one, with u8 rows padded to qgemm's K block.
//
// Ops outside the fused vocabulary run as OpSteps on runtime/ops's
// generic kernels, the ones the FP32 interpreter uses and generated
// packages call, one node at a time: shape plumbing such as the
// position-id Slice, Cast, Where, Expand, and inside the encoder (between
// the first and last LayerNormalization) only work on dims and on values
// computed from the inputs alone (MPNet's relative position bias). A
// generic op there that reads an activation (a value computed from a
// LayerNorm's output, through anything but Shape) fails Compile with
// ErrUnsupportedOp rather than run slowly.
//
// # Buffers and threads
//
// Every value has a slot; the buffers of value and internal slots are
// carved from one arena laid out by the Schedule's MemoryPlan (PlanMemory,
// memplan.go: slots whose live ranges, first to last step that mentions
// them, do not overlap share bytes, whatever their dtypes). The plan is
// made at the largest batch and sequence run so far, read from the inputs
// of each call, and made again, with a new arena, when a call brings
// larger ones (reuse.go). Graph inputs and constants are not planned, and
// generic OpSteps' results are copied into their places, since they may
// alias their inputs. A Program runs one call at a time
// (Run serialises on a mutex) on its own worker pool, shared by the GEMM
// engine and the nn kernels; results do not depend on the thread count.
// In steady state RunInto, given the same output map each time, allocates
// nothing: the GEMM engine and the nn kernels recycle their per-call state.
// What allocates: the map and tensors Run returns (RunInto reuses the
// caller's) and OpSteps (the generic kernels allocate their results).
package exec

// Package nn holds the portable kernels of an INT8 encoder other than the
// GEMM (runtime/qgemm): activation quantisation, LayerNorm, attention,
// activations, embedding gathers and the float32 Linear of FP32 graphs.
// Generated packages import it, and so does sqc's in-process engine
// (compiler/exec), which makes the same calls in the same order, so the two
// give identical bits.
//
// # Determinism
//
// Every kernel is pure Go with a fixed evaluation order that does not
// depend on the thread count, the CPU or the architecture:
//
//   - Each output element is computed by one goroutine, with reductions in
//     a fixed order (documented per kernel); parallelism only splits the
//     work over rows, heads or tiles.
//   - Every float product that feeds a sum is rounded explicitly, written
//     float32(a*b) + c (float64(a*b) + c in float64 code): the Go spec lets
//     the compiler fuse a*b + c into one FMA, and it does on arm64 and with
//     GOAMD64=v3, which would change the bits.
//   - Transcendental functions are this package's own (exp, tanh) or
//     qgemm's (GELU): math.Exp has per-architecture assembly that uses FMA
//     where the CPU has it, so its last bit varies between machines.
//   - Conversions of NaN to integers (implementation-defined in Go) never
//     happen: values are clamped first.
//
// LayerNorm computes its statistics in float64 with the formula and order of
// the FP32 interpreter (compiler/interp), so both agree bit for bit on
// amd64 (where Go does not fuse float64 operations by default).
//
// # Threads
//
// Kernels that take a *pool.Pool split their work over its workers; a nil
// pool runs everything on the caller's goroutine. Results are the same
// either way.
//
// # Allocation
//
// Kernels write into caller-provided slices and allocate nothing, except
// that handing a closure to pool.Run costs one small allocation per call.
package nn

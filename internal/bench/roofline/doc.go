// Package roofline measures this machine's ceilings and where each fused
// op of a compiled INT8 model sits under them, and draws the roofline
// figure (`sqc roofline`).
//
// Ceilings are measured, not taken from data sheets, as rates per CPU
// second of the measuring threads (so that time the OS gave to other
// processes is not counted), best round of many:
//
//   - compute: runtime/qgemm's register-only peak loops (AMX TDPBUSD,
//     AVX512-VNNI VPDPBUSD, AVX-512 FP32 FMA), run on every thread at once;
//   - bandwidth: read sweeps over a buffer that fits in L2 (per thread) and
//     over one far larger than the last-level cache (DRAM), with the
//     standard library's SIMD byte loops (bytes.Count, bytes.IndexByte),
//     the best of the two. Go has no vector loads of its own, so these are
//     lower bounds of what hand-written assembly would reach.
//
// Each op's point is (operational intensity, achieved rate): the
// operations it performs (2 per multiply-add; a GEMM's INT8 ops and the
// FP32 ops of the other kernels on the same axis) over the bytes it must
// move at least (every operand read once, every result written once), and
// those operations over its measured time.
//
// Per-op times come from replaying each distinct step of an exec.Program
// (exec.Program.Replay): the program runs once on the benchmark's inputs,
// and each step, when it has run, is run again in place, on the buffers
// and shapes that run gave it, timed alone. Its operations and bytes are
// the step's own exec.Cost. Profile reports how the replayed times add up
// against a measured forward pass, which tells how faithful the replay is.
package roofline

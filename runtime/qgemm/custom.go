package qgemm

// SpecializedKernel is a Kernel built for one padded K (Kp), such as the
// AVX512-VNNI kernels `sqc compile` generates into a model's package
// (asmgen/kernels): it may ignore its kp argument, so it is only ever
// called for weights whose Kp is exactly Kp.
type SpecializedKernel struct {
	Kp     int
	Kernel Kernel
}

// GEMMWithKernel is GEMM with k's kernel in place of the Engine's own, for
// one call. The substitution happens only when it is sound: k.Kernel is set,
// k.Kp == b.Kp, and the Engine runs the VNNI variant (a specialised kernel
// uses the same instructions, so it can run wherever that variant does).
// Otherwise it is exactly GEMM. Blocking, validation and the epilogue are
// GEMM's; the s32 accumulation is exact integer arithmetic, so the output
// bits do not depend on which kernel computed them. Like GEMM, it does not
// allocate in steady state.
func (e *Engine) GEMMWithKernel(k SpecializedKernel, a []uint8, m, lda int, b *PackedB, ep *Epilogue) error {
	if k.Kernel == nil || e.variant.ISA != ISAVNNI || b == nil || k.Kp != b.Kp {
		return e.GEMM(a, m, lda, b, ep)
	}
	if err := checkGEMM(a, m, lda, b, ep); err != nil {
		return err
	}
	if m == 0 {
		return nil
	}
	e.gemmBlocks(k.Kernel, nil, a, m, lda, b, ep, e.plan(m, b, ep)) // a specialised kernel has no fused form
	return nil
}

package qgemm

// GEMMSerialScratchLen is the length of the s32 scratch GEMMSerial needs
// for an m-row GEMM with the packed B b: one accumulator per output
// element of the padded width.
func GEMMSerialScratchLen(m int, b *PackedB) int { return m * b.Np }

// GEMMSerial computes what GEMM computes, with the same bits, on the
// caller's goroutine alone, using c (len >= GEMMSerialScratchLen(m, b)) for
// the s32 accumulators instead of the Engine's per-worker scratch. It is
// for the small GEMMs that run inside a caller's own parallel loop, such as
// attention's per-head products (runtime/nn.AttentionInt8): GEMM must not
// be called there, since its blocks would wait for the worker ids the
// caller's loop holds. It validates its arguments as GEMM does and writes
// nothing when they do not fit; ep.Finish is not called.
//
// It is KernelSerial then EpilogueSerial on the whole block, validated
// once (or the variant's fused kernel, the same bits); a caller that wants the epilogue applied to column blocks
// separately (into different outputs) calls the two itself.
func (e *Engine) GEMMSerial(c []int32, a []uint8, m, lda int, b *PackedB, ep *Epilogue) error {
	if err := checkKernelSerial(c, a, m, lda, b); err != nil || m == 0 {
		return err
	}
	if ep == nil {
		return invalid("GEMMSerial: nil Epilogue")
	}
	if err := checkEpilogue(ep, m, b.N); err != nil {
		return err
	}
	prof := e.prof
	at := prof.start()
	if f := e.variant.fusedBlock; f != nil && f(a, lda, b, c, b.Np, ep, 0, 0, m, b.Np/NBlock, b.N) {
		prof.lap(profFused, &at)
		prof.done()
		return nil
	}
	e.variant.Kernel(&a[0], lda, &b.Data[0], b.Kp, &c[0], b.Np, m, b.Np/NBlock)
	prof.lap(profKernel, &at)
	e.epilogue(ep, c, b.Np, 0, 0, m, b.N)
	prof.lap(profEpilogue, &at)
	prof.done()
	return nil
}

// KernelSerial runs the Engine's kernel alone on the caller's goroutine:
// c[i*b.Np+j] = the s32 dot product of A row i and column j of b, for
// i < m, j < b.Np (c's row stride is b.Np; len(c) >=
// GEMMSerialScratchLen(m, b)). EpilogueSerial turns column blocks of c into
// output.
func (e *Engine) KernelSerial(c []int32, a []uint8, m, lda int, b *PackedB) error {
	if err := checkKernelSerial(c, a, m, lda, b); err != nil || m == 0 {
		return err
	}
	prof := e.prof
	at := prof.start()
	e.variant.Kernel(&a[0], lda, &b.Data[0], b.Kp, &c[0], b.Np, m, b.Np/NBlock)
	prof.lap(profKernel, &at)
	prof.done()
	return nil
}

// checkKernelSerial validates the kernel operands of KernelSerial and
// GEMMSerial: b, A's m rows of stride lda up to b.Kp, and the scratch c.
func checkKernelSerial(c []int32, a []uint8, m, lda int, b *PackedB) error {
	if err := b.Validate(); err != nil {
		return err
	}
	switch {
	case m < 0:
		return invalid("serial GEMM: m = %d", m)
	case m == 0:
		return nil
	case lda < b.Kp:
		return invalid("serial GEMM: lda = %d < Kp = %d", lda, b.Kp)
	case len(a) < (m-1)*lda+b.Kp:
		return invalid("serial GEMM: A has %d bytes, m=%d rows of stride %d up to Kp=%d need %d", len(a), m, lda, b.Kp, (m-1)*lda+b.Kp)
	case len(c) < GEMMSerialScratchLen(m, b):
		return invalid("serial GEMM: scratch has %d int32, %d rows x Np=%d need %d", len(c), m, b.Np, GEMMSerialScratchLen(m, b))
	}
	return nil
}

// EpilogueSerial applies ep, as GEMM's epilogue does with the same bits,
// to the m x n block of accumulators c (row stride ldc >= n): element
// (i, j) is output element (i, j) of ep (its per-column slices and output
// start at the block's first column). It validates ep and c and writes
// nothing when they do not fit; ep.Finish is not called.
func (e *Engine) EpilogueSerial(ep *Epilogue, c []int32, ldc, m, n int) error {
	switch {
	case ep == nil:
		return invalid("EpilogueSerial: nil Epilogue")
	case m < 0 || n < 0 || ldc < n:
		return invalid("EpilogueSerial: m = %d, n = %d, ldc = %d", m, n, ldc)
	case m == 0 || n == 0:
		return nil
	case len(c) < (m-1)*ldc+n:
		return invalid("EpilogueSerial: accumulators have %d int32, %d rows of stride %d need %d", len(c), m, ldc, (m-1)*ldc+n)
	}
	if err := checkEpilogue(ep, m, n); err != nil {
		return err
	}
	prof := e.prof
	at := prof.start()
	e.epilogue(ep, c, ldc, 0, 0, m, n)
	prof.lap(profEpilogue, &at)
	prof.done()
	return nil
}

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
func (e *Engine) GEMMSerial(c []int32, a []uint8, m, lda int, b *PackedB, ep *Epilogue) error {
	if err := checkGEMM(a, m, lda, b, ep); err != nil {
		return err
	}
	if m == 0 {
		return nil
	}
	if need := GEMMSerialScratchLen(m, b); len(c) < need {
		return invalid("GEMMSerial: scratch has %d int32, %d rows x Np=%d need %d", len(c), m, b.Np, need)
	}
	e.variant.Kernel(&a[0], lda, &b.Data[0], b.Kp, &c[0], b.Np, m, b.Np/NBlock)
	e.epilogue(ep, c, b.Np, 0, 0, m, b.N)
	return nil
}

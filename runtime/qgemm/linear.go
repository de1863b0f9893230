package qgemm

// Linear is one quantised linear layer as a GEMM: the packed weights and
// the epilogue's constants, everything about the call that does not change
// between calls. compiler/exec's GEMMStep holds one and the generated
// package keeps one per layer among its weights, and both run it with
// Engine.Linear; the FP32 interpreter's reference (compiler/interp) binds
// the same epilogue with Epilogue on its own accumulators.
type Linear struct {
	B PackedB
	// AZeroPoint is the zero point of A in static mode (in dynamic mode
	// LinearIO's RowZeroPoint replaces it).
	AZeroPoint int32
	// Scale is per output column: the activation scale times the weight
	// scale (static), or the weight scale alone (dynamic: the row scale
	// multiplies after it).
	Scale []float32
	Bias  []float32 // optional
	Act   Act
	// MulResidual multiplies the output by LinearIO.Residual instead of
	// adding it (Epilogue.MulResidual).
	MulResidual bool
	// OutKp > 0 makes the output u8 rows of OutKp bytes, quantised with
	// OutInvScale and OutZeroPoint (the next layer's input); 0 makes it
	// f32 rows of B.N.
	OutKp        int
	OutInvScale  float32
	OutZeroPoint int32
}

// LinearIO is the buffers of one call of a Linear.
type LinearIO struct {
	A    []uint8 // Rows rows of B.Kp bytes
	Rows int
	// RowScale and RowZeroPoint (Rows each) are the per-row quantisation
	// of A in dynamic mode; nil in static mode.
	RowScale     []float32
	RowZeroPoint []int32
	Residual     []float32 // optional: Rows rows of B.N, added last (multiplied with Linear.MulResidual)
	OutF32       []float32 // Rows rows of B.N, when OutKp is 0
	OutU8        []uint8   // Rows rows of OutKp bytes, when OutKp > 0
	// Finish, if set, runs on each block of output rows once the GEMM
	// has written them (Epilogue.Finish).
	Finish RowFinisher
}

// Epilogue sets ep to l's epilogue on io's buffers.
func (l *Linear) Epilogue(ep *Epilogue, io *LinearIO) {
	*ep = Epilogue{
		AZeroPoint: l.AZeroPoint, ColSum: l.B.ColSum, Scale: l.Scale, Bias: l.Bias, Act: l.Act,
		RowScale: io.RowScale, RowZeroPoint: io.RowZeroPoint, Finish: io.Finish,
	}
	if io.Residual != nil {
		ep.Residual, ep.ResidualStride, ep.MulResidual = io.Residual, l.B.N, l.MulResidual
	}
	if l.OutKp > 0 {
		ep.OutU8, ep.OutStride, ep.OutInvScale, ep.OutZeroPoint = io.OutU8, l.OutKp, l.OutInvScale, l.OutZeroPoint
	} else {
		ep.OutF32, ep.OutStride = io.OutF32, l.B.N
	}
}

// Linear runs l on io: GEMMWithKernel with k (a zero k: the Engine's own
// kernel) and l's epilogue. Like GEMM, it does not allocate in steady
// state.
func (e *Engine) Linear(k SpecializedKernel, l *Linear, io *LinearIO) error {
	var ep Epilogue
	l.Epilogue(&ep, io)
	return e.GEMMWithKernel(k, io.A, io.Rows, l.B.Kp, &l.B, &ep)
}

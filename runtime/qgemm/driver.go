package qgemm

import (
	"fmt"
	"sync/atomic"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// Options configures New.
type Options struct {
	// Threads is the number of workers of the Engine's own pool (<= 0:
	// GOMAXPROCS). Ignored when Pool is set.
	Threads int
	// Pool, if set, is a shared pool the Engine runs on (and does not
	// close). Its worker ids index the Engine's scratch, so one pool can
	// serve several Engines and other parallel loops at once.
	Pool *pool.Pool
	// ISA caps the kernel family by name ("amx", "vnni", "avx2", "go"), or
	// is ISAEmulatedAMX; "" means the environment's SQC_ISA (see EnvISA),
	// and if that is empty too, the fastest variant this process can run.
	ISA string
	// Variant, if set, is used as is, bypassing ISA and SQC_ISA: tests and
	// benchmarks force each entry of Variants() this way.
	Variant *Variant
	// SeparateEpilogue runs the kernel into the s32 scratch, then the
	// epilogue, even where the variant applies the epilogue inside the
	// kernel call (AMX), for comparisons; SQC_EPILOGUE=separate (see
	// EnvEpilogue) does the same.
	SeparateEpilogue bool
	// FinishOrder forces the block order of GEMMs with an Epilogue.Finish
	// (FinishColumnMajor, FinishRowMajor), for comparisons; FinishByModel,
	// the zero value, lets the planner choose unless SQC_FINISH_ORDER
	// forces it (see EnvFinishOrder).
	FinishOrder FinishOrder
	// Profile makes the Engine time its kernels, epilogues and row
	// finishes (Engine.Profile), for sqc roofline: about 50 ns more per
	// macro-block, and much more, relatively, on attention's tiny serial
	// GEMMs, so it is off except where a profile is wanted.
	Profile bool
}

// Engine runs GEMMs with one chosen variant on a worker pool. It is built
// once by New, never changes afterwards, and is safe for concurrent use.
type Engine struct {
	variant  Variant
	epilogue EpilogueFunc // variant.Epilogue, or epilogueGo
	why      string       // how the variant was chosen
	costs    blockCosts
	finish   FinishOrder // Options.FinishOrder or SQC_FINISH_ORDER
	finishBy string      // what forced finish ("": the model's order)
	prof     *profiler   // Options.Profile (nil: no timing)
	pool     *pool.Pool
	ownPool  bool
	// scratch[w] is worker w's s32 macro-block (scratchElems int32), reused
	// by every task that worker runs.
	scratch [][]int32
	tasks   pool.FreeList[gemmCall] // so that GEMM does not allocate
}

// New builds an Engine: it picks the variant (see Options and EnvISA),
// starts or adopts the worker pool and allocates the per-worker scratch.
func New(opts Options) (*Engine, error) {
	v, why, err := chooseVariant(opts)
	if err != nil {
		return nil, err
	}
	finish, finishBy, err := chooseFinishOrder(opts)
	if err != nil {
		return nil, err
	}
	e := &Engine{variant: v, epilogue: v.Epilogue, why: why, costs: costsFor(v.ISA), finish: finish, finishBy: finishBy, pool: opts.Pool}
	if e.epilogue == nil {
		e.epilogue = epilogueGo
	}
	if opts.Profile {
		e.prof = &profiler{}
	}
	if e.pool == nil {
		e.pool, e.ownPool = pool.New(opts.Threads), true
	}
	e.scratch = make([][]int32, e.pool.Workers())
	for w := range e.scratch {
		e.scratch[w] = make([]int32, scratchElems)
	}
	e.tasks.New = func() *gemmCall {
		t := &gemmCall{e: e}
		t.run = t.block // bound once: passing it to Run does not allocate
		return t
	}
	return e, nil
}

// Close stops the Engine's own pool (not a shared one). GEMM still works
// afterwards, on the caller's goroutine only.
func (e *Engine) Close() {
	if e.ownPool {
		e.pool.Close()
	}
}

// Variant returns the variant the Engine runs.
func (e *Engine) Variant() Variant { return e.variant }

// FusedEpilogue reports whether the Engine applies the epilogue inside the
// kernel call (the AMX kernel does, unless Options.SeparateEpilogue or
// SQC_EPILOGUE=separate), pipelined or per block (SQC_EPILOGUE=block).
func (e *Engine) FusedEpilogue() bool { return e.variant.fusedBlock != nil }

// ISA returns the family of the Engine's variant.
func (e *Engine) ISA() ISA { return e.variant.ISA }

// Threads returns the number of workers GEMM spreads over.
func (e *Engine) Threads() int { return e.pool.Workers() }

// Describe says which variant runs and why, e.g. "vnni (SQC_ISA=amx not
// available (CPU features: avx2 avx512 vnni)), 2 threads".
func (e *Engine) Describe() string {
	ep := "Go epilogue"
	switch {
	case e.variant.fusedBlock != nil && e.variant.fusedPipelined:
		ep = "assembly epilogue in the kernel call, each 32x32 block's during the next block's tile work"
	case e.variant.fusedBlock != nil:
		ep = "assembly epilogue in the kernel call, per 32x32 block"
	case e.variant.Epilogue != nil:
		ep = "assembly epilogue"
	}
	why := e.why
	switch e.finish {
	case FinishColumnMajor:
		why += ", finished GEMMs column-major (" + e.finishBy + ")"
	case FinishRowMajor:
		why += ", finished GEMMs row-major (" + e.finishBy + ")"
	}
	return fmt.Sprintf("%s kernel, %s (%s), %d threads", e.variant.ISA, ep, why, e.Threads())
}

// GEMM computes out = epilogue(A x W) for the m x K activations a (u8,
// row stride lda >= b.Kp, every row readable up to column b.Kp: see the
// package comment) and the packed weights b, writing ep's output. It
// returns an error wrapping ErrInvalidArgument, and writes nothing, if a
// size, stride or slice length does not fit. m == 0 is a no-op. In steady
// state it does not allocate. It must not be called from inside a Run of
// the Engine's own pool (a shared Options.Pool): the blocks would wait for
// worker ids their caller holds.
func (e *Engine) GEMM(a []uint8, m, lda int, b *PackedB, ep *Epilogue) error {
	if err := checkGEMM(a, m, lda, b, ep); err != nil {
		return err
	}
	if m == 0 {
		return nil
	}
	e.gemmBlocks(e.variant.Kernel, e.variant.fusedBlock, a, m, lda, b, ep, e.plan(m, b, ep))
	return nil
}

// plan is planGEMM for an m-row product with b and ep on e's workers,
// unless Options.FinishOrder or SQC_FINISH_ORDER forces the order of a
// GEMM with a finisher.
func (e *Engine) plan(m int, b *PackedB, ep *Epilogue) blockPlan {
	nblocks, workers := b.Np/NBlock, e.pool.Workers()
	if ep.Finish == nil || e.finish == FinishByModel {
		return planGEMM(m, nblocks, b.Kp, workers, e.costs, ep.Finish != nil)
	}
	rowMajor := e.finish == FinishRowMajor
	mc, nc, _ := planBlocks(m, nblocks, b.Kp, workers, e.costs, rowMajor)
	return blockPlan{mc: mc, nc: nc, rowMajor: rowMajor}
}

// gemmBlocks runs a validated GEMM as planned by pl (pl.nc a multiple of
// NBlock, pl.mc*scratchStride(pl.nc) <= scratchElems) with the given
// kernel (the variant's, or a specialised one of the same ISA) and, when
// set and serving ep, its fused form.
func (e *Engine) gemmBlocks(kernel Kernel, fused fusedBlockFunc, a []uint8, m, lda int, b *PackedB, ep *Epilogue, pl blockPlan) {
	t := e.tasks.Get()
	t.kernel, t.fused = kernel, fused
	// A copy of *ep, so that ep does not escape: a caller's Epilogue
	// literal stays on its stack and GEMM does not allocate.
	t.a, t.m, t.lda, t.b, t.ep = a, m, lda, b, *ep
	t.mc, t.nc, t.rowMajor = pl.mc, pl.nc, pl.rowMajor
	t.nTasks = (b.Np + pl.nc - 1) / pl.nc
	if ep.Finish != nil && t.nTasks > 1 {
		t.rowBlockDone = growCounters(t.rowBlockDone, (m+pl.mc-1)/pl.mc)
	}
	e.pool.Run((m+pl.mc-1)/pl.mc*t.nTasks, t.run)
	t.a, t.b, t.ep, t.kernel, t.fused = nil, nil, Epilogue{}, nil, nil // keep no caller memory alive
	e.tasks.Put(t)
}

// gemmCall is one GEMM call's state, shared by the tasks of its
// macro-blocks.
type gemmCall struct {
	e        *Engine
	run      func(worker, i int)
	kernel   Kernel
	fused    fusedBlockFunc // the variant's, when kernel is its Kernel
	a        []uint8
	m, lda   int
	b        *PackedB
	ep       Epilogue
	mc, nc   int  // macro-block rows and columns (nc a multiple of NBlock)
	rowMajor bool // blocks taken row by row (blockPlan)
	nTasks   int  // macro-blocks along N
	// rowBlockDone[r] counts the finished macro-blocks of row block r,
	// when ep.Finish is set and a row takes more than one block.
	rowBlockDone []atomic.Int32
}

// growCounters returns n counters at zero, reusing c's storage when it is
// large enough.
func growCounters(c []atomic.Int32, n int) []atomic.Int32 {
	if cap(c) < n {
		return make([]atomic.Int32, n)
	}
	c = c[:n]
	for i := range c {
		c[i].Store(0)
	}
	return c
}

// block computes macro-block i on worker w, in column-major order over the
// M x N grid (consecutive blocks share their B strips, which the workers
// then fetch from DRAM once, together, and the kernels' prefetches of the
// strips ahead serve the next blocks), or row-major where the plan says
// (a row block completes, and is finished, while later ones compute; see
// planGEMM). The kernel writes the s32 block into w's scratch, and the
// epilogue turns it into output while it is still in L2. With ep.Finish
// set, the block that completes a row block also finishes those rows.
func (t *gemmCall) block(w, i int) {
	b := t.b
	var m0, n0 int
	if t.rowMajor {
		m0, n0 = i/t.nTasks*t.mc, i%t.nTasks*t.nc
	} else {
		mBlocks := (t.m + t.mc - 1) / t.mc
		m0, n0 = i%mBlocks*t.mc, i/mBlocks*t.nc
	}
	rows := min(t.mc, t.m-m0)
	cols := min(t.nc, b.Np-n0)
	ldc := scratchStride(t.nc)
	c := t.e.scratch[w]
	prof := t.e.prof
	at := prof.start()
	if t.fused == nil || !t.fused(t.a, t.lda, b, c, ldc, &t.ep, m0, n0, rows, cols/NBlock, min(cols, b.N-n0)) {
		t.kernel(&t.a[m0*t.lda], t.lda, &b.Data[n0*b.Kp], b.Kp, &c[0], ldc, rows, cols/NBlock)
		prof.lap(profKernel, &at)
		t.e.epilogue(&t.ep, c, ldc, m0, n0, rows, min(cols, b.N-n0))
		prof.lap(profEpilogue, &at)
	} else {
		prof.lap(profFused, &at)
	}
	if f := t.ep.Finish; f != nil {
		// The worker that completes a row block finishes it. The atomic
		// add orders the other blocks' epilogue writes before the reads of
		// FinishRows (the Go memory model's synchronisation of atomics).
		if t.nTasks == 1 || t.rowBlockDone[m0/t.mc].Add(1) == int32(t.nTasks) {
			f.FinishRows(w, m0, rows)
			prof.lap(profFinish, &at)
		}
	}
	prof.done()
}

// checkGEMM validates every argument of GEMM, so that neither the kernel
// nor the epilogue can touch memory outside the slices they are given.
func checkGEMM(a []uint8, m, lda int, b *PackedB, ep *Epilogue) error {
	if err := b.Validate(); err != nil {
		return err
	}
	if m < 0 {
		return invalid("GEMM: m = %d", m)
	}
	if lda < b.Kp {
		return invalid("GEMM: lda = %d < Kp = %d (A rows must be readable up to K rounded up to %d)", lda, b.Kp, KBlock)
	}
	if ep == nil {
		return invalid("GEMM: nil Epilogue")
	}
	if m == 0 {
		return nil
	}
	if need := (m-1)*lda + b.Kp; len(a) < need {
		return invalid("GEMM: A has %d bytes, m=%d rows of stride %d up to Kp=%d need %d", len(a), m, lda, b.Kp, need)
	}
	return checkEpilogue(ep, m, b.N)
}

// checkEpilogue validates ep for an m x n output (m >= 1).
func checkEpilogue(ep *Epilogue, m, n int) error {
	perColumn := func(name string, l int, required bool) error {
		if (l > 0 || required) && l < n {
			return invalid("GEMM: Epilogue.%s has length %d < N = %d", name, l, n)
		}
		return nil
	}
	if err := perColumn("Scale", len(ep.Scale), true); err != nil {
		return err
	}
	if err := perColumn("Bias", len(ep.Bias), ep.Bias != nil); err != nil {
		return err
	}
	if (ep.AZeroPoint != 0 || ep.RowZeroPoint != nil) && ep.ColSum == nil {
		return invalid("GEMM: Epilogue.ColSum is nil but A has a zero point (set it to PackedB.ColSum)")
	}
	if err := perColumn("ColSum", len(ep.ColSum), ep.ColSum != nil); err != nil {
		return err
	}
	if ep.RowScale != nil && len(ep.RowScale) < m {
		return invalid("GEMM: Epilogue.RowScale has length %d < m = %d", len(ep.RowScale), m)
	}
	if ep.RowZeroPoint != nil && len(ep.RowZeroPoint) < m {
		return invalid("GEMM: Epilogue.RowZeroPoint has length %d < m = %d", len(ep.RowZeroPoint), m)
	}
	if ep.Act >= actCount {
		return invalid("GEMM: Epilogue.Act = %d is not an activation", ep.Act)
	}
	matrix := func(name string, l, stride int) error {
		if stride < n {
			return invalid("GEMM: Epilogue.%s stride %d < N = %d", name, stride, n)
		}
		if need := (m-1)*stride + n; l < need {
			return invalid("GEMM: Epilogue.%s has length %d, %d rows of stride %d need %d", name, l, m, stride, need)
		}
		return nil
	}
	if ep.Residual != nil {
		if err := matrix("Residual", len(ep.Residual), ep.ResidualStride); err != nil {
			return err
		}
	} else if ep.MulResidual {
		return invalid("GEMM: Epilogue.MulResidual without a Residual to multiply by")
	}
	switch {
	case (ep.OutF32 != nil) == (ep.OutU8 != nil):
		return invalid("GEMM: Epilogue needs exactly one of OutF32 and OutU8")
	case ep.Act.U8Only() && ep.OutU8 == nil:
		return invalid("GEMM: Epilogue.Act %s needs a u8 output (OutU8)", ep.Act)
	case ep.OutF32 != nil:
		return matrix("OutF32", len(ep.OutF32), ep.OutStride)
	default:
		return matrix("OutU8", len(ep.OutU8), ep.OutStride)
	}
}

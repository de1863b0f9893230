package qgemm

// Macro-blocking: the driver cuts the m x Np output into macro-blocks of
// mc rows x nc columns, one kernel call plus one epilogue call each, spread
// over the pool's workers.
//
// Every kernel keeps a few rows of A resident while it sweeps the block's
// N-blocks (AMX: 32 rows against pairs of B strips; VNNI: 8 rows against
// groups of 3 strips, N-groups outermost), so the block's B strips should
// stay in L2 and its A rows, ideally, in L1d. A call should carry tens of
// microseconds of work, because its fixed costs (AMX LDTILECFG ~100 ns,
// epilogue set-up, the pool's hand-off) are paid per block. Measured with
// the VNNI kernel (Zen 5, K=768): 32-64 rows x all of N = 768 beat 256 x
// 256 by 0-7%; the differences among shapes that fit are within a few
// per cent.

const (
	// l1dBytes is the L1 data cache of one core (Emerald Rapids, Zen 5).
	// A block whose A rows (mc x Kp bytes) fit is cheaper: the kernel
	// re-reads them once per N group.
	l1dBytes = 48 << 10

	// bPanelBudget bounds the B strips of one block (nc x Kp bytes): half
	// of a 2 MiB L2 (Sapphire/Emerald Rapids), leaving room for the A rows,
	// the s32 block, the output rows and what the prefetchers bring in. On
	// a 1 MiB L2 (Zen 4/5) it is the whole cache: not retuned there, since
	// the blocks that reach it are the wide ones of small M, whose B strips
	// stream through once per block anyway.
	bPanelBudget = 1 << 20

	// scratchElems is the size of each worker's s32 block in int32 (256
	// KiB, in L2): mc x scratchStride(nc) never exceeds it.
	scratchElems = 64 << 10

	// mcMax bounds a block's rows (the scratch bounds it too).
	mcMax = 512

	// mcAlign is the row granule of a block: two AMX tile rows (the AMX
	// kernel's 32-row blocks) and four VNNI 8-row groups.
	mcAlign = 32

	// aOutsideL1Penalty is the modelled slowdown of a block whose A rows
	// do not fit L1d (5%, from the VNNI measurements above).
	aOutsideL1Penalty = 1.05

	// tailShare is the modelled idle time at the end of a parallel GEMM,
	// as a share of one block's compute. Workers take blocks dynamically,
	// but they do not start together (a helper joins a few µs after the
	// caller, much later if it was asleep) nor run at the same speed (the
	// other vCPU may be serving interrupts or another process), so the last
	// block to finish typically ends about half a block after the others.
	// Without this term a product of two big blocks on two workers (one
	// round) looks as good as 16 small ones (eight rounds). Measured at M =
	// 128 on Zen 5 with the VNNI kernel (one core), CPU per product varies
	// by at most 2-3% (noise) from 64 x 768 to 128 x 48 blocks, while
	// two-block splits left a worker idle for up to a whole block. At
	// bert-base's M = 128 on 2 workers the plan is now 16-32 blocks such as
	// 64 x 192 (A rows 64 x 768 = 48 KiB, in L1d; B strips 192 x 768 = 144
	// KiB, in a 1 MiB L2) instead of 2-8 blocks of 64 x 768.
	tailShare = 0.5

	// maxFinishTail is the largest modelled end tail of finishes, as a
	// share of the plain GEMM, for which planGEMM keeps column-major order
	// with an Epilogue.Finish, where rows are too wide for full-row blocks
	// (planFinishOrder; BERT's 768 and 1024 columns are not). Measured
	// with BenchmarkLinearLayerNorm (VNNI, 2 workers, Zen 5, 6 paired
	// rounds each; N = 768, tail share in brackets), column-major against
	// row-major: M = 1024, K = 3072 (0.06)
	// 7% faster; M = 128, K = 3072 (0.06) 7%; M = 32, K = 3072 (0.05) 5-8%;
	// M = 800, K = 3072 (0.07) the same within 2%; M = 128, K = 768 (0.22)
	// 10% faster; M = 1024, K = 768 (0.24) 5%; but M = 800, K = 768 (0.29)
	// 4% slower and M = 32, K = 768 (0.39) 10% slower. The AMX kernels'
	// shapes model at 0.22-3.9 (the tiles are 5x faster, the finish is
	// not), nearly all row-major as before; not measured on AMX.
	maxFinishTail = 0.25

	// planSpan bounds how many splits beyond the minimum the planner tries
	// along each dimension, so planning stays around a microsecond.
	planSpan = 16
)

// blockCosts model one macro-block in units of the variant's
// multiply-adds, for comparing block shapes.
type blockCosts struct {
	// macsPerCall is the fixed cost of a block (kernel entry, epilogue
	// set-up, the pool's hand-off), about 1 us of the kernel's work.
	macsPerCall float64
	// macsPerBByte is the cost of bringing one byte of a block's B strips
	// into the core (from L2 or L3; every block reads its strips at least
	// once), at ~250 GB/s: what makes short, wide blocks that re-read all
	// of B for a few rows dear. Measured at M = 128, K = 3072, N = 768
	// (VNNI, one core): 16 x 256 blocks, 18 MiB of B reads, took 627 µs;
	// 64 x 96 and 128 x 48, 2-5 MiB, 582 µs.
	macsPerBByte float64
	// macsPerFinishElem is the cost of an Epilogue.Finish per output
	// element: the LayerNorm nn.LinearLayerNorm runs there, about 0.65 ns
	// per element (a LayerNormDual row of 768 columns in ~0.5 µs on one
	// Zen 5 core). A row-major plan with a finisher pays the last row
	// block's finish alone, after every other block is done, so it prefers
	// short blocks; a column-major one pays every row block's finish at the
	// end (planGEMM). Measured at M = 1024, N = 768, K = 3072 (VNNI, 2
	// workers), the row-major plan without this term (256 x 48) made the
	// fused LayerNorm 4% slower than a separate one. Since LayerNorm
	// normalises in float32 (2026-12-06) its row takes about 0.2-0.25 µs,
	// but 0.3 ns here, which picks 32 x 192 instead of 16 x 384 at M = 128,
	// K = 768, made BenchmarkLinearLayerNorm 1-2% slower there (2 workers,
	// 4 paired rounds), so the term stays as fitted: it stands for the
	// finish's wait as much as for its work.
	macsPerFinishElem float64
}

// costsFor returns the block cost model of a kernel family, from the
// sustained rates per core in /work/shared/notes/isa-facts.md: AMX ~1.5e12
// MAC/s, VNNI ~3e11, AVX2 ~6.5e10, pure Go ~5e9.
func costsFor(isa ISA) blockCosts {
	const callSec = 1e-6
	const bByteSec = 1 / 250e9
	const finishElemSec = 0.65e-9
	rate := 5e9
	switch isa {
	case ISAAMX:
		rate = 1.5e12
	case ISAVNNI:
		rate = 3e11
	case ISAAVX2:
		rate = 6.5e10
	}
	return blockCosts{macsPerCall: rate * callSec, macsPerBByte: rate * bByteSec, macsPerFinishElem: rate * finishElemSec}
}

// scratchStride is the s32 block's row stride (int32) for nc columns: nc,
// plus one cache line when rows would be a multiple of 4 KiB apart, so that
// the 16 rows of a stored C tile do not all map to one L1 set.
func scratchStride(nc int) int {
	if nc*4%4096 == 0 {
		return nc + NBlock
	}
	return nc
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// planBlocks chooses the macro-block shape (mc rows, nc columns, nc a
// multiple of NBlock) for an m x (nblocks*16) product of depth kp on
// workers workers. Among shapes whose s32 block fits the scratch and whose
// B strips fit bPanelBudget, it minimises the modelled time of the slowest
// worker, rounds x (compute + fixed cost) with rounds = ceil(blocks /
// workers), plus, with finish (an Epilogue.Finish run in row-major order),
// the finish of the last row block; ties go to fewer blocks, then to wider
// ones. It returns that modelled time too, in multiply-adds.
func planBlocks(m, nblocks, kp, workers int, cost blockCosts, finish bool) (mc, nc int, modelled float64) {
	pMin := ceilDiv(m, mcMax)
	qMin := max(1, ceilDiv(nblocks*NBlock*kp, bPanelBudget))
	pMax, qMax := ceilDiv(m, min(m, NBlock)), nblocks

	bestCost, bestBlocks := 0.0, 0
	prevRows := 0
	for p := pMin; p <= min(pMin+planSpan, pMax); p++ {
		rows := ceilDiv(m, p)
		if rows > mcAlign {
			rows = min(RoundUp(rows, mcAlign), m)
		}
		if rows == prevRows {
			continue
		}
		prevRows = rows
		mBlocks := ceilDiv(m, rows)
		penalty := 1.0
		if rows*kp > l1dBytes {
			penalty = aOutsideL1Penalty
		}
		prevCols := 0
		for q := qMin; q <= min(qMin+planSpan, qMax); q++ {
			colBlocks := ceilDiv(nblocks, q)
			if colBlocks == prevCols {
				continue
			}
			prevCols = colBlocks
			cols := colBlocks * NBlock
			if rows*scratchStride(cols) > scratchElems || cols*kp > bPanelBudget {
				continue
			}
			blocks := mBlocks * ceilDiv(nblocks, colBlocks)
			rounds := ceilDiv(blocks, workers)
			compute := float64(RoundUp(rows, NBlock)*cols*kp) * penalty
			t := float64(rounds) * (compute + cost.macsPerCall + float64(cols*kp)*cost.macsPerBByte)
			if workers > 1 {
				t += tailShare * compute
			}
			if finish {
				t += float64(rows*nblocks*NBlock) * cost.macsPerFinishElem
			}
			if mc == 0 || t < bestCost || (t == bestCost && (blocks < bestBlocks || blocks == bestBlocks && cols > nc)) {
				mc, nc, bestCost, bestBlocks = rows, cols, t, blocks
			}
		}
	}
	if mc == 0 { // nothing fits (huge K): the smallest block always does
		mc, nc = min(m, mcAlign), NBlock
	}
	return mc, nc, bestCost
}

// blockPlan is how a GEMM call is cut and ordered: macro-blocks of mc rows
// x nc columns, taken column-major over the M x N grid (consecutive blocks
// share their B strips), or row-major when rowMajor is set.
type blockPlan struct {
	mc, nc   int
	rowMajor bool
}

// planGEMM plans an m x (nblocks*16) product of depth kp on workers
// workers; finish says whether it has an Epilogue.Finish.
//
// Without one the blocks go column-major, shaped by planBlocks. With one,
// each row block is finished by the worker that completes it, and the
// plan decides when that happens and where the rows are. Where a block of
// the full width fits the scratch (fullRowRows), every block is a whole
// row block: the worker that computes it finishes it at once, from its
// own caches, while the others compute. Otherwise (very wide rows) the
// order decides. Column-major keeps the plain GEMM's shape and order, but
// every row block completes in the last column, so all the finishes come
// at the end: modelled as ceil(row blocks / workers) row blocks' finishes
// per worker after the last block. Row-major finishes each row block
// while later ones compute, leaving only the last one's finish, but needs
// short blocks (planBlocks with finish), which re-read B once per row
// block and run the kernel at a lower rate. So column-major is taken when
// that end tail is at most maxFinishTail of the plain GEMM's modelled
// time. Both leave a row block's columns to whichever workers took them,
// so its finish reads what other cores wrote.
func planGEMM(m, nblocks, kp, workers int, cost blockCosts, finish bool) blockPlan {
	if !finish {
		mc, nc, _ := planBlocks(m, nblocks, kp, workers, cost, false)
		return blockPlan{mc: mc, nc: nc}
	}
	if rows, ok := fullRowRows(m, nblocks, workers); ok {
		return blockPlan{mc: rows, nc: nblocks * NBlock}
	}
	return planFinishOrder(m, nblocks, kp, workers, cost)
}

// planFinishOrder is planGEMM's choice of order for a GEMM with a finisher
// whose rows are too wide for full-row blocks.
func planFinishOrder(m, nblocks, kp, workers int, cost blockCosts) blockPlan {
	mc, nc, modelled := planBlocks(m, nblocks, kp, workers, cost, false)
	tail := float64(ceilDiv(ceilDiv(m, mc), workers)*mc*nblocks*NBlock) * cost.macsPerFinishElem
	if tail <= maxFinishTail*modelled {
		return blockPlan{mc: mc, nc: nc}
	}
	mc, nc, _ = planBlocks(m, nblocks, kp, workers, cost, true)
	return blockPlan{mc: mc, nc: nc, rowMajor: true}
}

// fullRowRows returns the rows of a GEMM's full-width blocks (planGEMM):
// as many as the s32 scratch holds at that width, a multiple of mcAlign,
// but no more than an even share of the m rows among the workers, so
// that every worker has a block to take (16 rows each at m = 32 on 2
// workers); false where not even mcAlign rows of the full width fit
// (rows of 2048 columns or more), or, when m < mcAlign, not all m.
//
// Measured against the order rule it replaced for BERT-base's two
// LayerNorms (N = 768: 64-row blocks) on Zen 5 (VNNI, 2 threads, sqc bench
// workers interleaved, 8 paired rounds, 2026-12-06): the whole pass at
// 1x128 0.95x (faster in 8 of 8 rounds), 8x128 0.97x, 32x25 0.97x. sqc
// roofline's split of the attention-output GEMM with its LayerNorm was
// kernel 64%, epilogue 15%, LayerNorm 21% before: the rows a worker
// normalised had mostly been written by the other core.
func fullRowRows(m, nblocks, workers int) (int, bool) {
	fit := scratchElems / scratchStride(nblocks*NBlock)
	if fit < min(m, mcAlign) {
		return 0, false
	}
	rows := min(fit, ceilDiv(m, max(workers, 1)))
	if rows > mcAlign {
		rows = rows / mcAlign * mcAlign
	}
	return rows, true
}

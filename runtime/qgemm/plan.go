package qgemm

// Macro-blocking: the driver cuts the m x Np output into macro-blocks of
// mc rows x nc columns, one kernel call plus one epilogue call each, spread
// over the pool's workers. A block's working set (A rows, B strips, the
// s32 block and its output) should stay in the worker's L2, and a call
// should carry tens of microseconds of work, because the fixed costs of a
// call (AMX LDTILECFG ~100 ns, epilogue set-up, scheduling) and of bringing
// A and B into L2 are paid once per block.

const (
	// l2Budget is the part of a core's L2 (2 MiB on Emerald Rapids and
	// Zen 5) a macro-block's working set may fill: the A rows (mc x Kp), the
	// B strips (nc x Kp), the s32 block and the output/residual block. The
	// other half is left to what the hardware prefetchers bring in, the
	// next block's first lines and whatever else runs.
	l2Budget = 1 << 20

	// scratchElems is the size of each worker's s32 block in int32 (256
	// KiB, in L2): mc x scratchStride(nc) never exceeds it.
	scratchElems = 64 << 10

	// mcMax and ncMax bound a block's rows and columns (also through
	// l2Budget and scratchElems).
	mcMax = 512
	ncMax = 1024

	// mcAlign is the row granule of a block: two AMX tile rows (the AMX
	// kernel's 32-row blocks) and four VNNI 8-row groups.
	mcAlign = 32

	// planSpan bounds how many splits beyond the cache-forced minimum the
	// planner tries along each dimension, so planning stays well under a
	// microsecond for small products.
	planSpan = 12
)

// blockCosts model one macro-block in units of the variant's
// multiply-adds, for comparing block shapes.
type blockCosts struct {
	// macsPerByte: multiply-adds the kernel does in the time one byte of A
	// or B arrives in L2 from L3 or DRAM (~20 GB/s per core).
	macsPerByte float64
	// macsPerCall: fixed cost of a block (kernel entry, epilogue set-up,
	// the pool's hand-off), about 1 us.
	macsPerCall float64
}

// costsFor returns the block cost model of a kernel family, from the
// sustained rates per core in /work/shared/notes/isa-facts.md: AMX ~1.5e12
// MAC/s, VNNI ~3e11, AVX2 ~6.5e10, pure Go ~5e9.
func costsFor(isa ISA) blockCosts {
	const bytesPerSec, callSec = 20e9, 1e-6
	rate := 5e9
	switch isa {
	case ISAAMX:
		rate = 1.5e12
	case ISAVNNI:
		rate = 3e11
	case ISAAVX2:
		rate = 6.5e10
	}
	return blockCosts{macsPerByte: rate / bytesPerSec, macsPerCall: rate * callSec}
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
// workers workers. It minimises the modelled time of the slowest worker:
// rounds x (compute + A/B traffic + fixed cost), where rounds =
// ceil(blocks / workers), among shapes that fit l2Budget and the scratch;
// ties go to fewer blocks.
func planBlocks(m, nblocks, kp, workers int, cost blockCosts) (mc, nc int) {
	// Start from the largest blocks; l2Budget and the scratch then rule
	// out the shapes that are too big.
	pMin, qMin := ceilDiv(m, mcMax), ceilDiv(nblocks, ncMax/NBlock)
	pMax, qMax := ceilDiv(m, min(m, NBlock)), nblocks

	bestCost, bestBlocks, bestFoot := 0.0, 0, 0
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
		prevCols := 0
		for q := qMin; q <= min(qMin+planSpan, qMax); q++ {
			colBlocks := ceilDiv(nblocks, q)
			if colBlocks == prevCols {
				continue
			}
			prevCols = colBlocks
			cols := colBlocks * NBlock
			if rows*scratchStride(cols) > scratchElems {
				continue
			}
			blocks := mBlocks * ceilDiv(nblocks, colBlocks)
			rounds := ceilDiv(blocks, workers)
			compute := float64(RoundUp(rows, NBlock) * cols * kp)
			traffic := cost.macsPerByte * float64((rows+cols)*kp)
			t := float64(rounds) * (compute + traffic + cost.macsPerCall)
			foot := (rows+cols)*kp + rows*cols*8
			if foot > l2Budget {
				// Over budget: A and B are re-read from L3 while the
				// kernel sweeps the block; count them twice more.
				t += float64(rounds) * 2 * traffic
			}
			if mc == 0 || t < bestCost || (t == bestCost && blocks < bestBlocks) ||
				(t == bestCost && blocks == bestBlocks && foot < bestFoot) {
				mc, nc, bestCost, bestBlocks, bestFoot = rows, cols, t, blocks, foot
			}
		}
	}
	if mc == 0 { // nothing fits the scratch: the smallest block always does
		mc, nc = min(m, mcAlign), NBlock
	}
	return mc, nc
}

package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/kernels"
)

// Tile register assignment of the AMX kernel: a 2x2 block of C tiles (32
// rows x 32 columns of int32), two A tiles (16 rows x 64 K bytes each) and
// two B tiles (16 K-groups x 16 columns x 4 bytes each).
const (
	tileC00, tileC01, tileC10, tileC11 = 0, 1, 2, 3
	tileA0, tileA1                     = 4, 5
	tileB0, tileB1                     = 6, 7
)

func tileC(i, j int) int { return 2*i + j }
func tileA(i int) int    { return tileA0 + i }
func tileB(j int) int    { return tileB0 + j }

// tileOps emits tile operations. realTiles emits the AMX instructions;
// emuTiles emits AVX512-VNNI (or AVX2) code that emulates them on a tile
// file in the stack frame, so that the AMX kernel's loops, addressing, tail
// configurations and stores can be tested bit for bit on CPUs without AMX.
type tileOps interface {
	begin()                         // called once the function exists
	ldTileCfg(cfg reg.GPVirtual)    // LDTILECFG [cfg]
	tileRelease()                   // TILERELEASE
	tileZero(t int)                 // TILEZERO tmm(t)
	tileLoad(t int, m operand.Mem)  // TILELOADD tmm(t), [m] (m.Index = row stride)
	tileStore(m operand.Mem, t int) // TILESTORED [m], tmm(t)
	tdpbusd(c, a, b int)            // TDPBUSD tmm(c), tmm(a), tmm(b)
	attributes() attr.Attribute
}

type realTiles struct{ g *gen }

func (r realTiles) begin()                         {}
func (r realTiles) ldTileCfg(cfg reg.GPVirtual)    { r.g.amxLdTileCfg(cfg) }
func (r realTiles) tileRelease()                   { r.g.amxTileRelease() }
func (r realTiles) tileZero(t int)                 { r.g.amxTileZero(t) }
func (r realTiles) tileLoad(t int, m operand.Mem)  { r.g.amxTileLoadD(t, m) }
func (r realTiles) tileStore(m operand.Mem, t int) { r.g.amxTileStoreD(m, t) }
func (r realTiles) tdpbusd(c, a, b int)            { r.g.amxTDPBUSD(c, a, b) }

// The real kernel's frame is small (two tile configs and a few saved
// loop variables), so it needs no stack-split check.
func (r realTiles) attributes() attr.Attribute { return attr.NOSPLIT }

// emuTiles keeps eight 1 KiB tiles and the 64-byte tile config in the
// stack frame. Every tile has 64 bytes per row in this kernel, so only the
// row counts of the config are read.
type emuTiles struct {
	g *gen
	// avx2 emits AVX2 code (ymm moves; TDPBUSD as the AVX2 kernel's exact
	// VPMADDWD pair sums) instead of AVX512-VNNI, so that the AMX kernel's
	// loops are tested on CPUs with neither AMX nor AVX-512 too.
	avx2  bool
	tiles operand.Mem // 8 x 16 rows x 64 bytes
	cfg   operand.Mem // copy of the last loaded config
}

func newEmuTiles(g *gen) *emuTiles     { return &emuTiles{g: g} }
func newEmuTilesAVX2(g *gen) *emuTiles { return &emuTiles{g: g, avx2: true} }

// copyRow copies one 64-byte tile row (or config) from src to dst.
func (e *emuTiles) copyRow(src, dst operand.Mem) {
	if !e.avx2 {
		z := e.g.ZMM()
		e.g.VMOVDQU64(src, z)
		e.g.VMOVDQU64(z, dst)
		return
	}
	for h := 0; h < 64; h += 32 {
		y := e.g.YMM()
		e.g.VMOVDQU(src.Offset(h), y)
		e.g.VMOVDQU(y, dst.Offset(h))
	}
}

func (e *emuTiles) begin() {
	e.tiles = e.g.AllocLocal(8 * 1024)
	e.cfg = e.g.AllocLocal(64)
}

func (e *emuTiles) attributes() attr.Attribute { return 0 }

func (e *emuTiles) tile(t, off int) operand.Mem { return e.tiles.Offset(t*1024 + off) }

func (e *emuTiles) rows(t int) reg.GPVirtual {
	r := e.g.GP64()
	e.g.MOVBQZX(e.cfg.Offset(48+t), r)
	return r
}

// ldTileCfg copies the config after checking what the hardware would
// fault on (or what this kernel never means to set): palette 1, start row
// 0, reserved bytes 0, tiles 0-7 of 64 bytes x 1..16 rows, tiles 8-15
// unused. A bad config executes UD2, like the #GP of a real LDTILECFG.
func (e *emuTiles) ldTileCfg(cfg reg.GPVirtual) {
	g := e.g
	bad, ok := g.NewLabel("emu_badcfg"), g.NewLabel("emu_cfgok")
	x := g.GP64()
	for _, c := range []struct {
		off  int
		want uint64
	}{{0, 1}, {8, 0}, {16, 0x0040004000400040}, {24, 0x0040004000400040}, {32, 0}, {40, 0}, {56, 0}} {
		w := g.GP64()
		g.MOVQ(operand.U64(c.want), w)
		g.CMPQ(operand.Mem{Base: cfg, Disp: c.off}, w)
		g.JNE(operand.LabelRef(bad))
	}
	for t := 0; t < 8; t++ {
		g.MOVBQZX(operand.Mem{Base: cfg, Disp: 48 + t}, x)
		g.DECQ(x) // rows-1 must be in 0..15
		g.CMPQ(x, operand.U8(15))
		g.JA(operand.LabelRef(bad))
	}
	g.JMP(operand.LabelRef(ok))
	g.Label(bad)
	g.UD2()
	g.Label(ok)
	e.copyRow(operand.Mem{Base: cfg}, e.cfg)
}

func (e *emuTiles) tileRelease() {}

func (e *emuTiles) tileZero(t int) {
	if e.avx2 {
		y := e.g.YMM()
		e.g.ZeroVec(y)
		for off := 0; off < 1024; off += 32 {
			e.g.VMOVDQU(y, e.tile(t, off))
		}
		return
	}
	z := e.g.ZMM()
	e.g.ZeroVec(z)
	for r := 0; r < 16; r++ {
		e.g.VMOVDQU64(z, e.tile(t, 64*r))
	}
}

// rowLoop emits: for off := 0; rows > 0; rows--, off += 64 { body(off) }.
func (e *emuTiles) rowLoop(rows reg.GPVirtual, body func(off reg.GPVirtual)) {
	g := e.g
	off := g.GP64()
	g.XORQ(off, off)
	top, done := g.NewLabel("emu_row"), g.NewLabel("emu_row_done")
	g.Label(top)
	g.TESTQ(rows, rows)
	g.JZ(operand.LabelRef(done))
	body(off)
	g.ADDQ(operand.U8(64), off)
	g.DECQ(rows)
	g.JMP(operand.LabelRef(top))
	g.Label(done)
}

func (e *emuTiles) tileLoad(t int, m operand.Mem) {
	g := e.g
	e.tileZero(t) // rows past the configured count read as zero
	ptr := g.GP64()
	g.LEAQ(operand.Mem{Base: m.Base, Disp: m.Disp}, ptr)
	e.rowLoop(e.rows(t), func(off reg.GPVirtual) {
		e.copyRow(operand.Mem{Base: ptr}, e.tile(t, 0).Idx(off, 1))
		g.ADDQ(m.Index, ptr)
	})
}

func (e *emuTiles) tileStore(m operand.Mem, t int) {
	g := e.g
	ptr := g.GP64()
	g.LEAQ(operand.Mem{Base: m.Base, Disp: m.Disp}, ptr)
	e.rowLoop(e.rows(t), func(off reg.GPVirtual) {
		e.copyRow(e.tile(t, 0).Idx(off, 1), operand.Mem{Base: ptr})
		g.ADDQ(m.Index, ptr)
	})
}

// tdpbusd checks the shape rules the hardware enforces with #UD (rows of
// C and A equal; colsb and B's rows are 64 and 16 by the config check),
// then computes C += A . B row by row with VPDPBUSD (or tdpbusdAVX2).
func (e *emuTiles) tdpbusd(c, a, b int) {
	g := e.g
	rows, rowsA := e.rows(c), e.rows(a)
	ok := g.NewLabel("emu_shapeok")
	g.CMPQ(rows, rowsA)
	g.JE(operand.LabelRef(ok))
	g.UD2()
	g.Label(ok)
	rowsB := e.rows(b)
	okB := g.NewLabel("emu_shapeok")
	g.CMPQ(rowsB, operand.U8(16))
	g.JE(operand.LabelRef(okB))
	g.UD2()
	g.Label(okB)
	if e.avx2 {
		e.tdpbusdAVX2(rows, c, a, b)
		return
	}
	e.rowLoop(rows, func(off reg.GPVirtual) {
		acc := g.ZMM()
		g.VMOVDQU32(e.tile(c, 0).Idx(off, 1), acc)
		for k := 0; k < 16; k++ {
			u8 := g.ZMM()
			g.VPBROADCASTD(e.tile(a, 4*k).Idx(off, 1), u8)
			g.VPDPBUSD(e.tile(b, 64*k), u8, acc)
		}
		g.VMOVDQU32(acc, e.tile(c, 0).Idx(off, 1))
	})
}

// tdpbusdAVX2 is tdpbusd's arithmetic in AVX2, as the AVX2 kernel does it
// (exact: see genAVX2Kernel): per C row, 16 K-groups of VPMADDWD pair sums
// in four ymm (columns 4q..4q+3 in acc[q]), folded by VPHADDD and added to
// the row. Integer addition wraps in any order, so the bits are TDPBUSD's.
// The K-groups are a loop, not unrolled, to keep the test-only kernel small.
func (e *emuTiles) tdpbusdAVX2(rows reg.GPVirtual, c, a, b int) {
	g := e.g
	e.rowLoop(rows, func(off reg.GPVirtual) {
		var acc [4]reg.VecVirtual
		for q := range acc {
			acc[q] = g.YMM()
			g.ZeroVec(acc[q])
		}
		ap, bp, k := g.GP64(), g.GP64(), g.GP64()
		g.LEAQ(e.tile(a, 0).Idx(off, 1), ap)
		g.LEAQ(e.tile(b, 0), bp)
		g.MOVQ(operand.U32(16), k)
		top := g.NewLabel("emu_kgroup")
		g.Label(top)
		xa := g.XMM()
		g.VPBROADCASTD(operand.Mem{Base: ap}, xa)
		ya := g.YMM()
		g.VPMOVZXBW(xa, ya) // a0..a3 of this K-group as int16, repeated
		for q := range acc {
			wb, p := g.YMM(), g.YMM()
			g.VPMOVSXBW(operand.Mem{Base: bp, Disp: 16 * q}, wb) // columns 4q..4q+3, k0..k3 each
			g.VPMADDWD(wb, ya, p)
			g.VPADDD(p, acc[q], acc[q])
		}
		g.ADDQ(operand.U8(4), ap)  // next K-group of the A row
		g.ADDQ(operand.U8(64), bp) // next row of the B tile
		g.DECQ(k)
		g.JNZ(operand.LabelRef(top))
		for h := 0; h < 2; h++ {
			// VPHADDD gives columns (0 1 4 5 | 2 3 6 7) of the 8; VPERMQ
			// $0xD8 puts them in order.
			s := g.YMM()
			g.VPHADDD(acc[2*h+1], acc[2*h], s)
			g.VPERMQ(operand.U8(0xD8), s, s)
			dst := e.tile(c, 32*h).Idx(off, 1)
			g.VPADDD(dst, s, s)
			g.VMOVDQU(s, dst)
		}
	})
}

// amxKChunk is the K extent, in bytes, of one pass over the row blocks:
// the A block of one pass (32 rows x 768 bytes = 24 KiB) stays in L1 while
// the kernel sweeps all N pairs, and one pass's B (768 x 16 bytes per
// N-block) stays in L2 across the row blocks. Passes after the first load
// the C tiles back from C (1 KiB each, per 12 K steps of 4 TDPBUSD: <2%).
const amxKChunk = 768

// amxEpi is where an AMX kernel's output goes through the epilogue.
type amxEpi int

const (
	// amxEpiNone: the kernel leaves s32 in C; the driver runs the epilogue.
	amxEpiNone amxEpi = iota
	// amxEpiBlock: the epilogue per 32x32 block, right after its tiles.
	amxEpiBlock
	// amxEpiPipelined: each block's epilogue during the next block's K
	// loop (setPieceRows).
	amxEpiPipelined
)

// suffix is the kernel name's suffix for e.
func (e amxEpi) suffix() string { return [...]string{"", "Fused", "Pipelined"}[e] }

// amxState holds the stack slots of the AMX kernel's outer loops. Keeping
// them in memory leaves the K loop all the registers it needs (and the
// emulation the few more it needs); they are touched once per 32x32 block.
type amxState struct {
	koff, ksteps operand.Mem // K offset (bytes) and 64-byte K steps of this pass
	a, c         operand.Mem // A (at koff) and C of the current 32-row block
	mblocks      operand.Mem // full 32-row blocks left
	b, cpair     operand.Mem // B (N pair start, before koff) and C of the current N pair
	npairs       operand.Mem // N pairs left
	fuse         *amxFusion  // the fused kernel's epilogue state; nil in the plain kernel
	prefetch     amxPrefetch // what each K step prefetches of B besides its loads
}

// amxPrefetch is what an AMX kernel's K step prefetches of B, beside the
// tiles it loads. Both kinds are candidates timed on AMX CPUs
// (BenchmarkQGEMM, BenchmarkQGEMMColdWeights) before any variant uses them.
type amxPrefetch int

const (
	amxPrefetchNone amxPrefetch = iota
	// amxPrefetchStep: into L1, the B tiles of the step after next
	// (amxPrefetchAhead); kernel name suffix "Prefetch", bench name amx-pfb.
	amxPrefetchStep
	// amxPrefetchPair: into L2, the B tiles of the next N pair at the same
	// K offset (amxPairAheadShift); suffix "PrefetchPair", bench name amx-pfn.
	amxPrefetchPair
)

// suffix is the kernel name's suffix for p.
func (p amxPrefetch) suffix() string { return [...]string{"", "Prefetch", "PrefetchPair"}[p] }

// amxPrefetchB describes the B prefetch of the kernels generated with it:
// the 2x2 block's K step loads two 1 KiB B tiles that come from L2 (the
// strips of an N pair sweep far more than L1d: 32 columns x kp bytes per
// pair, every pair of the macro-block in turn), 2 KiB per 64 cycles of
// four TDPBUSD, about 32 B/cycle, near what L2 delivers to one core
// (isa-facts.md: 102-112 GB/s at ~2.6 GHz). The TILELOADDs then wait on
// L2 latency, where tiles already in L1 would let the TDPBUSDs run at the
// register peak (isa-facts.md: 4 tile loads from L1 per 4 TDPBUSD reach
// it). So each step prefetches, 8 lines after each TDPBUSD, the 32 lines
// of the two B tiles one step beyond the ones it loads: 2 KiB ahead per
// strip, 4 KiB in all, well inside L1d. Prefetches never fault, so those
// past the end of a pass's strips are harmless. Whether it pays can only
// be measured on an AMX CPU: BenchmarkQGEMM times it as amx-pfb beside
// amx.
const amxPrefetchAhead = 1024 // bytes beyond the tile a step loads: one K step

// amxPairAheadShift sets the other B prefetch's distance, kp << 5 = 32 x kp
// bytes: one N pair, two strips of kp x 16 bytes. That prefetch is for B
// that comes from DRAM or L3: at one sequence (M = 128) each GEMM's
// weights are read once per pass, and BERT-base's 85 MB of them exceed a
// 32 MiB L3 (and fill most of a 105 MiB one), so the first 32-row sweep
// of a macro-block waits on memory for every B tile (the second finds
// them in L2). Prefetching its B strips ahead cut the VNNI kernel's
// cold-weight penalty at M = 128 from 14-44% to 8-13% (README); this is
// the AMX kernel's form of it. Each K step prefetches with PREFETCHT1 the tiles
// the block of the next N pair will load at the same step: 16 lines per
// strip at 32 x kp bytes beyond the ones it loads (two strips of kp x 16
// bytes), about 12 K steps (~800 cycles at kp = 768) before they are
// needed, 2 KiB per step, which is B's whole stream: the next pair's B is
// in L2 when its block starts. Past the last pair of a macro-block it
// prefetches the first pair of the next one (strips are contiguous), which
// column-major block order hands out next. Prefetches never fault.
const amxPairAheadShift = 5

// genAMXKernel emits an AMX Kernel (see runtime/qgemm/api.go).
//
// Design: C is computed in 32x32 blocks held in four C tiles (2x2). K is
// cut into passes of amxKChunk bytes; each pass sweeps the row blocks, and
// for each 32-row block all N pairs, so the 32-row A block of a pass stays
// in L1 while B streams from L2 (B is packed as contiguous 1 KiB tiles).
// In the K loop each A and B tile is reloaded right after its last use in
// the current step (software pipelining), so the loads of step k+1 overlap
// the TDPBUSDs of step k. M tails use a second tile config whose last tile
// row has m%32-16 (or m%16) rows, so no A row >= m is read and no C row >=
// m is written; an odd trailing N-block uses a 2x1 (or 1x1) block.
// LDTILECFG runs on entry, for the M tail, and at the start of the pass
// after an M tail; TILERELEASE before returning.
//
// With epi other than amxEpiNone, the kernel applies the epilogue per
// 32x32 block in the last K pass (amxfused.go); its signature is
// amxFusedSig's.
func genAMXKernel(g *gen, name string, t tileOps, epi amxEpi, prefetch amxPrefetch) {
	fused := epi != amxEpiNone
	g.Function(name)
	if fused {
		// The 4 KiB block buffer puts the frame beyond what a NOSPLIT
		// chain may use; the stack check runs on entry, before any tile
		// state exists.
		g.Attributes(0)
		g.SignatureExpr(amxFusedSig())
	} else {
		g.Attributes(t.attributes())
		g.SignatureExpr(kernels.KernelSig)
	}
	g.Pragma("noescape")
	var fuse *amxFusion
	if fused {
		fuse = newAMXFusion(g, epi == amxEpiPipelined) // first: the epilogue's arguments are at 0(SP)
	}
	if e, emu := t.(*emuTiles); emu {
		isa := "AVX512-VNNI"
		if e.avx2 {
			isa = "AVX2"
		}
		base := "qgemmAMX" + epi.suffix() + prefetch.suffix()
		g.Doc(name+" is "+base+" with every tile instruction emulated by "+isa,
			"code on a tile file in its stack frame: the same loops, addresses, tile configs",
			"and tails, runnable (and testable) on CPUs without AMX. It is for tests only.")
	} else if prefetch == amxPrefetchStep {
		g.Doc(name+" is qgemmAMXPipelined that also prefetches into L1, during each K step,",
			"the B tiles of the step after next (asmgen/qgemm amxPrefetchAhead). Same parameters",
			"and outputs. The caller must hold the AMX tile-data permission (runtime/cpu.Detect).")
	} else if prefetch == amxPrefetchPair {
		g.Doc(name+" is qgemmAMXPipelined that also prefetches into L2, during each K step,",
			"the B tiles of the next N pair at the same K offset (asmgen/qgemm amxPairAheadShift).",
			"Same parameters and outputs. The caller must hold the AMX tile-data permission",
			"(runtime/cpu.Detect).")
	} else if epi == amxEpiBlock {
		g.Doc(name+" is the AMX (TDPBUSD) kernel with the epilogue applied per 32x32 block",
			"in the last K pass (the block's tiles in an L1 buffer, then epilogueAVX512Asm). Its",
			"parameters are Kernel's, then epilogueAVX512Asm's from n on, n being the real",
			"columns of the whole block and the pointers at its origin. The caller must hold",
			"the AMX tile-data permission (runtime/cpu.Detect).")
	} else if fused {
		g.Doc(name+" is qgemmAMXFused with each block's epilogue deferred and applied a few",
			"rows per K step of the next block, so that it runs on the vector units while the",
			"tiles compute; the last block's after the last pass. Same parameters and outputs.",
			"The caller must hold the AMX tile-data permission (runtime/cpu.Detect).")
	} else {
		g.Doc(name+" is the AMX (TDPBUSD) Kernel: 32x32 int32 blocks in a 2x2 of C tiles.",
			"The caller must hold the AMX tile-data permission (runtime/cpu.Detect).")
	}
	t.begin()
	cfg := g.AllocLocal(64)
	cfgTail := g.AllocLocal(64)
	st := amxState{
		koff: g.AllocLocal(8), ksteps: g.AllocLocal(8),
		a: g.AllocLocal(8), c: g.AllocLocal(8), mblocks: g.AllocLocal(8),
		b: g.AllocLocal(8), cpair: g.AllocLocal(8), npairs: g.AllocLocal(8),
		fuse: fuse, prefetch: prefetch,
	}

	g.Comment("Tile config: palette 1; every tile 16 rows x 64 bytes.")
	zero := g.GP64()
	g.XORQ(zero, zero)
	for off := 0; off < 64; off += 8 {
		g.MOVQ(zero, cfg.Offset(off))
	}
	g.MOVB(operand.U8(1), cfg)
	w := g.GP64()
	g.MOVQ(operand.U64(0x0040004000400040), w) // four uint16 colsb = 64
	g.MOVQ(w, cfg.Offset(16))
	g.MOVQ(w, cfg.Offset(24))
	g.MOVQ(operand.U64(0x1010101010101010), w) // eight rows = 16
	g.MOVQ(w, cfg.Offset(48))
	g.Comment("The M-tail config: the same with fewer rows in the tiles of the last tile row.")
	for off := 0; off < 64; off += 8 {
		x := g.GP64()
		g.MOVQ(cfg.Offset(off), x)
		g.MOVQ(x, cfgTail.Offset(off))
	}
	rem := g.Load("m")
	g.ANDQ(operand.U8(31), rem)
	tailDone, tailSmall := g.NewLabel("cfg_tail_done"), g.NewLabel("cfg_tail_small")
	g.JZ(operand.LabelRef(tailDone))
	g.CMPQ(rem, operand.U8(16))
	g.JLE(operand.LabelRef(tailSmall))
	g.SUBQ(operand.U8(16), rem)
	for _, tt := range []int{tileC10, tileC11, tileA1} {
		g.MOVB(rem.As8(), cfgTail.Offset(48+tt))
	}
	g.JMP(operand.LabelRef(tailDone))
	g.Label(tailSmall)
	for _, tt := range []int{tileC00, tileC01, tileA0} {
		g.MOVB(rem.As8(), cfgTail.Offset(48+tt))
	}
	g.Label(tailDone)

	koff := g.GP64()
	g.XORQ(koff, koff)
	g.MOVQ(koff, st.koff)

	kpass, kpassEnd, done := g.NewLabel("kpass"), g.NewLabel("kpass_end"), g.NewLabel("done")
	g.Label(kpass)
	g.Comment("One K pass: ksteps = min(kp - koff, amxKChunk) / 64.")
	koff = g.GP64()
	g.MOVQ(st.koff, koff)
	steps := g.Load("kp")
	g.SUBQ(koff, steps)
	g.JLE(operand.LabelRef(done))
	chunk := g.GP64()
	g.MOVQ(operand.U32(amxKChunk), chunk)
	g.CMPQ(steps, chunk)
	g.CMOVQGT(chunk, steps)
	g.SHRQ(operand.U8(6), steps)
	g.MOVQ(steps, st.ksteps)
	if fuse != nil && fuse.pipelined {
		fuse.setPieceRows(g, steps)
	}
	// LDTILECFG (80-120 ns) in the first pass, and in later ones only if
	// the previous pass ended on the M-tail config.
	cfgLoad, cfgReady := g.NewLabel("cfg_load"), g.NewLabel("cfg_ready")
	g.CMPQ(st.koff, operand.U8(0))
	g.JE(operand.LabelRef(cfgLoad))
	g.TESTQ(operand.U32(31), g.ParamAddr("m"))
	g.JZ(operand.LabelRef(cfgReady))
	g.Label(cfgLoad)
	p := g.GP64()
	g.LEAQ(cfg, p)
	t.ldTileCfg(p)
	g.Label(cfgReady)

	a := g.Load("a")
	g.ADDQ(koff, a)
	g.MOVQ(a, st.a)
	c := g.Load("c")
	g.MOVQ(c, st.c)
	m := g.Load("m")
	g.SHRQ(operand.U8(5), m)
	g.MOVQ(m, st.mblocks)
	if fuse != nil {
		g.MOVQ(operand.U32(0), fuse.epRow)
	}

	mloop, mtail := g.NewLabel("mblock"), g.NewLabel("mtail")
	g.Label(mloop)
	mb := g.GP64()
	g.MOVQ(st.mblocks, mb)
	g.TESTQ(mb, mb)
	g.JZ(operand.LabelRef(mtail))
	g.DECQ(mb)
	g.MOVQ(mb, st.mblocks)
	amxRowBlock(g, t, st, 2)
	a = g.GP64()
	g.MOVQ(st.a, a)
	lda := g.Load("lda")
	g.SHLQ(operand.U8(5), lda) // 32 rows
	g.ADDQ(lda, a)
	g.MOVQ(a, st.a)
	c = g.GP64()
	g.MOVQ(st.c, c)
	ldc := g.Load("ldc")
	g.SHLQ(operand.U8(7), ldc) // 32 rows x 4 bytes
	g.ADDQ(ldc, c)
	g.MOVQ(c, st.c)
	if fuse != nil {
		g.ADDQ(operand.U32(32), fuse.epRow)
	}
	g.JMP(operand.LabelRef(mloop))

	g.Label(mtail)
	g.Comment("M tail of 1..31 rows, with the tail config.")
	rem = g.Load("m")
	g.ANDQ(operand.U8(31), rem)
	g.JZ(operand.LabelRef(kpassEnd))
	p = g.GP64()
	g.LEAQ(cfgTail, p)
	t.ldTileCfg(p)
	small := g.NewLabel("mtail_small")
	g.CMPQ(rem, operand.U8(16))
	g.JLE(operand.LabelRef(small))
	amxRowBlock(g, t, st, 2)
	g.JMP(operand.LabelRef(kpassEnd))
	g.Label(small)
	amxRowBlock(g, t, st, 1)

	g.Label(kpassEnd)
	koff = g.GP64()
	g.MOVQ(st.koff, koff)
	g.ADDQ(operand.U32(amxKChunk), koff)
	g.MOVQ(koff, st.koff)
	g.JMP(operand.LabelRef(kpass))

	g.Label(done)
	if fuse != nil && fuse.pipelined {
		fuse.applyPending(g, operand.U32(amxMaxPieceRows)) // the last block's
	}
	t.tileRelease()
	if _, emu := t.(*emuTiles); emu {
		g.VZEROUPPER()
	}
	g.RET()
}

// amxRowBlock emits the sweep over all N-blocks for the row block at st.a
// and st.c, with rowTiles (1 or 2) rows of tiles.
func amxRowBlock(g *gen, t tileOps, st amxState, rowTiles int) {
	b := g.Load("b")
	g.MOVQ(b, st.b)
	c := g.GP64()
	g.MOVQ(st.c, c)
	g.MOVQ(c, st.cpair)
	np := g.Load("nblocks")
	g.SHRQ(operand.U8(1), np)
	g.MOVQ(np, st.npairs)
	if st.fuse != nil {
		g.MOVQ(operand.U32(0), st.fuse.epCol)
	}

	nloop, nodd, end := g.NewLabel("npair"), g.NewLabel("nodd"), g.NewLabel("nend")
	g.Label(nloop)
	np = g.GP64()
	g.MOVQ(st.npairs, np)
	g.TESTQ(np, np)
	g.JZ(operand.LabelRef(nodd))
	g.DECQ(np)
	g.MOVQ(np, st.npairs)
	amxBlock(g, t, st, rowTiles, 2)
	c = g.GP64()
	g.MOVQ(st.cpair, c)
	g.ADDQ(operand.U8(128), c) // 32 columns x 4 bytes
	g.MOVQ(c, st.cpair)
	if st.fuse != nil {
		g.ADDQ(operand.U32(32), st.fuse.epCol)
	}
	b = g.GP64()
	g.MOVQ(st.b, b)
	kp := g.Load("kp")
	g.SHLQ(operand.U8(5), kp) // two strips of kp x 16 bytes
	g.ADDQ(kp, b)
	g.MOVQ(b, st.b)
	g.JMP(operand.LabelRef(nloop))

	g.Label(nodd)
	nb := g.Load("nblocks")
	g.TESTQ(operand.U32(1), nb)
	g.JZ(operand.LabelRef(end))
	amxBlock(g, t, st, rowTiles, 1)
	g.Label(end)
}

// amxBlock emits one rows x cols block of C tiles at st.a, st.b, st.cpair
// for the K pass at st.koff: zero the C tiles (first pass) or load them
// from C, run the software-pipelined K loop, store the tiles.
func amxBlock(g *gen, t tileOps, st amxState, rows, cols int) {
	g.Comment(fmt.Sprintf("%dx%d block of 16x16 C tiles.", rows, cols))
	lda := g.Load("lda")
	var ap, bp [2]reg.GPVirtual
	ap[0] = g.GP64()
	g.MOVQ(st.a, ap[0])
	if rows == 2 {
		ap[1] = g.GP64()
		g.MOVQ(lda, ap[1])
		g.SHLQ(operand.U8(4), ap[1]) // 16 rows down
		g.ADDQ(ap[0], ap[1])
	}
	bp[0] = g.GP64()
	g.MOVQ(st.koff, bp[0])
	g.SHLQ(operand.U8(4), bp[0]) // B tile of K offset k0 is at k0*16 in a strip
	g.ADDQ(st.b, bp[0])
	if cols == 2 {
		bp[1] = g.Load("kp")
		g.SHLQ(operand.U8(4), bp[1]) // next strip: kp x 16 bytes
		g.ADDQ(bp[0], bp[1])
	}
	bstride := g.GP64()
	g.MOVQ(operand.U32(64), bstride) // B tile rows are 64 bytes apart
	ksteps := g.GP64()
	g.MOVQ(st.ksteps, ksteps)
	g.DECQ(ksteps) // the last K step is peeled (it loads nothing)

	loadA := func(i int) { t.tileLoad(tileA(i), operand.Mem{Base: ap[i], Index: lda, Scale: 1}) }
	loadB := func(j int) { t.tileLoad(tileB(j), operand.Mem{Base: bp[j], Index: bstride, Scale: 1}) }

	// C tiles start at zero in the first K pass, from C in later ones.
	cAddr := func(cp, ldc4 reg.GPVirtual, i, j int) operand.Mem {
		base := cp
		if i == 1 {
			base = g.GP64()
			g.MOVQ(ldc4, base)
			g.SHLQ(operand.U8(4), base) // 16 rows down
			g.ADDQ(cp, base)
		}
		return operand.Mem{Base: base, Index: ldc4, Scale: 1, Disp: 64 * j}
	}
	cload, cready := g.NewLabel("cload"), g.NewLabel("cready")
	g.CMPQ(st.koff, operand.U8(0))
	g.JNE(operand.LabelRef(cload))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			t.tileZero(tileC(i, j))
		}
	}
	g.JMP(operand.LabelRef(cready))
	g.Label(cload)
	{
		cp := g.GP64()
		g.MOVQ(st.cpair, cp)
		ldc4 := g.Load("ldc")
		g.SHLQ(operand.U8(2), ldc4)
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				t.tileLoad(tileC(i, j), cAddr(cp, ldc4, i, j))
			}
		}
	}
	g.Label(cready)
	loadA(0)
	loadB(0)
	for j := 1; j < cols; j++ {
		loadB(j)
	}
	for i := 1; i < rows; i++ {
		loadA(i)
	}

	kstep := func(top string) {
		for i := 0; i < rows; i++ {
			g.ADDQ(operand.U8(64), ap[i]) // next 64 K bytes of A
		}
		for j := 0; j < cols; j++ {
			g.ADDQ(operand.U32(1024), bp[j]) // next 1 KiB B tile
		}
		// The B lines to prefetch (amxPrefetchAhead, amxPairAheadShift),
		// spread evenly over the step's TDPBUSDs.
		var prefetch []operand.Mem
		switch st.prefetch {
		case amxPrefetchStep:
			for j := 0; j < cols; j++ {
				for line := 0; line < 16; line++ {
					prefetch = append(prefetch, operand.Mem{Base: bp[j], Disp: amxPrefetchAhead + 64*line})
				}
			}
		case amxPrefetchPair:
			// One pair ahead, recomputed every step, so that nothing more
			// lives across the pipelined loop's epilogue calls.
			pair := g.Load("kp")
			g.SHLQ(operand.U8(amxPairAheadShift), pair)
			for j := 0; j < cols; j++ {
				for line := 0; line < 16; line++ {
					prefetch = append(prefetch, operand.Mem{Base: bp[j], Index: pair, Scale: 1, Disp: 64 * line})
				}
			}
		}
		perDot := (len(prefetch) + rows*cols - 1) / (rows * cols)
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				t.tdpbusd(tileC(i, j), tileA(i), tileB(j))
				for n := 0; n < perDot && len(prefetch) > 0; n++ {
					if st.prefetch == amxPrefetchPair {
						g.PREFETCHT1(prefetch[0])
					} else {
						g.PREFETCHT0(prefetch[0])
					}
					prefetch = prefetch[1:]
				}
				// Reload a tile for the next K step right after its last
				// use in this one.
				if j == cols-1 {
					loadA(i)
				}
				if i == rows-1 {
					loadB(j)
				}
			}
		}
		g.DECQ(ksteps)
		g.JMP(operand.LabelRef(top))
	}
	klast := g.NewLabel("klast")
	kloop := func(pieces bool) {
		top := g.NewLabel("kstep")
		g.Label(top)
		g.TESTQ(ksteps, ksteps)
		g.JZ(operand.LabelRef(klast))
		if pieces {
			// The deferred block's next rows, with the loop's registers in
			// the frame across the call.
			f := st.fuse
			live := []reg.GPVirtual{ap[0], ap[1], bp[0], bp[1], ksteps}
			for i, r := range live {
				if r != nil {
					g.MOVQ(r, f.kregs[i])
				}
			}
			f.applyPending(g, f.pend.piece)
			for i, r := range live {
				if r != nil {
					g.MOVQ(f.kregs[i], r)
				}
			}
			g.MOVQ(g.ParamAddr("lda"), lda)
			g.MOVQ(operand.U32(64), bstride)
		}
		kstep(top)
	}
	if st.fuse != nil && st.fuse.pipelined {
		plain := g.NewLabel("kloop_plain")
		isLastKPass(g, st, plain)
		kloop(true)
		g.Label(plain)
		kloop(false)
	} else {
		kloop(false)
	}

	g.Label(klast)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			t.tdpbusd(tileC(i, j), tileA(i), tileB(j))
		}
	}

	stored := ""
	if st.fuse != nil {
		toC := g.NewLabel("store_partial")
		stored = g.NewLabel("stored")
		isLastKPass(g, st, toC)
		if st.fuse.pipelined {
			st.fuse.applyPending(g, operand.U32(amxMaxPieceRows)) // what the K loop left of it
			st.fuse.storeAndDefer(g, t, rows, cols)
		} else {
			st.fuse.storeAndFinish(g, t, rows, cols)
		}
		g.JMP(operand.LabelRef(stored))
		g.Label(toC)
	}
	cp := g.GP64()
	g.MOVQ(st.cpair, cp)
	ldc4 := g.Load("ldc")
	g.SHLQ(operand.U8(2), ldc4) // C row stride in bytes
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			t.tileStore(cAddr(cp, ldc4, i, j), tileC(i, j))
		}
	}
	if stored != "" {
		g.Label(stored)
	}
}

package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"strings"

	"github.com/mmcloughlin/avo/gotypes"
	"github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/kernels"
)

// The fused AMX kernel applies the epilogue itself: in the last K pass,
// each 32x32 block of C tiles goes (TILESTORED) into a 4 KiB buffer in the
// kernel's frame, which stays in L1, and the kernel calls
// epilogueAVX512Asm on it, writing the block's output straight away. The
// unfused kernel leaves an s32 macro-block of up to 256 KiB in L2 for a
// separate epilogue pass, which on AMX costs about as much as the matrix
// work (../shared/perf/amx-2026-12-01.md: kernel alone 64% of the tile
// peak, kernel then epilogue 31%). Earlier K passes (K > amxKChunk) still
// park their partial sums in C, as the unfused kernel does.
//
// Calling the epilogue function, rather than inlining its loops, keeps one
// epilogue: the fused output has the unfused one's bits by construction,
// and the dispatch on the feature flags costs a few branches per 1024
// elements.

// amxEpilogueBufBytes is the fused kernel's s32 block buffer: 32 rows x 32
// columns x 4 bytes, plus 64 so it can be aligned to a cache line.
const amxEpilogueBufBytes = 32*32*4 + 64

// amxFusedLeadParams is how many of epilogueSig's parameters the fused
// kernel sets per block (c, ldc, m); it takes the others as its own
// trailing parameters, n being the macro-block's real columns.
const amxFusedLeadParams = 3

// epilogueParamNames returns epilogueSig's parameter names in order.
func epilogueParamNames() []string {
	expr, err := parser.ParseExpr(epilogueSig)
	if err != nil {
		panic(fmt.Sprintf("epilogueSig: %v", err))
	}
	var names []string
	for _, f := range expr.(*ast.FuncType).Params.List {
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
	}
	return names
}

// amxFusedSig is the fused kernel's signature: KernelSig's parameters,
// then epilogueSig's from n on.
func amxFusedSig() string {
	names := epilogueParamNames()
	from := strings.Index(epilogueSig, names[amxFusedLeadParams]+" ")
	to := strings.LastIndex(epilogueSig, ")")
	return strings.TrimSuffix(kernels.KernelSig, ")") + ", " + epilogueSig[from:to] + ")"
}

// amxFusion is what the fused kernel keeps in its frame.
type amxFusion struct {
	callee *gotypes.Signature // epilogueAVX512Asm's
	args   operand.Mem        // its argument area, at 0(SP)
	buf    operand.Mem        // the 32x32 s32 block (amxEpilogueBufBytes)
	// epRow and epCol are the current block's first row and column in the
	// macro-block.
	epRow, epCol operand.Mem
	// pipelined defers each block's epilogue to the K loop of the next
	// block (see setPieceRows); pend is the deferred block.
	pipelined bool
	pend      amxPending
	// kregs are the K loop's registers, kept here across a piece's call.
	kregs [amxKLoopRegs]operand.Mem
}

// amxPending is the frame state of the pipelined kernel's deferred block:
// its s32 values are in the buffer, its first row and column in the
// macro-block are row and col, its real extent m x n, and the epilogue has
// been applied to its first done rows. m = 0: none. piece is how many rows
// each K step of the current pass applies (setPieceRows).
type amxPending struct{ row, col, m, n, done, piece operand.Mem }

// The pipelined kernel spreads the deferred block's 32 rows evenly over
// the K steps of the next block's loop: ceil(32 / steps) rows a step, 3 in
// the 11 loop steps of a 768-byte pass (the 12th is peeled), 4 or more in
// shorter passes; what the loop leaves is applied after it, still ahead of
// the block's tile stores in program order. The steps' vector work should
// fit beside their tile work: a K step is four TDPBUSD, 64 cycles at the
// tile peak, and 512-bit vector operations issue on two ports (p0 and p5
// on Sapphire and Emerald Rapids). The bias + GELU + u8 epilogue is ~21 of
// them per 16 values (the short GELU, gelu_u8), so 3 rows x 32 columns are
// ~63 cycles of them, balanced; 4 rows were ~84, which would stretch those
// steps by a third on BERT's FFN-up GEMM. Cheaper epilogues (u8 or
// f32 output, residual) fit either way. Not measured on AMX yet; the
// one-call overhead per piece (argument moves, dispatch, table loads) is
// scalar and load-port work. amxMaxPieceRows bounds a piece: a whole block.
const amxMaxPieceRows = 32

// amxKLoopRegs is how many registers the K loop carries (A and B row
// pointers, two each, and the steps left).
const amxKLoopRegs = 5

// newAMXFusion allocates the fused kernel's frame slots. It must be called
// before anything else allocates locals: a callee's arguments are at
// 0(SP).
func newAMXFusion(g *gen, pipelined bool) *amxFusion {
	callee, err := gotypes.ParseSignature(epilogueSig)
	if err != nil {
		panic(fmt.Sprintf("epilogueSig: %v", err))
	}
	f := &amxFusion{callee: callee, pipelined: pipelined}
	f.args = g.AllocLocal((callee.Bytes() + 7) &^ 7)
	if f.args.Disp != 0 {
		panic("fused AMX kernel: the epilogue's arguments must be the first local")
	}
	f.buf = g.AllocLocal(amxEpilogueBufBytes)
	f.epRow, f.epCol = g.AllocLocal(8), g.AllocLocal(8)
	if pipelined {
		f.pend = amxPending{row: g.AllocLocal(8), col: g.AllocLocal(8), m: g.AllocLocal(8), n: g.AllocLocal(8), done: g.AllocLocal(8), piece: g.AllocLocal(8)}
		for i := range f.kregs {
			f.kregs[i] = g.AllocLocal(8)
		}
		g.MOVQ(operand.U32(0), f.pend.m) // nothing deferred yet
		g.MOVQ(operand.U32(0), f.pend.done)
	}
	return f
}

// storeAndDefer is storeAndFinish of the pipelined kernel: the block's
// tiles go into the buffer (the previous block's epilogue is complete by
// then) and the block becomes the deferred one.
func (f *amxFusion) storeAndDefer(g *gen, t tileOps, rows, cols int) {
	f.storeTiles(g, t, rows, cols)
	m, n := f.blockExtent(g, rows, cols)
	g.MOVQ(m, f.pend.m)
	g.MOVQ(n, f.pend.n)
	for _, mv := range [][2]operand.Mem{{f.epRow, f.pend.row}, {f.epCol, f.pend.col}} {
		x := g.GP64()
		g.MOVQ(mv[0], x)
		g.MOVQ(x, mv[1])
	}
	g.MOVQ(operand.U32(0), f.pend.done)
}

// setPieceRows emits pend.piece = ceil(32 / (steps - 1)) for a K pass of
// steps 64-byte steps (in a register, left unchanged): the rows of the
// deferred block each step of the pass's K loop applies (the last step is
// peeled). A one-step pass has no loop: 32. Once per K pass, so a
// subtraction loop (at most 32 rounds) serves instead of a division.
func (f *amxFusion) setPieceRows(g *gen, steps reg.GPVirtual) {
	loop := g.GP64()
	g.MOVQ(steps, loop)
	g.DECQ(loop)
	piece := g.GP64()
	g.MOVQ(operand.U32(amxMaxPieceRows), piece)
	done, top := g.NewLabel("piece_done"), g.NewLabel("piece_top")
	g.JLE(operand.LabelRef(done)) // no K loop
	left := g.GP64()
	g.MOVQ(operand.U32(amxMaxPieceRows), left)
	g.XORQ(piece, piece)
	g.Label(top)
	g.INCQ(piece)
	g.SUBQ(loop, left)
	g.JG(operand.LabelRef(top))
	g.Label(done)
	g.MOVQ(piece, f.pend.piece)
}

// applyPending emits the epilogue on the next min(most, m - done) rows of
// the deferred block, if any are left; most is a constant or pend.piece.
func (f *amxFusion) applyPending(g *gen, most operand.Op) {
	skip := g.NewLabel("pend_skip")
	cnt := g.GP64()
	g.MOVQ(f.pend.m, cnt)
	g.SUBQ(f.pend.done, cnt)
	g.JLE(operand.LabelRef(skip))
	lim := g.GP64()
	g.MOVQ(most, lim)
	g.CMPQ(cnt, lim)
	g.CMOVQGT(lim, cnt)
	done := g.GP64()
	g.MOVQ(f.pend.done, done)
	c := f.bufAddr(g)
	off := g.GP64()
	g.MOVQ(done, off)
	g.SHLQ(operand.U8(7), off) // buffer rows: 32 int32
	g.ADDQ(off, c)
	row := g.GP64()
	g.MOVQ(f.pend.row, row)
	g.ADDQ(done, row)
	next := g.GP64()
	g.MOVQ(done, next)
	g.ADDQ(cnt, next)
	g.MOVQ(next, f.pend.done) // before the call, which clobbers cnt
	n, col := g.GP64(), g.GP64()
	g.MOVQ(f.pend.n, n)
	g.MOVQ(f.pend.col, col)
	f.callEpilogue(g, c, cnt, n, row, col)
	g.Label(skip)
}

// calleeArg returns the argument slot of the epilogue's parameter name
// and its size in bytes.
func (f *amxFusion) calleeArg(name string) (operand.Mem, int64) {
	b, err := f.callee.Params().Lookup(name).Resolve()
	if err != nil {
		panic(fmt.Sprintf("epilogueSig parameter %s: %v", name, err))
	}
	return f.args.Offset(b.Addr.Disp), gotypes.Sizes.Sizeof(b.Type)
}

// bufAddr returns the buffer's address, aligned to 64 bytes, in a new
// register.
func (f *amxFusion) bufAddr(g *gen) reg.GPVirtual {
	p := g.GP64()
	g.LEAQ(f.buf.Offset(63), p)
	g.ANDQ(operand.I32(-64), p)
	return p
}

// storeAndFinish emits the end of a rows x cols block of C tiles in the
// last K pass of the per-block kernel: store the tiles into the buffer and
// call the epilogue on the block's real rows and columns.
func (f *amxFusion) storeAndFinish(g *gen, t tileOps, rows, cols int) {
	buf := f.storeTiles(g, t, rows, cols)
	m, n := f.blockExtent(g, rows, cols)
	row, col := g.GP64(), g.GP64()
	g.MOVQ(f.epRow, row)
	g.MOVQ(f.epCol, col)
	f.callEpilogue(g, buf, m, n, row, col)
}

// storeTiles stores a rows x cols block of C tiles into the buffer and
// returns the buffer's address.
func (f *amxFusion) storeTiles(g *gen, t tileOps, rows, cols int) reg.GPVirtual {
	buf := f.bufAddr(g)
	stride := g.GP64()
	g.MOVQ(operand.U32(32*4), stride) // buffer rows: 32 int32
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			t.tileStore(operand.Mem{Base: buf, Index: stride, Scale: 1, Disp: 16*32*4*i + 64*j}, tileC(i, j))
		}
	}
	return buf
}

// blockExtent returns, in new registers, the real rows and columns of the
// current rows x cols block of tiles: min(16*rows, m - epRow) and
// min(16*cols, n - epCol).
func (f *amxFusion) blockExtent(g *gen, rows, cols int) (m, n reg.GPVirtual) {
	clampTo := func(param string, from operand.Mem, most int) reg.GPVirtual {
		v, lim := g.Load(param), g.GP64()
		g.SUBQ(from, v)
		g.MOVQ(operand.U32(most), lim)
		g.CMPQ(v, lim)
		g.CMOVQGT(lim, v)
		return v
	}
	return clampTo("m", f.epRow, 16*rows), clampTo("n", f.epCol, 16*cols)
}

// callEpilogue emits the call of the epilogue on the m x n s32 values at c
// (row stride 32), which are the macro-block's rows row.. and columns
// col..: the kernel's own epilogue arguments, moved there. No register is
// live across the call (every register is the callee's to clobber): the
// loops around reload their state from the frame.
func (f *amxFusion) callEpilogue(g *gen, c, m, n, row, col reg.GPVirtual) {
	g.Comment("The epilogue's arguments: the kernel's own, moved to these rows and columns.")
	names := epilogueParamNames()
	for _, name := range names[amxFusedLeadParams:] {
		dst, size := f.calleeArg(name)
		src := g.ParamAddr(name)
		if size == 4 {
			x := g.GP32()
			g.MOVL(src, x)
			g.MOVL(x, dst)
		} else {
			x := g.GP64()
			g.MOVQ(src, x)
			g.MOVQ(x, dst)
		}
	}
	for _, a := range []struct {
		name string
		v    operand.Op
	}{{"c", c}, {"ldc", operand.U32(32)}, {"m", m}, {"n", n}} {
		slot, _ := f.calleeArg(a.name)
		g.MOVQ(a.v, slot)
	}

	// Per-column operands move by col elements, per-row ones by row,
	// matrices by row rows and col columns. A nil operand moves too; its
	// flag is clear, so the epilogue never reads it.
	col4 := g.GP64()
	g.MOVQ(col, col4)
	g.SHLQ(operand.U8(2), col4)
	for _, name := range []string{"colSum", "scale", "bias"} {
		a, _ := f.calleeArg(name)
		g.ADDQ(col4, a)
	}
	row4 := g.GP64()
	g.MOVQ(row, row4)
	g.SHLQ(operand.U8(2), row4)
	for _, name := range []string{"rowZero", "rowScale"} {
		a, _ := f.calleeArg(name)
		g.ADDQ(row4, a)
	}
	for _, mat := range []struct {
		stride string
		ptrs   []string
		sizes  []uint8
	}{
		{"resStride", []string{"res"}, []uint8{2}},
		{"outStride", []string{"outF32", "outU8"}, []uint8{2, 0}},
	} {
		off := g.Load(mat.stride)
		g.IMULQ(row, off)
		g.ADDQ(col, off)
		for i, name := range mat.ptrs {
			a, _ := f.calleeArg(name)
			o := off
			if mat.sizes[i] > 0 {
				o = g.GP64()
				g.MOVQ(off, o)
				g.SHLQ(operand.U8(mat.sizes[i]), o)
			}
			g.ADDQ(o, a)
		}
	}
	g.Instruction(&ir.Instruction{
		Opcode:   "CALL",
		Operands: []operand.Op{operand.NewDataAddr(operand.Symbol{Name: "·epilogueAVX512Asm"}, 0)},
	})
}

// isLastKPass emits a jump to notLast unless the K pass at st.koff is the
// last one (koff + amxKChunk >= kp).
func isLastKPass(g *gen, st amxState, notLast string) {
	end := g.GP64()
	g.MOVQ(st.koff, end)
	g.ADDQ(operand.U32(amxKChunk), end)
	g.CMPQ(end, g.ParamAddr("kp"))
	g.JLT(operand.LabelRef(notLast))
}

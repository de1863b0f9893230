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
}

// newAMXFusion allocates the fused kernel's frame slots. It must be called
// before anything else allocates locals: a callee's arguments are at
// 0(SP).
func newAMXFusion(g *gen) *amxFusion {
	callee, err := gotypes.ParseSignature(epilogueSig)
	if err != nil {
		panic(fmt.Sprintf("epilogueSig: %v", err))
	}
	f := &amxFusion{callee: callee}
	f.args = g.AllocLocal((callee.Bytes() + 7) &^ 7)
	if f.args.Disp != 0 {
		panic("fused AMX kernel: the epilogue's arguments must be the first local")
	}
	f.buf = g.AllocLocal(amxEpilogueBufBytes)
	f.epRow, f.epCol = g.AllocLocal(8), g.AllocLocal(8)
	return f
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
// last K pass: store the tiles into the buffer and call the epilogue on
// the block's real rows and columns. No register is live across the call
// (every register is the callee's to clobber): the loops around reload
// their state from the frame.
func (f *amxFusion) storeAndFinish(g *gen, t tileOps, rows, cols int) {
	buf := f.bufAddr(g)
	stride := g.GP64()
	g.MOVQ(operand.U32(32*4), stride) // buffer rows: 32 int32
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			t.tileStore(operand.Mem{Base: buf, Index: stride, Scale: 1, Disp: 16*32*4*i + 64*j}, tileC(i, j))
		}
	}

	g.Comment("The epilogue's arguments: the kernel's own, moved to this block.")
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
	cArg, _ := f.calleeArg("c")
	g.MOVQ(buf, cArg)
	ldcArg, _ := f.calleeArg("ldc")
	g.MOVQ(operand.U32(32), ldcArg)

	// m = min(rows of this block, m - epRow); n = min(16*cols, n - epCol).
	clampTo := func(param string, from operand.Mem, most int, dst operand.Mem) {
		v, lim := g.Load(param), g.GP64()
		g.SUBQ(from, v)
		g.MOVQ(operand.U32(most), lim)
		g.CMPQ(v, lim)
		g.CMOVQGT(lim, v)
		g.MOVQ(v, dst)
	}
	mArg, _ := f.calleeArg("m")
	clampTo("m", f.epRow, 16*rows, mArg)
	nArg, _ := f.calleeArg("n")
	clampTo("n", f.epCol, 16*cols, nArg)

	// Per-column operands move by epCol elements, per-row ones by epRow,
	// matrices by epRow rows and epCol columns. A nil operand moves too;
	// its flag is clear, so the epilogue never reads it.
	col4 := g.GP64()
	g.MOVQ(f.epCol, col4)
	g.SHLQ(operand.U8(2), col4)
	for _, name := range []string{"colSum", "scale", "bias"} {
		a, _ := f.calleeArg(name)
		g.ADDQ(col4, a)
	}
	row4 := g.GP64()
	g.MOVQ(f.epRow, row4)
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
		g.IMULQ(f.epRow, off)
		g.ADDQ(f.epCol, off)
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

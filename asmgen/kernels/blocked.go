package kernels

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/avogen"
)

// Builder emits register-blocked GEMM kernels with runtime/qgemm.Kernel's
// ABI into an avo build context: the N-group / row-block loop nest shared
// by every kernel family (BlockedKernel) and the helpers its micro-kernels
// use. Both generators use it: asmgen/qgemm for the runtime's generic
// kernels (Kp read from the kp argument) and File for the kernels `sqc
// compile` specialises to one Kp.
type Builder struct {
	*avogen.Gen
}

// NewBuilder returns a Builder emitting into ctx.
func NewBuilder(ctx *build.Context) *Builder { return &Builder{avogen.NewGen(ctx)} }

// LoopState holds the loop variables of a blocked kernel in stack slots,
// leaving the registers to the micro-kernel.
type LoopState struct {
	B, C    operand.Mem // B and C of the current N-group
	NLeft   operand.Mem // N-blocks left
	A, CRow operand.Mem // A and C of the current row block
	MLeft   operand.Mem // rows left
	// Prefetch is where a micro-kernel that prefetches B (Blocked.Prefetch)
	// issues its next prefetch, in the next N-group's strips; it stops at
	// PrefetchLast, the group's last line (prefetching it again is cheap,
	// running on into the groups after it would evict B strips still in
	// use from L2).
	Prefetch, PrefetchLast operand.Mem
}

// Micro emits a rows x cols micro-kernel (cols N-blocks of 16 columns)
// reading st.A, st.B and st.CRow; kp is the constant Kp of a specialised
// kernel, or 0 when Kp comes from the kp argument.
type Micro func(b *Builder, st LoopState, rows, cols, kp int)

// Blocked describes one kernel for BlockedKernel.
type Blocked struct {
	Name             string
	Doc              []string
	MaxRows, MaxCols int // register blocking: rows x N-blocks of the full micro-kernel
	// Kp, if positive, is the one padded K the kernel serves: loop counts
	// and B offsets become immediates and the kp argument is never read.
	Kp    int
	Micro Micro
	// Prefetch keeps st.Prefetch for a micro-kernel that prefetches the
	// B strips of the N-groups ahead (see BlockedKernel).
	Prefetch bool
}

// BlockedKernel emits a Kernel that sweeps N-groups of MaxCols blocks
// (outer loop, so one group's B strips stay in cache) and, inside, row
// blocks of MaxRows rows, with tails dispatched to smaller micro-kernels.
//
// With k.Prefetch, st.Prefetch is moved up to the next N-group whenever a
// group starts (st.PrefetchLast to that group's last line), so the
// micro-kernels prefetch the next group's strips while they compute on the
// current one. In a forward pass the weights come from DRAM (a model's
// layers hold more than the last-level cache), and only the first row
// block of a group touches its strips first: without help it waits for
// DRAM while the other row blocks find the strips in L1.
func (b *Builder) BlockedKernel(k Blocked) {
	b.Function(k.Name)
	b.Attributes(attr.NOSPLIT)
	b.SignatureExpr(KernelSig)
	b.Pragma("noescape")
	b.Doc(k.Doc...)
	st := LoopState{
		B: b.AllocLocal(8), C: b.AllocLocal(8), NLeft: b.AllocLocal(8),
		A: b.AllocLocal(8), CRow: b.AllocLocal(8), MLeft: b.AllocLocal(8),
	}
	b.MOVQ(b.Load("b"), st.B)
	b.MOVQ(b.Load("c"), st.C)
	b.MOVQ(b.Load("nblocks"), st.NLeft)
	if k.Prefetch {
		st.Prefetch, st.PrefetchLast = b.AllocLocal(8), b.AllocLocal(8)
		// Both on the first line until an N-group moves them on: a kernel
		// called for a tail group alone prefetches nothing new.
		pf := b.GP64()
		b.MOVQ(st.B, pf)
		b.MOVQ(pf, st.Prefetch)
		b.MOVQ(pf, st.PrefetchLast)
	}

	done := b.NewLabel("done")
	nloop, ntail := b.NewLabel("ngroup"), b.NewLabel("ntail")
	b.Label(nloop)
	nl := b.GP64()
	b.MOVQ(st.NLeft, nl)
	b.CMPQ(nl, operand.U8(k.MaxCols))
	b.JL(operand.LabelRef(ntail))
	b.SUBQ(operand.U8(k.MaxCols), nl)
	b.MOVQ(nl, st.NLeft)
	if k.Prefetch {
		// st.Prefetch = max(st.Prefetch, the next group's first line);
		// st.PrefetchLast = its last line.
		next, pf, gb := b.GP64(), b.GP64(), b.groupBytes(k)
		b.MOVQ(st.B, next)
		b.ADDQ(gb, next)
		b.MOVQ(st.Prefetch, pf)
		b.CMPQ(pf, next)
		b.CMOVQLT(next, pf)
		b.MOVQ(pf, st.Prefetch)
		b.ADDQ(operand.U32(PrefetchAheadBytes-64), next)
		b.MOVQ(next, st.PrefetchLast)
	}
	b.rowSweep(st, k, k.MaxCols)
	// Next N-group: MaxCols strips of Kp x 16 bytes, MaxCols x 64 bytes of C.
	bp := b.GP64()
	b.MOVQ(st.B, bp)
	b.ADDQ(b.groupBytes(k), bp)
	b.MOVQ(bp, st.B)
	c := b.GP64()
	b.MOVQ(st.C, c)
	b.ADDQ(operand.U32(64*k.MaxCols), c)
	b.MOVQ(c, st.C)
	b.JMP(operand.LabelRef(nloop))

	b.Label(ntail)
	nl = b.GP64()
	b.MOVQ(st.NLeft, nl)
	for cols := 1; cols < k.MaxCols; cols++ {
		next := b.NewLabel("ntail_not")
		b.CMPQ(nl, operand.U8(cols))
		b.JNE(operand.LabelRef(next))
		b.rowSweep(st, k, cols)
		b.JMP(operand.LabelRef(done))
		b.Label(next)
	}
	b.Label(done)
	b.VZEROUPPER() // avoid SSE/AVX transition stalls in the Go code that follows
	b.RET()
}

// groupBytes returns the bytes of one N-group's B strips (MaxCols strips
// of Kp x 16 bytes): an immediate for a specialised kernel, else a
// register computed from the kp argument.
func (b *Builder) groupBytes(k Blocked) operand.Op {
	if k.Kp > 0 {
		return operand.U32(16 * k.MaxCols * k.Kp)
	}
	kp := b.Load("kp")
	b.IMUL3Q(operand.U32(16*k.MaxCols), kp, kp)
	return kp
}

// rowSweep runs the micro-kernel over all m rows of the N-group at st.B,
// st.C with cols N-blocks.
func (b *Builder) rowSweep(st LoopState, k Blocked, cols int) {
	b.MOVQ(b.Load("a"), st.A)
	c := b.GP64()
	b.MOVQ(st.C, c)
	b.MOVQ(c, st.CRow)
	b.MOVQ(b.Load("m"), st.MLeft)

	mloop, mtail, end := b.NewLabel("rows"), b.NewLabel("rowtail"), b.NewLabel("rowend")
	b.Label(mloop)
	ml := b.GP64()
	b.MOVQ(st.MLeft, ml)
	b.CMPQ(ml, operand.U8(k.MaxRows))
	b.JL(operand.LabelRef(mtail))
	b.SUBQ(operand.U8(k.MaxRows), ml)
	b.MOVQ(ml, st.MLeft)
	k.Micro(b, st, k.MaxRows, cols, k.Kp)
	a := b.GP64()
	b.MOVQ(st.A, a)
	lda := b.Load("lda")
	b.IMUL3Q(operand.U8(k.MaxRows), lda, lda)
	b.ADDQ(lda, a)
	b.MOVQ(a, st.A)
	c = b.GP64()
	b.MOVQ(st.CRow, c)
	ldc := b.Load("ldc")
	b.IMUL3Q(operand.U8(4*k.MaxRows), ldc, ldc)
	b.ADDQ(ldc, c)
	b.MOVQ(c, st.CRow)
	b.JMP(operand.LabelRef(mloop))

	b.Label(mtail)
	ml = b.GP64()
	b.MOVQ(st.MLeft, ml)
	for rows := 1; rows < k.MaxRows; rows++ {
		next := b.NewLabel("rowtail_not")
		b.CMPQ(ml, operand.U8(rows))
		b.JNE(operand.LabelRef(next))
		k.Micro(b, st, rows, cols, k.Kp)
		b.JMP(operand.LabelRef(end))
		b.Label(next)
	}
	b.Label(end)
}

// RowAddrs returns the addresses of A rows 0..rows-1 (at most 8) as base +
// index*scale operands, using a0 (row 0), a4 (row 4, only if rows > 5),
// lda and lda3; ptrs are the pointer registers to advance along K.
func (b *Builder) RowAddrs(rows int) (addrs []operand.Mem, ptrs []reg.GPVirtual) {
	a0 := b.GP64()
	lda := b.Load("lda")
	ptrs = []reg.GPVirtual{a0}
	var lda3, a4 reg.GPVirtual
	if rows > 3 {
		lda3 = b.GP64()
		b.LEAQ(operand.Mem{Base: lda, Index: lda, Scale: 2}, lda3)
	}
	if rows > 5 {
		a4 = b.GP64()
		ptrs = append(ptrs, a4)
	}
	for i := 0; i < rows; i++ {
		switch i {
		case 0:
			addrs = append(addrs, operand.Mem{Base: a0})
		case 1:
			addrs = append(addrs, operand.Mem{Base: a0, Index: lda, Scale: 1})
		case 2:
			addrs = append(addrs, operand.Mem{Base: a0, Index: lda, Scale: 2})
		case 3:
			addrs = append(addrs, operand.Mem{Base: a0, Index: lda3, Scale: 1})
		case 4:
			addrs = append(addrs, operand.Mem{Base: a0, Index: lda, Scale: 4})
		case 5: // rows > 5, so a4 exists
			addrs = append(addrs, operand.Mem{Base: a4, Index: lda, Scale: 1})
		case 6:
			addrs = append(addrs, operand.Mem{Base: a4, Index: lda, Scale: 2})
		case 7:
			addrs = append(addrs, operand.Mem{Base: a4, Index: lda3, Scale: 1})
		default:
			panic(fmt.Sprintf("row %d: at most 8 rows", i))
		}
	}
	return addrs, ptrs
}

// LoadRowPtrs loads st.A into ptrs[0] (a0) and, with a second pointer,
// sets a4 = a0 + 4*lda (addrs[4] is exactly that address).
func (b *Builder) LoadRowPtrs(st LoopState, ptrs []reg.GPVirtual, addrs []operand.Mem) {
	b.MOVQ(st.A, ptrs[0])
	if len(ptrs) > 1 {
		b.LEAQ(addrs[4], ptrs[1])
	}
}

// StripAddrs returns the addresses of B strips 0..cols-1 (Kp*16 bytes
// apart) from bp: constant displacements when kp > 0, else index
// registers bs = kp*16 and bs3 = 3*bs loaded from the kp argument.
func (b *Builder) StripAddrs(bp reg.GPVirtual, cols, kp int) []operand.Mem {
	out := []operand.Mem{{Base: bp}}
	if kp > 0 {
		for j := 1; j < cols; j++ {
			out = append(out, operand.Mem{Base: bp, Disp: 16 * kp * j})
		}
		return out
	}
	var bs, bs3 reg.GPVirtual
	if cols > 1 {
		bs = b.Load("kp")
		b.SHLQ(operand.U8(4), bs)
	}
	if cols > 3 {
		bs3 = b.GP64()
		b.LEAQ(operand.Mem{Base: bs, Index: bs, Scale: 2}, bs3)
	}
	for j := 1; j < cols; j++ {
		switch j {
		case 1:
			out = append(out, operand.Mem{Base: bp, Index: bs, Scale: 1})
		case 2:
			out = append(out, operand.Mem{Base: bp, Index: bs, Scale: 2})
		case 3:
			out = append(out, operand.Mem{Base: bp, Index: bs3, Scale: 1})
		default:
			panic("at most 4 N-blocks")
		}
	}
	return out
}

// KLoopCount returns a register holding Kp / (4*unroll) loop iterations
// (unroll a power of two): an immediate when kp > 0, else computed from
// the kp argument.
func (b *Builder) KLoopCount(unroll, kp int) reg.GPVirtual {
	if kp > 0 {
		k := b.GP64()
		b.MOVQ(operand.U32(kp/(4*unroll)), k)
		return k
	}
	k := b.Load("kp")
	shift := 2
	for u := unroll; u > 1; u >>= 1 {
		shift++
	}
	b.SHRQ(operand.U8(shift), k)
	return k
}

// StoreAcc stores the zmm accumulator rows to C from st.CRow (ldc int32
// apart), 64 bytes per N-block.
func (b *Builder) StoreAcc(st LoopState, acc [][]reg.VecVirtual) {
	cp := b.GP64()
	b.MOVQ(st.CRow, cp)
	ldc4 := b.Load("ldc")
	b.SHLQ(operand.U8(2), ldc4)
	for i, row := range acc {
		for j, z := range row {
			b.VMOVDQU32(z, operand.Mem{Base: cp, Disp: 64 * j})
		}
		if i < len(acc)-1 {
			b.ADDQ(ldc4, cp)
		}
	}
}

// PrefetchAheadBytes is how far past the current N-group a prefetching
// kernel reaches into B: 192 KiB, a fifth of a 1 MiB L2 (Zen 4/5; a tenth
// of Sapphire Rapids' 2 MiB), next to the current group's strips and the
// block's A rows (at most 48 KiB at the driver's usual 64 rows x Kp 768).
// It spans five 3-strip groups at Kp = 768 and one and a third at Kp =
// 3072, so the prefetches run on into the next macro-block (whose first
// group would otherwise come from DRAM) without evicting the strips in use.
const PrefetchAheadBytes = 192 << 10

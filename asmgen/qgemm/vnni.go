package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// VNNI register blocking: vnniRows rows x vnniCols N-blocks of 16 int32
// accumulators (8 x 3 = 24 zmm), plus vnniCols zmm of B and two of
// broadcast A: 29 of the 32 zmm registers. Per K-group (4 K values) one
// micro-step loads 3 x 64 bytes of B and broadcasts 8 x 4 bytes of A for 24
// VPDPBUSD. 8 rows divide the driver's 64-128-row macro-blocks and 3
// N-blocks divide N = 768 and 3072 (48 and 192 N-blocks).
const (
	vnniRows   = 8
	vnniCols   = 3
	vnniUnroll = 4 // K-groups per loop iteration (Kp/4 is a multiple of 16)
)

// vnniState holds the outer-loop variables of the VNNI and AVX2 kernels in
// stack slots, leaving the registers to the micro-kernel.
type vnniState struct {
	b, c    operand.Mem // B and C of the current N-group
	nleft   operand.Mem // N-blocks left
	a, crow operand.Mem // A and C of the current row block
	mleft   operand.Mem // rows left
}

func allocLoopState(g *gen) vnniState {
	return vnniState{
		b: g.AllocLocal(8), c: g.AllocLocal(8), nleft: g.AllocLocal(8),
		a: g.AllocLocal(8), crow: g.AllocLocal(8), mleft: g.AllocLocal(8),
	}
}

// microFunc emits a rows x cols micro-kernel reading st.a, st.b, st.crow.
type microFunc func(g *gen, st vnniState, rows, cols int)

// genBlockedKernel emits a Kernel that sweeps N-groups of maxCols blocks
// (outer loop, so one group's B strips stay in cache) and, inside, row
// blocks of maxRows rows, with tails dispatched to smaller micro-kernels.
func genBlockedKernel(g *gen, name string, doc []string, maxRows, maxCols int, micro microFunc) {
	g.Function(name)
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr(kernelSig)
	g.Pragma("noescape")
	g.Doc(doc...)
	st := allocLoopState(g)

	b := g.load("b")
	g.MOVQ(b, st.b)
	c := g.load("c")
	g.MOVQ(c, st.c)
	nb := g.load("nblocks")
	g.MOVQ(nb, st.nleft)

	done := g.label("done")
	nloop, ntail := g.label("ngroup"), g.label("ntail")
	g.Label(nloop)
	nl := g.GP64()
	g.MOVQ(st.nleft, nl)
	g.CMPQ(nl, operand.U8(maxCols))
	g.JL(operand.LabelRef(ntail))
	g.SUBQ(operand.U8(maxCols), nl)
	g.MOVQ(nl, st.nleft)
	rowSweep(g, st, maxRows, maxCols, micro)
	// Next N-group: maxCols strips of kp x 16 bytes, maxCols x 64 bytes of C.
	b = g.GP64()
	g.MOVQ(st.b, b)
	kp := g.load("kp")
	g.IMUL3Q(operand.U32(16*maxCols), kp, kp)
	g.ADDQ(kp, b)
	g.MOVQ(b, st.b)
	c = g.GP64()
	g.MOVQ(st.c, c)
	g.ADDQ(operand.U32(64*maxCols), c)
	g.MOVQ(c, st.c)
	g.JMP(operand.LabelRef(nloop))

	g.Label(ntail)
	nl = g.GP64()
	g.MOVQ(st.nleft, nl)
	for cols := 1; cols < maxCols; cols++ {
		next := g.label("ntail_not")
		g.CMPQ(nl, operand.U8(cols))
		g.JNE(operand.LabelRef(next))
		rowSweep(g, st, maxRows, cols, micro)
		g.JMP(operand.LabelRef(done))
		g.Label(next)
	}
	g.Label(done)
	g.VZEROUPPER() // avoid SSE/AVX transition stalls in the Go code that follows
	g.RET()
}

// rowSweep runs the micro-kernel over all m rows for the N-group at st.b,
// st.c with cols N-blocks.
func rowSweep(g *gen, st vnniState, maxRows, cols int, micro microFunc) {
	a := g.load("a")
	g.MOVQ(a, st.a)
	c := g.GP64()
	g.MOVQ(st.c, c)
	g.MOVQ(c, st.crow)
	m := g.load("m")
	g.MOVQ(m, st.mleft)

	mloop, mtail, end := g.label("rows"), g.label("rowtail"), g.label("rowend")
	g.Label(mloop)
	ml := g.GP64()
	g.MOVQ(st.mleft, ml)
	g.CMPQ(ml, operand.U8(maxRows))
	g.JL(operand.LabelRef(mtail))
	g.SUBQ(operand.U8(maxRows), ml)
	g.MOVQ(ml, st.mleft)
	micro(g, st, maxRows, cols)
	a = g.GP64()
	g.MOVQ(st.a, a)
	lda := g.load("lda")
	g.IMUL3Q(operand.U8(maxRows), lda, lda)
	g.ADDQ(lda, a)
	g.MOVQ(a, st.a)
	c = g.GP64()
	g.MOVQ(st.crow, c)
	ldc := g.load("ldc")
	g.IMUL3Q(operand.U8(4*maxRows), ldc, ldc)
	g.ADDQ(ldc, c)
	g.MOVQ(c, st.crow)
	g.JMP(operand.LabelRef(mloop))

	g.Label(mtail)
	ml = g.GP64()
	g.MOVQ(st.mleft, ml)
	for rows := 1; rows < maxRows; rows++ {
		next := g.label("rowtail_not")
		g.CMPQ(ml, operand.U8(rows))
		g.JNE(operand.LabelRef(next))
		micro(g, st, rows, cols)
		g.JMP(operand.LabelRef(end))
		g.Label(next)
	}
	g.Label(end)
}

// rowAddrs returns the addresses of A rows 0..rows-1 as base + index*scale
// operands, using a0 (row 0), a4 (row 4, only if rows > 5), lda and lda3.
func rowAddrs(g *gen, rows int) (addrs []operand.Mem, ptrs []reg.GPVirtual) {
	a0 := g.GP64()
	lda := g.load("lda")
	ptrs = []reg.GPVirtual{a0}
	var lda3, a4 reg.GPVirtual
	if rows > 3 {
		lda3 = g.GP64()
		g.LEAQ(operand.Mem{Base: lda, Index: lda, Scale: 2}, lda3)
	}
	if rows > 5 {
		a4 = g.GP64()
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

// loadRowPtrs loads st.a into a0 and sets a4 = a0 + 4*lda.
func loadRowPtrs(g *gen, st vnniState, ptrs []reg.GPVirtual, addrs []operand.Mem) {
	g.MOVQ(st.a, ptrs[0])
	if len(ptrs) > 1 {
		// a4 = a0 + 4*lda: addrs[4] is exactly that address.
		g.LEAQ(addrs[4], ptrs[1])
	}
}

// stripAddrs returns the addresses of B strips 0..cols-1 (kp*16 bytes
// apart) from bp, using bs = kp*16 and bs3 = 3*bs when needed.
func stripAddrs(g *gen, bp reg.GPVirtual, cols int) []operand.Mem {
	var bs, bs3 reg.GPVirtual
	if cols > 1 {
		bs = g.load("kp")
		g.SHLQ(operand.U8(4), bs)
	}
	if cols > 3 {
		bs3 = g.GP64()
		g.LEAQ(operand.Mem{Base: bs, Index: bs, Scale: 2}, bs3)
	}
	out := []operand.Mem{{Base: bp}}
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

// kLoopCount returns a register holding kp / (4*unroll) loop iterations.
func kLoopCount(g *gen, unroll int) reg.GPVirtual {
	k := g.load("kp")
	shift := 2
	for u := unroll; u > 1; u >>= 1 {
		shift++
	}
	g.SHRQ(operand.U8(shift), k)
	return k
}

// genVNNIKernel emits the AVX512-VNNI Kernel.
func genVNNIKernel(g *gen) {
	genBlockedKernel(g, "qgemmVNNI", []string{
		"qgemmVNNI is the AVX512-VNNI Kernel: VPDPBUSD on zmm, register-blocked",
		fmt.Sprintf("%d rows x %d N-blocks (%d zmm accumulators), N-groups outermost.", vnniRows, vnniCols, vnniRows*vnniCols),
	}, vnniRows, vnniCols, vnniMicro)
}

// vnniMicro emits a rows x cols block: accumulators in zmm, per K-group
// one zmm load per N-block and one 4-byte broadcast per row.
func vnniMicro(g *gen, st vnniState, rows, cols int) {
	g.Comment(fmt.Sprintf("VNNI micro-kernel: %d rows x %d N-blocks.", rows, cols))
	acc := make([][]reg.VecVirtual, rows)
	for i := range acc {
		acc[i] = make([]reg.VecVirtual, cols)
		for j := range acc[i] {
			acc[i][j] = g.ZMM()
			g.zeroVec(acc[i][j])
		}
	}
	addrs, ptrs := rowAddrs(g, rows)
	loadRowPtrs(g, st, ptrs, addrs)
	bp := g.GP64()
	g.MOVQ(st.b, bp)
	strips := stripAddrs(g, bp, cols)
	k := kLoopCount(g, vnniUnroll)

	loop := g.label("vnni_k")
	g.Label(loop)
	for u := 0; u < vnniUnroll; u++ {
		zb := make([]reg.VecVirtual, cols)
		for j := range zb {
			zb[j] = g.ZMM()
			g.VMOVDQU32(strips[j].Offset(64*u), zb[j])
		}
		for i := 0; i < rows; i++ {
			za := g.ZMM()
			g.VPBROADCASTD(addrs[i].Offset(4*u), za)
			for j := 0; j < cols; j++ {
				g.vpdpbusd(zb[j], za, acc[i][j])
			}
		}
	}
	for _, p := range ptrs {
		g.ADDQ(operand.U8(4*vnniUnroll), p)
	}
	g.ADDQ(operand.U32(64*vnniUnroll), bp)
	g.DECQ(k)
	g.JNZ(operand.LabelRef(loop))

	cp := g.GP64()
	g.MOVQ(st.crow, cp)
	ldc4 := g.load("ldc")
	g.SHLQ(operand.U8(2), ldc4)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			g.VMOVDQU32(acc[i][j], operand.Mem{Base: cp, Disp: 64 * j})
		}
		if i < rows-1 {
			g.ADDQ(ldc4, cp)
		}
	}
}

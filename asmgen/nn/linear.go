package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The float32 dense layer's inner loops (runtime/nn.LinearF32: the kept-FP32
// pooler and classifier of INT8 models, FP32 graphs, SmoothQuant's search):
// dst[r][j] = sum over p ascending of round(x[r][p] * w[p][j]), from 0, for
// one or four rows r and the columns j < n of a column tile. Each product
// is rounded (VMULPS) before it is added (VADDPS), as the Go kernel's
// float32(a*b) does, so the bits are the Go kernel's; the vectors run
// across independent columns, never reordering a sum.

// linearSig is the signature of every generated dense-layer kernel.
// Pointers are at column 0 of the tile; strides are in elements.
const linearSig = "func(dst *float32, dstStride int, x *float32, xStride int, k int, w *float32, wStride int, n int)"

// linearRowBlocks are the row counts with a kernel of their own: whole
// blocks of four rows (each loaded column of w feeds four products) and
// single rows (batch 1's pooler, and a block's leftover rows).
var linearRowBlocks = []int{4, 1}

// genLinear emits linearRows4Asm and linearRows1Asm (AVX-512): 64 columns
// per pass, the last pass masked.
func genLinear(g *gen) {
	for _, rows := range linearRowBlocks {
		name := fmt.Sprintf("linearRows%dAsm", rows)
		g.Function(name)
		g.Attributes(attr.NOSPLIT)
		g.SignatureExpr(linearSig)
		g.Pragma("noescape")
		g.Doc(fmt.Sprintf("%s sets dst[r*dstStride+j] to the sum over p < k ascending of", name),
			fmt.Sprintf("x[r*xStride+p]*w[p*wStride+j], each product rounded, from 0, for r < %d and j < n", rows),
			"(k, n >= 1): runtime/nn.LinearF32's bits.")
		l := loadLinearArgs(g)
		left := g.GP64()
		g.MOVQ(l.n, left)
		colLoop := g.NewLabel("lin_col")
		g.Label(colLoop)
		kAll := g.maskOf(g.minConst(left, 64))
		var masks [4]reg.OpmaskVirtual
		for u := range masks {
			masks[u] = kAll
			if u > 0 {
				masks[u] = g.K()
				g.KSHIFTRQ(operand.U8(16*u), kAll, masks[u])
			}
		}
		acc := make([][4]reg.VecVirtual, rows)
		for r := range acc {
			for u := range acc[r] {
				acc[r][u] = g.zeroZMM()
			}
		}
		l.kLoop(g, func(wp, xp reg.GPVirtual) {
			var wv [4]reg.VecVirtual
			for u := range wv {
				wv[u] = g.ZMM()
				g.VMOVUPS_Z(operand.Mem{Base: wp, Disp: 64 * u}, masks[u], wv[u]) // 0 past n
			}
			for r := range rows {
				xb := g.ZMM()
				g.VBROADCASTSS(l.xRow(xp, r), xb)
				for u := range wv {
					t := g.ZMM()
					g.VMULPS(wv[u], xb, t)
					g.VADDPS(t, acc[r][u], acc[r][u])
				}
			}
		})
		l.storeRows(g, rows, func(row reg.GPVirtual, r int) {
			for u := range acc[r] {
				g.VMOVUPS(acc[r][u], masks[u], operand.Mem{Base: row, Disp: 64 * u})
			}
		})
		l.nextColumns(g, 64)
		g.SUBQ(operand.U8(64), left)
		g.JG(operand.LabelRef(colLoop))
		g.VZEROUPPER()
		g.RET()
	}
}

// genLinearAVX2 emits linearRows4AVX2Asm and linearRows1AVX2Asm: the
// AVX-512 kernels' loops on ymm, 16 columns per pass, then 8; n is a
// multiple of 8 (the Go kernel does the rest).
func genLinearAVX2(g *gen) {
	for _, rows := range linearRowBlocks {
		name := fmt.Sprintf("linearRows%dAVX2Asm", rows)
		g.Function(name)
		g.Attributes(attr.NOSPLIT)
		g.SignatureExpr(linearSig)
		g.Pragma("noescape")
		g.Doc(fmt.Sprintf("%s is linearRows%dAsm for AVX2: n must be a multiple of 8.", name, rows))
		l := loadLinearArgs(g)
		j := g.GP64()
		g.XORQ(j, j)
		pass := func(width int) func() {
			return func() {
				acc := make([][]reg.VecVirtual, rows)
				for r := range acc {
					acc[r] = make([]reg.VecVirtual, width/8)
					for u := range acc[r] {
						acc[r][u] = g.YMM()
						g.VXORPS(acc[r][u], acc[r][u], acc[r][u])
					}
				}
				l.kLoop(g, func(wp, xp reg.GPVirtual) {
					wv := make([]reg.VecVirtual, width/8)
					for u := range wv {
						wv[u] = g.YMM()
						g.VMOVUPS(operand.Mem{Base: wp, Disp: 32 * u}, wv[u])
					}
					for r := range rows {
						xb := g.YMM()
						g.VBROADCASTSS(l.xRow(xp, r), xb)
						for u := range wv {
							t := g.YMM()
							g.VMULPS(wv[u], xb, t)
							g.VADDPS(t, acc[r][u], acc[r][u])
						}
					}
				})
				l.storeRows(g, rows, func(row reg.GPVirtual, r int) {
					for u := range acc[r] {
						g.VMOVUPS(acc[r][u], operand.Mem{Base: row, Disp: 32 * u})
					}
				})
				l.nextColumns(g, width)
			}
		}
		stepsThen8(g, j, l.n, 16, "lin2", pass(16), pass(8))
		g.VZEROUPPER()
		g.RET()
	}
}

// linearArgs are a dense-layer kernel's arguments in registers, strides
// in bytes; dst and w advance to the current column pass.
type linearArgs struct {
	dst, dstStride, x, xStride, xStride3, k, w, wStride, n reg.GPVirtual
}

func loadLinearArgs(g *gen) linearArgs {
	var l linearArgs
	l.dst, l.dstStride = g.Load("dst"), g.Load("dstStride")
	l.x, l.xStride = g.Load("x"), g.Load("xStride")
	l.k, l.w, l.wStride, l.n = g.Load("k"), g.Load("w"), g.Load("wStride"), g.Load("n")
	for _, s := range []reg.GPVirtual{l.dstStride, l.xStride, l.wStride} {
		g.SHLQ(operand.U8(2), s) // in bytes
	}
	l.xStride3 = g.GP64()
	g.LEAQ(operand.Mem{Base: l.xStride, Index: l.xStride, Scale: 2}, l.xStride3)
	return l
}

// xRow addresses x[r][p] from xp = &x[0][p] (r < 4).
func (l linearArgs) xRow(xp reg.GPVirtual, r int) operand.Mem {
	switch r {
	case 0:
		return operand.Mem{Base: xp}
	case 3:
		return operand.Mem{Base: xp, Index: l.xStride3, Scale: 1}
	default:
		return operand.Mem{Base: xp, Index: l.xStride, Scale: uint8(r)}
	}
}

// kLoop runs body for p = 0 .. k-1 with wp = &w[p][col] and xp =
// &x[0][p].
func (l linearArgs) kLoop(g *gen, body func(wp, xp reg.GPVirtual)) {
	wp, xp, p := g.GP64(), g.GP64(), g.GP64()
	g.MOVQ(l.w, wp)
	g.MOVQ(l.x, xp)
	g.MOVQ(l.k, p)
	loop := g.NewLabel("lin_k")
	g.Label(loop)
	body(wp, xp)
	g.ADDQ(l.wStride, wp)
	g.ADDQ(operand.U8(4), xp)
	g.DECQ(p)
	g.JNZ(operand.LabelRef(loop))
}

// storeRows calls store with the address of each row's current columns in
// dst.
func (l linearArgs) storeRows(g *gen, rows int, store func(row reg.GPVirtual, r int)) {
	row := g.GP64()
	g.MOVQ(l.dst, row)
	for r := range rows {
		if r > 0 {
			g.ADDQ(l.dstStride, row)
		}
		store(row, r)
	}
}

// nextColumns moves dst and w on by width columns.
func (l linearArgs) nextColumns(g *gen, width int) {
	g.ADDQ(operand.U32(4*width), l.dst)
	g.ADDQ(operand.U32(4*width), l.w)
}

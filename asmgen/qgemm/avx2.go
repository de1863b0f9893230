package main

import (
	"fmt"

	"github.com/sqc-dev/sqc/asmgen/kernels"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// AVX2 blocking: 2 rows x 1 N-block (16 columns). The 16 columns of a row
// are held as 4 ymm of 8 int32 "pair sums" (two per column, folded once at
// the end), so 2 rows take 8 accumulators, the widened B 4 ymm, leaving
// room in the 16 ymm registers for the widened A and a product.
const (
	avx2Rows   = 2
	avx2Unroll = 4 // K-groups per loop iteration
)

// genAVX2Kernel emits the AVX2 Kernel.
//
// Exactness: VPMADDUBSW (u8 x s8 pairs -> int16) saturates (255*127*2 >
// 32767), so it is not used. Instead A is zero-extended and B
// sign-extended to int16 (VPMOVZXBW, VPMOVSXBW) and VPMADDWD forms int32
// sums of two products (|sum| <= 2*255*128 = 65280, exact), accumulated
// with VPADDD (wrapping, like the int32 reference).
func genAVX2Kernel(g *gen) {
	g.BlockedKernel(kernels.Blocked{
		Name: "qgemmAVX2",
		Doc: []string{
			"qgemmAVX2 is the AVX2 Kernel: int16 widening + VPMADDWD, exact over the",
			"full u8 x s8 range, 2 rows x 16 columns per micro-kernel.",
		},
		MaxRows: avx2Rows, MaxCols: 1, Micro: avx2Micro,
	})
}

// avx2Micro emits a rows x 16-column block (kp is 0: the generic kernel).
func avx2Micro(g *kernels.Builder, st kernels.LoopState, rows, cols, kp int) {
	if cols != 1 {
		panic("AVX2 micro-kernel is one N-block wide")
	}
	g.Comment(fmt.Sprintf("AVX2 micro-kernel: %d rows x 16 columns.", rows))
	acc := make([][4]reg.VecVirtual, rows)
	for i := range acc {
		for q := range acc[i] {
			acc[i][q] = g.YMM()
			g.ZeroVec(acc[i][q])
		}
	}
	addrs, ptrs := g.RowAddrs(rows)
	g.LoadRowPtrs(st, ptrs, addrs)
	bp := g.GP64()
	g.MOVQ(st.B, bp)
	k := g.KLoopCount(avx2Unroll, kp)

	loop := g.NewLabel("avx2_k")
	g.Label(loop)
	for u := 0; u < avx2Unroll; u++ {
		// B: 64 bytes = 16 columns x 4 K; each 16 bytes (4 columns) widen
		// to one ymm of int16: columns 4q, 4q+1 in the low lane, 4q+2,
		// 4q+3 in the high lane, each as k0 k1 k2 k3.
		var wb [4]reg.VecVirtual
		for q := range wb {
			wb[q] = g.YMM()
			g.VPMOVSXBW(operand.Mem{Base: bp, Disp: 64*u + 16*q}, wb[q])
		}
		for i := 0; i < rows; i++ {
			// A: the 4 bytes k0..k3 of this K-group, repeated, as int16.
			xa := g.XMM()
			g.VPBROADCASTD(addrs[i].Offset(4*u), xa)
			ya := g.YMM()
			g.VPMOVZXBW(xa, ya)
			for q := 0; q < 4; q++ {
				p := g.YMM()
				g.VPMADDWD(wb[q], ya, p) // per column: k0*a0+k1*a1, k2*a2+k3*a3
				g.VPADDD(p, acc[i][q], acc[i][q])
			}
		}
	}
	for _, p := range ptrs {
		g.ADDQ(operand.U8(4*avx2Unroll), p)
	}
	g.ADDQ(operand.U32(64*avx2Unroll), bp)
	g.DECQ(k)
	g.JNZ(operand.LabelRef(loop))

	// Fold the pair sums: VPHADDD gives columns (0 1 4 5 | 2 3 6 7) and
	// VPERMQ $0xD8 puts them in order.
	cp := g.GP64()
	g.MOVQ(st.CRow, cp)
	ldc4 := g.Load("ldc")
	g.SHLQ(operand.U8(2), ldc4)
	for i := 0; i < rows; i++ {
		for h := 0; h < 2; h++ {
			s := g.YMM()
			g.VPHADDD(acc[i][2*h+1], acc[i][2*h], s)
			g.VPERMQ(operand.U8(0xD8), s, s)
			g.VMOVDQU(s, operand.Mem{Base: cp, Disp: 32 * h})
		}
		if i < rows-1 {
			g.ADDQ(ldc4, cp)
		}
	}
}

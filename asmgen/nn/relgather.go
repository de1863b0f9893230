package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
)

// Flags of relGatherAsm (runtime/nn's relGatherDivide and relGatherAdd).
const (
	relGatherDivide = 1 << iota // divide each value by div
	relGatherAdd                // add the value already in dst
)

// genRelGather emits relGatherAsm, DisentangledBias's gather of the
// relative terms for AVX-512: for r < rows and j < cols, 16 columns per
// step (masked on the last),
//
//	v = src[base + idx[r, j]*16 + lane*j]     (VGATHERDPS on the s32 offsets)
//	v = v / div                                (VDIVPS, with relGatherDivide)
//	v = v + dst[r, j]                          (VADDPS, with relGatherAdd)
//	dst[r, j] = v
//
// relGatherGo's operations in its order, so the same bits. The offsets
// are 32-bit: the caller keeps every one (and base + lane*cols) within
// the int32 range and inside src.
func genRelGather(g *gen) {
	g.Function("relGatherAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *float32, dstStride int, src *float32, idx *int32, idxStride int, rows int, cols int, base int, lane int, div float32, flags int)")
	g.Pragma("noescape")
	g.Doc("relGatherAsm is relGatherGo (rows, cols >= 1) with flags relGatherDivide (div != 1) and relGatherAdd (add); strides in elements.")
	dst, src, idx := g.Load("dst"), g.Load("src"), g.Load("idx")
	dstStride, idxStride := g.Load("dstStride"), g.Load("idxStride")
	rows, cols, flags := g.Load("rows"), g.Load("cols"), g.Load("flags")
	g.SHLQ(operand.U8(2), dstStride) // bytes
	g.SHLQ(operand.U8(2), idxStride)

	baseV, laneV, stepV, counts, div := g.ZMM(), g.ZMM(), g.ZMM(), g.ZMM(), g.broadcastParam("div")
	t := g.Load("base")
	g.VPBROADCASTD(t.As32(), baseV)
	lane := g.Load("lane")
	g.VPBROADCASTD(lane.As32(), laneV)
	g.VMOVDQU32(g.iota16, counts)
	g.VPMULLD(counts, laneV, laneV) // lane*j for j = 0..15
	g.SHLQ(operand.U8(4), lane)     // the next 16 columns' lane*j: 16*lane more
	g.VPBROADCASTD(lane.As32(), stepV)

	rowLoop, colLoop := g.NewLabel("relgather_rows"), g.NewLabel("relgather_cols")
	noDiv, noAdd := g.NewLabel("relgather_nodiv"), g.NewLabel("relgather_noadd")
	g.Label(rowLoop)
	j := g.GP64()
	g.XORQ(j, j)
	cur := g.ZMM()
	g.VMOVDQA32(laneV, cur)
	g.Label(colLoop)
	left := g.GP64()
	g.MOVQ(cols, left)
	g.SUBQ(j, left)
	k := g.maskOf(g.minConst(left, 16))
	off, v := g.ZMM(), g.ZMM()
	g.VMOVDQU32_Z(operand.Mem{Base: idx, Index: j, Scale: 4}, k, off)
	g.VPSLLD(operand.U8(4), off, off) // idx*16
	g.VPADDD(baseV, off, off)
	g.VPADDD(cur, off, off)
	kg := g.K() // the gather clears its mask as it goes
	g.KMOVW(k, kg)
	g.ZeroVec(v) // masked-off lanes: no dependency on v's last value
	g.VGATHERDPS(operand.Mem{Base: src, Index: off, Scale: 4}, kg, v)
	g.TESTQ(operand.U32(relGatherDivide), flags)
	g.JZ(operand.LabelRef(noDiv))
	g.VDIVPS(div, v, v) // v / div
	g.Label(noDiv)
	g.TESTQ(operand.U32(relGatherAdd), flags)
	g.JZ(operand.LabelRef(noAdd))
	old := g.ZMM()
	g.VMOVUPS_Z(operand.Mem{Base: dst, Index: j, Scale: 4}, k, old)
	g.VADDPS(old, v, v) // v + dst
	g.Label(noAdd)
	g.VMOVUPS(v, k, operand.Mem{Base: dst, Index: j, Scale: 4})
	g.VPADDD(stepV, cur, cur)
	g.ADDQ(operand.U8(16), j)
	g.CMPQ(j, cols)
	g.JL(operand.LabelRef(colLoop))
	g.ADDQ(dstStride, dst)
	g.ADDQ(idxStride, idx)
	g.DECQ(rows)
	g.JNZ(operand.LabelRef(rowLoop))
	g.VZEROUPPER()
	g.RET()
}

package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The AVX2 forms of LayerNorm's loops (layernorm.go has the AVX-512 ones)
// for CPUs without AVX-512. There are no opmasks: the statistics load a
// row's last partial block of 8 with VMASKMOVPS (masked lanes do not
// fault) and skip its missing columns with branches, since those would
// change the sums of squares; the normalisers take whole groups of 8
// columns and leave the rest to their Go wrappers, which is exact because
// each output depends on its own column only.

// avx2Tables are the 32-byte constants of the AVX2 loops, in one DATA
// section (nnAVX2Lanes): 8 all-ones dwords then 8 zero dwords, whose
// window at dword 8-w is the VMASKMOVPS mask of the first w lanes
// (tail).
type avx2Tables struct {
	tail operand.Mem
}

// genAVX2Tables emits the DATA section of avx2Tables.
func genAVX2Tables(g *gen) avx2Tables {
	m := g.StaticGlobal("nnAVX2Lanes")
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	for i := range 16 { // in address order, as the Go assembler wants DATA
		v := uint32(0)
		if i < 8 {
			v = 0xffffffff
		}
		g.AddDatum(4*i, operand.U32(v))
	}
	return avx2Tables{tail: m}
}

// genLayerNormAVX2 emits the AVX2 forms of LayerNorm's and the quantisers'
// inner loops (runtime/nn kernels lnStats16, lnNormalize, lnNormalizeDual,
// quantize, minMax) for CPUs without AVX-512.
func genLayerNormAVX2(g *gen) {
	tab := genAVX2Tables(g)
	genLNStatsAVX2(g, tab)
}

// ymmParam64 broadcasts the named 8-byte float argument to the 4 lanes of
// a new ymm register.
func (g *gen) ymmParam64(name string) reg.VecVirtual {
	y := g.YMM()
	g.VBROADCASTSD(g.ParamAddr(name), y)
	return y
}

// genLNStatsAVX2 emits lnStats16AVX2Asm, lnStats16Asm's statistics on
// ymm: the 16 rows are 4 groups of 4, each group's row sums in the 4
// float64 lanes of one accumulator. Per block of 8 columns a group's 4
// rows are loaded and transposed in-lane (VUNPCKLPS/HPS, VUNPCKLPD/HPD)
// to 4 vectors holding columns u and u+4 of the 4 rows; each column is
// then widened to float64 and added in column order. The sums are
// latency-bound chains (one VADDPD per column and group), so the 4 groups
// in flight are what keeps the adder busy.
func genLNStatsAVX2(g *gen, tab avx2Tables) {
	g.Function("lnStats16AVX2Asm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(x *float32, stride int, n int, count float64, eps float64, mean *float64, inv *float64)")
	g.Pragma("noescape")
	g.Doc("lnStats16AVX2Asm is lnStats16Asm on AVX2: it writes the float64 mean and",
		"1/sqrt(variance+eps) of 16 rows of n float32 values (row r at x[r*stride]; n >= 1,",
		"count = float64(n)) to mean[0..15] and inv[0..15], with sequential sums in column order.")
	s := g.Load("stride")
	g.SHLQ(operand.U8(2), s)
	s3 := g.GP64()
	g.LEAQ(operand.Mem{Base: s, Index: s, Scale: 2}, s3)
	meanPtr := g.Load("mean")

	// pass runs f(group, column) on the float64 lanes of each group's
	// 4 rows, for each column in order.
	pass := func(f func(grp int, v reg.VecVirtual)) {
		col, left := g.Load("x"), g.Load("n")
		loop, tail, done := g.NewLabel("lns2_cols"), g.NewLabel("lns2_tail"), g.NewLabel("lns2_done")
		// body processes one block of 8 columns, or with mask set the
		// first w (1..7) of them, loaded under mask.
		body := func(mask reg.VecVirtual, w reg.GPVirtual) {
			for grp := range 4 {
				p := col
				if grp > 0 {
					p = g.GP64()
					switch grp {
					case 1:
						g.LEAQ(operand.Mem{Base: col, Index: s, Scale: 4}, p)
					case 2:
						g.LEAQ(operand.Mem{Base: col, Index: s, Scale: 8}, p)
					case 3:
						g.LEAQ(operand.Mem{Base: col, Index: s3, Scale: 4}, p)
					}
				}
				rowMem := []operand.Mem{
					{Base: p}, {Base: p, Index: s, Scale: 1}, {Base: p, Index: s, Scale: 2}, {Base: p, Index: s3, Scale: 1},
				}
				var rows [4]reg.VecVirtual
				for i, m := range rowMem {
					rows[i] = g.YMM()
					if mask == nil {
						g.VMOVUPS(m, rows[i])
					} else {
						g.VMASKMOVPS(m, mask, rows[i]) // zero past w, no fault
					}
				}
				// rows a, b, c, d (columns 0-3 | 4-7) to lo = a0 b0 a1 b1 | a4 b4 a5 b5, ...
				t0, t1, t2, t3 := g.YMM(), g.YMM(), g.YMM(), g.YMM()
				g.VUNPCKLPS(rows[1], rows[0], t0)
				g.VUNPCKHPS(rows[1], rows[0], t1)
				g.VUNPCKLPS(rows[3], rows[2], t2)
				g.VUNPCKHPS(rows[3], rows[2], t3)
				cols := [4]reg.VecVirtual{g.YMM(), g.YMM(), g.YMM(), g.YMM()} // column u | column u+4
				g.VUNPCKLPD(t2, t0, cols[0])
				g.VUNPCKHPD(t2, t0, cols[1])
				g.VUNPCKLPD(t3, t1, cols[2])
				g.VUNPCKHPD(t3, t1, cols[3])
				end := g.NewLabel("lns2_group")
				for u := range 8 {
					if mask != nil && u > 0 {
						g.CMPQ(w, operand.U32(u))
						g.JLE(operand.LabelRef(end))
					}
					src := cols[u%4].AsX()
					if u >= 4 {
						src = g.XMM()
						g.VEXTRACTF128(operand.U8(1), cols[u-4], src)
					}
					v := g.YMM()
					g.VCVTPS2PD(src, v)
					f(grp, v)
				}
				g.Label(end)
			}
		}
		g.Label(loop)
		g.CMPQ(left, operand.U8(8))
		g.JL(operand.LabelRef(tail))
		body(nil, nil)
		g.ADDQ(operand.U8(32), col)
		g.SUBQ(operand.U8(8), left)
		g.JMP(operand.LabelRef(loop))

		g.Label(tail)
		g.TESTQ(left, left)
		g.JZ(operand.LabelRef(done))
		idx, tp := g.GP64(), g.GP64()
		g.MOVQ(operand.U32(8), idx)
		g.SUBQ(left, idx)
		g.LEAQ(tab.tail, tp) // RIP-relative addresses take no index
		mask := g.YMM()
		g.VMOVDQU(operand.Mem{Base: tp, Index: idx, Scale: 4}, mask) // lanes < left set
		body(mask, left)
		g.Label(done)
	}

	var sums [4]reg.VecVirtual
	for i := range sums {
		sums[i] = g.YMM()
		g.ZeroVec(sums[i])
	}
	pass(func(grp int, v reg.VecVirtual) { g.VADDPD(v, sums[grp], sums[grp]) })
	count := g.ymmParam64("count")
	for i, sum := range sums {
		g.VDIVPD(count, sum, sum) // sum / count
		g.VMOVUPD(sum, operand.Mem{Base: meanPtr, Disp: 32 * i})
	}

	var sqs [4]reg.VecVirtual
	for i := range sqs {
		sqs[i] = g.YMM()
		g.ZeroVec(sqs[i])
	}
	pass(func(grp int, v reg.VecVirtual) {
		g.VSUBPD(operand.Mem{Base: meanPtr, Disp: 32 * grp}, v, v) // x - mean
		g.VMULPD(v, v, v)
		g.VADDPD(v, sqs[grp], sqs[grp])
	})
	count = g.ymmParam64("count")
	eps := g.ymmParam64("eps")
	one := g.YMM()
	g.VBROADCASTSD(g.consts.f64(1), one)
	invPtr := g.Load("inv")
	for i, sq := range sqs {
		g.VDIVPD(count, sq, sq) // sq / count
		g.VADDPD(eps, sq, sq)
		g.VSQRTPD(sq, sq)
		g.VDIVPD(sq, one, sq) // 1 / sqrt
		g.VMOVUPD(sq, operand.Mem{Base: invPtr, Disp: 32 * i})
	}
	g.VZEROUPPER()
	g.RET()
}

package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Register-only peak loops for BenchmarkPeak: independent accumulator
// chains, no memory operands, so they measure the multiply-add units alone.
// Operations per iteration (2 per multiply-add) are in
// runtime/qgemm/peak_amd64_test.go.
const peakChains = 24 // enough independent accumulators to hide latency on 2 ports

// peakChainsYMM is the AVX2 loops' chain count: 12 accumulators, a source
// and a temporary fit the 16 ymm registers and still cover 4-cycle
// latency at 2 per cycle.
const peakChainsYMM = 12

func genPeaks(g *gen) {
	genPeakVec(g, "peakVNNI", "VPDPBUSD zmm", g.ZMM, peakChains, func(src, acc, _ reg.VecVirtual) { g.VPDPBUSD(src, src, acc) })
	genPeakVec(g, "peakFP32", "VFMADD231PS zmm", g.ZMM, peakChains, func(src, acc, _ reg.VecVirtual) { g.VFMADD231PS(src, src, acc) })
	// The AVX2 kernel's inner step: VPMADDWD (16 int16 products summed in
	// pairs) then VPADDD into the accumulator; one temporary serves every
	// chain, register renaming removes the false dependence.
	genPeakVec(g, "peakAVX2", "VPMADDWD + VPADDD ymm", g.YMM, peakChainsYMM, func(src, acc, tmp reg.VecVirtual) {
		g.VPMADDWD(src, src, tmp)
		g.VPADDD(tmp, acc, acc)
	})
	genPeakVec(g, "peakFP32AVX2", "VFMADD231PS ymm", g.YMM, peakChainsYMM, func(src, acc, _ reg.VecVirtual) { g.VFMADD231PS(src, src, acc) })
	genPeakAMX(g)
}

// genPeakVec emits name: iters iterations of op on chains independent
// accumulators made by vec (g.ZMM or g.YMM); op may use the temporary
// register it is given.
func genPeakVec(g *gen, name, what string, vec func() reg.VecVirtual, chains int, op func(src, acc, tmp reg.VecVirtual)) {
	g.Function(name)
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(iters int)")
	g.Doc(fmt.Sprintf("%s runs iters iterations of %d independent %s (register peak).", name, chains, what))
	n := g.Load("iters")
	src := vec()
	g.ZeroVec(src)
	acc := make([]reg.VecVirtual, chains)
	for i := range acc {
		acc[i] = vec()
		g.ZeroVec(acc[i])
	}
	loop, done := g.NewLabel("peak"), g.NewLabel("peak_done")
	g.TESTQ(n, n)
	g.JZ(operand.LabelRef(done))
	g.Label(loop)
	tmp := vec()
	for _, a := range acc {
		op(src, a, tmp)
	}
	g.DECQ(n)
	g.JNZ(operand.LabelRef(loop))
	g.Label(done)
	// Keep the accumulators live to the end (avo would otherwise see them
	// as dead and could share registers).
	or := "VPORD" // EVEX: zmm
	if src.Size() == 32 {
		or = "VPOR" // VEX: ymm
	}
	for _, a := range acc {
		g.Instruction(&ir.Instruction{Opcode: or, Operands: []operand.Op{a, src, src}, Inputs: []operand.Op{a, src}, Outputs: []operand.Op{src}})
	}
	g.VZEROUPPER()
	g.RET()
}

// genPeakAMX emits peakAMX: iters x 8 TDPBUSD on a 2x2 block of C tiles.
func genPeakAMX(g *gen) {
	g.Function("peakAMX")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(iters int)")
	g.Doc("peakAMX runs iters iterations of 8 TDPBUSD on four C tiles (register peak).",
		"The caller must hold the AMX tile-data permission.")
	cfg := g.AllocLocal(64)
	zero := g.GP64()
	g.XORQ(zero, zero)
	for off := 0; off < 64; off += 8 {
		g.MOVQ(zero, cfg.Offset(off))
	}
	g.MOVB(operand.U8(1), cfg)
	w := g.GP64()
	g.MOVQ(operand.U64(0x0040004000400040), w)
	g.MOVQ(w, cfg.Offset(16))
	g.MOVQ(w, cfg.Offset(24))
	g.MOVQ(operand.U64(0x1010101010101010), w)
	g.MOVQ(w, cfg.Offset(48))
	p := g.GP64()
	g.LEAQ(cfg, p)
	g.amxLdTileCfg(p)
	n := g.Load("iters")
	loop, done := g.NewLabel("peak"), g.NewLabel("peak_done")
	g.TESTQ(n, n)
	g.JZ(operand.LabelRef(done))
	g.Label(loop)
	for r := 0; r < 2; r++ {
		for i := 0; i < 2; i++ {
			for j := 0; j < 2; j++ {
				g.amxTDPBUSD(tileC(i, j), tileA(i), tileB(j))
			}
		}
	}
	g.DECQ(n)
	g.JNZ(operand.LabelRef(loop))
	g.Label(done)
	g.amxTileRelease()
	g.RET()
}

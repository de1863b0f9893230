package main

import (
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

func genPeaks(g *gen) {
	genPeakVec(g, "peakVNNI", "VPDPBUSD zmm", func(src, acc reg.VecVirtual) { g.VPDPBUSD(src, src, acc) })
	genPeakVec(g, "peakFP32", "VFMADD231PS zmm", func(src, acc reg.VecVirtual) { g.VFMADD231PS(src, src, acc) })
	genPeakAMX(g)
}

func genPeakVec(g *gen, name, what string, op func(src, acc reg.VecVirtual)) {
	g.Function(name)
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(iters int)")
	g.Doc(name + " runs iters iterations of 24 independent " + what + " (register peak).")
	n := g.Load("iters")
	src := g.ZMM()
	g.ZeroVec(src)
	acc := make([]reg.VecVirtual, peakChains)
	for i := range acc {
		acc[i] = g.ZMM()
		g.ZeroVec(acc[i])
	}
	loop, done := g.NewLabel("peak"), g.NewLabel("peak_done")
	g.TESTQ(n, n)
	g.JZ(operand.LabelRef(done))
	g.Label(loop)
	for _, a := range acc {
		op(src, a)
	}
	g.DECQ(n)
	g.JNZ(operand.LabelRef(loop))
	g.Label(done)
	// Keep the accumulators live to the end (avo would otherwise see them
	// as dead and could share registers).
	for _, a := range acc {
		g.Instruction(&ir.Instruction{Opcode: "VPORD", Operands: []operand.Op{a, src, src}, Inputs: []operand.Op{a, src}, Outputs: []operand.Op{src}})
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

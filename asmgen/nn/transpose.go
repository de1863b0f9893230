package main

import (
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// transpose16 transposes a 16x16 block of 4-byte elements held in 16 zmm
// registers (in[r] lane c = element (r, c)) and returns out with out[c]
// lane r = element (r, c): 64 shuffles in four stages (unpack 32-bit
// pairs, unpack 64-bit pairs, then two rounds of 128-bit lane shuffles).
// Registers of in may repeat (a shared zero row).
func (g *gen) transpose16(in [16]reg.VecVirtual) [16]reg.VecVirtual {
	// Stage 1: t[2i] = [a0 b0 a1 b1], t[2i+1] = [a2 b2 a3 b3] per 128-bit
	// lane, of rows a = in[2i], b = in[2i+1].
	var t [16]reg.VecVirtual
	for i := range 8 {
		t[2*i], t[2*i+1] = g.ZMM(), g.ZMM()
		g.VUNPCKLPS(in[2*i+1], in[2*i], t[2*i])
		g.VUNPCKHPS(in[2*i+1], in[2*i], t[2*i+1])
	}
	// Stage 2: u[4q+m] lane L = column 4L+m of rows 4q .. 4q+3.
	var u [16]reg.VecVirtual
	for q := range 4 {
		for m := range 4 {
			u[4*q+m] = g.ZMM()
		}
		g.VUNPCKLPD(t[4*q+2], t[4*q], u[4*q])
		g.VUNPCKHPD(t[4*q+2], t[4*q], u[4*q+1])
		g.VUNPCKLPD(t[4*q+3], t[4*q+1], u[4*q+2])
		g.VUNPCKHPD(t[4*q+3], t[4*q+1], u[4*q+3])
	}
	// Stage 3: for the row halves h (rows 8h .. 8h+7), even[h][m] =
	// [col m, col 8+m] x [rows 8h..8h+3, rows 8h+4..8h+7] and odd[h][m] the
	// same for columns 4+m and 12+m.
	var even, odd [2][4]reg.VecVirtual
	for h := range 2 {
		for m := range 4 {
			even[h][m], odd[h][m] = g.ZMM(), g.ZMM()
			a, b := u[8*h+m], u[8*h+4+m]
			g.VSHUFF32X4(operand.U8(0x88), b, a, even[h][m]) // a.L0 a.L2 b.L0 b.L2
			g.VSHUFF32X4(operand.U8(0xDD), b, a, odd[h][m])  // a.L1 a.L3 b.L1 b.L3
		}
	}
	// Stage 4: whole columns.
	var out [16]reg.VecVirtual
	for m := range 4 {
		for _, c := range []int{m, 4 + m, 8 + m, 12 + m} {
			out[c] = g.ZMM()
		}
		g.VSHUFF32X4(operand.U8(0x88), even[1][m], even[0][m], out[m])
		g.VSHUFF32X4(operand.U8(0xDD), even[1][m], even[0][m], out[8+m])
		g.VSHUFF32X4(operand.U8(0x88), odd[1][m], odd[0][m], out[4+m])
		g.VSHUFF32X4(operand.U8(0xDD), odd[1][m], odd[0][m], out[12+m])
	}
	return out
}

// loadRows loads 16 consecutive rows (row r at p + r*strideB bytes) under
// the column opmask k into new zmm registers, advancing a copy of p. With
// rows set, only rows r < *rows are read and the others are zero; the
// caller guarantees rows >= 1.
func (g *gen) loadRows(p, strideB reg.GPVirtual, k reg.OpmaskVirtual, rows reg.GPVirtual) [16]reg.VecVirtual {
	var z [16]reg.VecVirtual
	ptr := g.GP64()
	g.MOVQ(p, ptr)
	done := g.NewLabel("rows_loaded")
	if rows != nil {
		for r := range z {
			z[r] = g.zeroZMM()
		}
	}
	for r := range z {
		if rows == nil {
			z[r] = g.ZMM()
		} else if r > 0 {
			g.CMPQ(rows, operand.U32(r))
			g.JLE(operand.LabelRef(done))
		}
		g.VMOVUPS_Z(operand.Mem{Base: ptr}, k, z[r])
		if r < 15 {
			g.ADDQ(strideB, ptr)
		}
	}
	if rows != nil {
		g.Label(done)
	}
	return z
}

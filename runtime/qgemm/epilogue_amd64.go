//go:build amd64 && !noasm

package qgemm

import "fmt"

// Feature bits of epilogueAVX512Asm's flags (asmgen/qgemm/epilogue.go);
// the bits from epiActShift up hold the Act.
const (
	epiColSum = 1 << iota
	epiBias
	epiResidual
	epiU8
	epiRow

	epiActShift = 8
)

// epilogueAsm is the signature of the generated epilogues
// (epilogueAVX512Asm, epilogueAVX2Asm): pointers at column 0 of the block,
// strides in elements; false when it has no loop for the activation.
type epilogueAsm func(c *int32, ldc int, m int, n int, colSum *int32, aZero int32, rowZero *int32, scale *float32, rowScale *float32, bias *float32, res *float32, resStride int, outF32 *float32, outU8 *uint8, outStride int, invScale float32, outZero int32, clampLo float32, clampHi float32, flags int) bool

// epilogueAVX512 is the AVX-512 EpilogueFunc: 16 columns per step under an
// opmask, the same bits as epilogueGo.
func epilogueAVX512(ep *Epilogue, c []int32, ldc int, m0, n0, m, n int) {
	runEpilogueAsm(epilogueAVX512Asm, ep, c, ldc, m0, n0, m, n)
}

// epilogueAVX2 is the AVX2 + FMA3 EpilogueFunc: 8 columns per step, the
// same bits as epilogueGo. Having no opmasks, the assembly takes the
// block's columns in whole groups of 8; epilogueGo does the rest (each
// element's value depends on its own row and column only).
func epilogueAVX2(ep *Epilogue, c []int32, ldc int, m0, n0, m, n int) {
	n8 := n &^ 7
	if n8 > 0 {
		runEpilogueAsm(epilogueAVX2Asm, ep, c, ldc, m0, n0, m, n8)
	}
	if n8 < n && m > 0 {
		epilogueGo(ep, c[n8:], ldc, m0, n0+n8, m, n-n8)
	}
}

// runEpilogueAsm applies ep to the block with asm. It checks every slice
// bound the block touches before handing raw pointers to the assembly,
// and panics as epilogueGo would on a slice that is too short.
func runEpilogueAsm(asm epilogueAsm, ep *Epilogue, c []int32, ldc int, m0, n0, m, n int) {
	if m <= 0 || n <= 0 {
		return
	}
	if (ep.RowScale != nil) != (ep.RowZeroPoint != nil) || !asmZeroPoint(ep) {
		// Only one of the per-row operands, or a u8 zero point the
		// assembly's clamp does not cover: no assembly variant (dynamic
		// quantisation sets both; u8 zero points are in [0, 255]); the Go
		// epilogue gives the reference bits.
		epilogueGo(ep, c, ldc, m0, n0, m, n)
		return
	}
	// Rows are addressed at increasing offsets (strides >= 0), so checking
	// the first and last element of each operand covers the block.
	span := func(what string, length, first, stride int) {
		last := first + (m-1)*stride + n - 1
		if first < 0 || stride < 0 || last >= length {
			panic(fmt.Sprintf("qgemm: epilogue %s out of range: len %d, block %dx%d at %d, stride %d",
				what, length, m, n, first, stride))
		}
	}
	span("accumulators", len(c), 0, ldc)
	flags := 0
	var colSum *int32
	if ep.ColSum != nil {
		span("ColSum", len(ep.ColSum), n0, 0)
		colSum = &ep.ColSum[n0]
		flags |= epiColSum
	}
	span("Scale", len(ep.Scale), n0, 0)
	var rowZero *int32
	var rowScale *float32
	if ep.RowScale != nil {
		if m0 < 0 || len(ep.RowScale) < m0+m || len(ep.RowZeroPoint) < m0+m {
			panic(fmt.Sprintf("qgemm: epilogue RowScale/RowZeroPoint out of range: len %d/%d, rows %d..%d",
				len(ep.RowScale), len(ep.RowZeroPoint), m0, m0+m-1))
		}
		rowZero, rowScale = &ep.RowZeroPoint[m0], &ep.RowScale[m0]
		flags |= epiRow
	}
	var bias *float32
	if ep.Bias != nil {
		span("Bias", len(ep.Bias), n0, 0)
		bias = &ep.Bias[n0]
		flags |= epiBias
	}
	flags |= int(ep.Act) << epiActShift
	var res *float32
	if ep.Residual != nil {
		first := m0*ep.ResidualStride + n0
		span("Residual", len(ep.Residual), first, ep.ResidualStride)
		res = &ep.Residual[first]
		flags |= epiResidual
	}
	first := m0*ep.OutStride + n0
	var outF32 *float32
	var outU8 *uint8
	var clampLo, clampHi float32
	if ep.OutF32 != nil {
		span("OutF32", len(ep.OutF32), first, ep.OutStride)
		outF32 = &ep.OutF32[first]
	} else {
		span("OutU8", len(ep.OutU8), first, ep.OutStride)
		outU8 = &ep.OutU8[first]
		clampLo, clampHi = float32(-ep.OutZeroPoint), float32(255-ep.OutZeroPoint)
		flags |= epiU8
	}
	if !asm(&c[0], ldc, m, n, colSum, ep.AZeroPoint, rowZero, &ep.Scale[n0], rowScale, bias, res,
		ep.ResidualStride, outF32, outU8, ep.OutStride, ep.OutInvScale, ep.OutZeroPoint, clampLo, clampHi, flags) {
		epilogueGo(ep, c, ldc, m0, n0, m, n) // an Act with no assembly loop
	}
}

// asmZeroPoint reports whether the assembly's u8 quantisation gives
// quantizeU8's bits for ep: it clamps v*OutInvScale straight to
// [-OutZeroPoint, 255-OutZeroPoint] before rounding, which equals
// quantizeU8's clamp to [-quantClamp, quantClamp], round, add, clamp to
// [0, 255] when that interval lies inside [-quantClamp, quantClamp] (its
// ends are then exact float32 integers).
func asmZeroPoint(ep *Epilogue) bool {
	zp := ep.OutZeroPoint
	return ep.OutF32 != nil || (-zp >= -int32(quantClamp) && 255-zp <= int32(quantClamp))
}

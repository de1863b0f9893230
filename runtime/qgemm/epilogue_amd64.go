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
	epiResidualMul // multiply by the residual (Epilogue.MulResidual); only with epiResidual

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
	args, ok := epilogueAsmArgsFor(ep, m0, n0, m, n)
	if !ok {
		epilogueGo(ep, c, ldc, m0, n0, m, n)
		return
	}
	checkSpan("accumulators", len(c), 0, ldc, m, n)
	if !asm(&c[0], ldc, m, n, args.colSum, args.aZero, args.rowZero, args.scale, args.rowScale, args.bias, args.res,
		args.resStride, args.outF32, args.outU8, args.outStride, args.invScale, args.outZero, args.clampLo, args.clampHi, args.flags) {
		epilogueGo(ep, c, ldc, m0, n0, m, n) // an Act with no assembly loop
	}
}

// epilogueAsmArgs are the arguments of an epilogueAsm after c, ldc, m and
// n: for the block of output rows m0.. and columns n0.., the pointers at
// its origin.
type epilogueAsmArgs struct {
	colSum           *int32
	aZero            int32
	rowZero          *int32
	scale, rowScale  *float32
	bias, res        *float32
	resStride        int
	outF32           *float32
	outU8            *uint8
	outStride        int
	invScale         float32
	outZero          int32
	clampLo, clampHi float32
	flags            int
}

// epilogueAsmArgsFor returns the assembly's arguments for ep's m x n block
// at (m0, n0) (m, n >= 1), having checked every slice bound the block
// touches (it panics as epilogueGo would on a slice that is too short), or
// false when no assembly gives epilogueGo's bits for ep.
func epilogueAsmArgsFor(ep *Epilogue, m0, n0, m, n int) (epilogueAsmArgs, bool) {
	var args epilogueAsmArgs
	if (ep.RowScale != nil) != (ep.RowZeroPoint != nil) || !asmZeroPoint(ep) {
		// Only one of the per-row operands, or a u8 zero point the
		// assembly's clamp does not cover: no assembly variant (dynamic
		// quantisation sets both; u8 zero points are in [0, 255]); the Go
		// epilogue gives the reference bits.
		return args, false
	}
	if ep.ColSum != nil {
		checkSpan("ColSum", len(ep.ColSum), n0, 0, m, n)
		args.colSum = &ep.ColSum[n0]
		args.flags |= epiColSum
	}
	args.aZero = ep.AZeroPoint
	checkSpan("Scale", len(ep.Scale), n0, 0, m, n)
	args.scale = &ep.Scale[n0]
	if ep.RowScale != nil {
		if m0 < 0 || len(ep.RowScale) < m0+m || len(ep.RowZeroPoint) < m0+m {
			panic(fmt.Sprintf("qgemm: epilogue RowScale/RowZeroPoint out of range: len %d/%d, rows %d..%d",
				len(ep.RowScale), len(ep.RowZeroPoint), m0, m0+m-1))
		}
		args.rowZero, args.rowScale = &ep.RowZeroPoint[m0], &ep.RowScale[m0]
		args.flags |= epiRow
	}
	if ep.Bias != nil {
		checkSpan("Bias", len(ep.Bias), n0, 0, m, n)
		args.bias = &ep.Bias[n0]
		args.flags |= epiBias
	}
	args.flags |= int(ep.Act) << epiActShift
	if ep.Residual != nil {
		first := m0*ep.ResidualStride + n0
		checkSpan("Residual", len(ep.Residual), first, ep.ResidualStride, m, n)
		args.res = &ep.Residual[first]
		args.resStride = ep.ResidualStride
		args.flags |= epiResidual
		if ep.MulResidual {
			args.flags |= epiResidualMul
		}
	}
	first := m0*ep.OutStride + n0
	args.outStride, args.invScale, args.outZero = ep.OutStride, ep.OutInvScale, ep.OutZeroPoint
	if ep.OutF32 != nil {
		checkSpan("OutF32", len(ep.OutF32), first, ep.OutStride, m, n)
		args.outF32 = &ep.OutF32[first]
	} else {
		checkSpan("OutU8", len(ep.OutU8), first, ep.OutStride, m, n)
		args.outU8 = &ep.OutU8[first]
		args.clampLo, args.clampHi = float32(-ep.OutZeroPoint), float32(255-ep.OutZeroPoint)
		args.flags |= epiU8
	}
	return args, true
}

// checkSpan panics unless the m x n block of an operand of the given
// length, at first with row stride stride (0: one row serves every row),
// lies inside it. Rows are addressed at increasing offsets (strides >= 0),
// so checking the first and last element covers the block.
func checkSpan(what string, length, first, stride, m, n int) {
	last := first + (m-1)*stride + n - 1
	if first < 0 || stride < 0 || last >= length {
		panic(fmt.Sprintf("qgemm: epilogue %s out of range: len %d, block %dx%d at %d, stride %d",
			what, length, m, n, first, stride))
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

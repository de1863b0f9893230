//go:build amd64 && !noasm

package nn

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/sqc-dev/sqc/internal/lnstats"
	"github.com/sqc-dev/sqc/runtime/cpu"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// archKernels returns the best assembly kernels this CPU can run: AVX-512
// (F, BW and VL, with the OS saving zmm and opmask state), else AVX2 with
// FMA3 (the OS saving ymm state), else nil.
func archKernels(f cpu.Features) *kernels {
	if ks := archKernelSets(f); len(ks) > 0 {
		return ks[0]
	}
	return nil
}

// archKernelSets returns every assembly kernel set this CPU can run, best
// first; tests compare each with the Go kernels.
func archKernelSets(f cpu.Features) []*kernels {
	var ks []*kernels
	if f.AVX512 {
		ks = append(ks, asmKernels())
	}
	if f.AVX2 && f.FMA {
		ks = append(ks, avx2Kernels())
	}
	return ks
}

// asmKernels returns the AVX-512 kernels. The wrappers below check every
// slice bound the assembly touches before passing raw pointers, and panic
// as the Go kernels would on a slice that is too short.
func asmKernels() *kernels {
	return &kernels{
		name:            "avx512",
		attnTranspose:   transposeAVX512,
		attnScores:      scoresWith(attnScoresAsm),
		attnSoftmax:     softmaxWith(attnSoftmaxAsm),
		attnSoftmaxS32:  softmaxS32With(attnSoftmaxS32Asm),
		attnPV:          pvWith(attnPVAsm, 1),
		attnScores2:     scores2AVX512, // attention_amd64.go
		lnStats16:       lnStats16AVX512,
		lnNormalize:     lnNormalizeAVX512,
		lnNormalizeDual: lnNormalizeDualAVX512, // layernorm_dual_amd64.go
		quantize:        quantizeAVX512,
		minMax:          minMaxAVX512,
		quantizeRows:    quantizeRowsAVX512,
		minMaxRows:      minMaxRowsAVX512,
		absMaxCols:      absMaxColsAVX512,
		packValues4:     packValues4AVX2, // AVX2 (every AVX-512 CPU has it): no AVX-512 form yet
		attnProbs:       probsWith(probsT16Asm),
		packQueries16:   packQueries16With(packQueries16Asm),
		packValueGroups: packValueGroupsAVX512,
		symScales:       symScalesAVX512,
		linearTile:      linearTileWith(linearRows4Asm, linearRows1Asm, 1),
		gelu:            geluAVX512,
		geluTanh:        geluTanhAVX512,
		silu:            siluAVX512,
		rotary:          rotaryAVX512,
		relGather:       relGatherAVX512,
	}
}

// need panics unless a slice of length n holds rows rows of width
// elements at the given stride (the last row need not be full-stride).
func need[T any](what string, s []T, rows, stride, width int) {
	if rows <= 0 || width <= 0 {
		return
	}
	if stride < 0 || (rows-1)*stride+width > len(s) {
		panic(fmt.Sprintf("nn: %s out of range: len %d, %d rows of %d at stride %d", what, len(s), rows, width, stride))
	}
}

// ptr is the address of s's first element (nil for an empty slice, which
// the kernels then do not read).
func ptr[T any](s []T) *T { return unsafe.SliceData(s) }

func transposeAVX512(dst, src []float32, stride, rows, cols int) {
	if cols <= 0 {
		return
	}
	need("transpose destination", dst, 1, 0, attnRows*cols)
	need("transpose source", src, rows, stride, cols)
	if rows <= 0 || rows > attnRows {
		panic(fmt.Sprintf("nn: transpose of %d rows", rows))
	}
	attnTransposeAsm(ptr(dst), ptr(src), stride, rows, cols)
}

// The assembly signatures of attention's kernels, shared by the AVX-512
// and AVX2 forms (asmgen/nn), and the wrappers that check bounds for them.
type (
	scoresAsmFunc  func(s, qT, k *float32, kStride, sk, d int)
	softmaxAsmFunc func(s *float32, sk int, scale float32, mask *float32, maskMode int, sums *float32)
	// softmaxS32AsmFunc is attnSoftmaxS32Asm's, and its AVX2 form's.
	softmaxS32AsmFunc func(s *float32, sk int, scale float32, mask *float32, maskMode int, sums *float32, c *int32, ldc int, colSum *int32, colScale *float32, rowZP *int32, rowScale *float32)
	pvAsmFunc         func(out *float32, outStride, rows int, p, v *float32, vStride, sk, d int, sums *float32)
)

// scoresWith returns kernels.attnScores on asm.
func scoresWith(asm scoresAsmFunc) func(sT, qT, k []float32, kStride, sk, d int) {
	return func(sT, qT, k []float32, kStride, sk, d int) {
		if sk <= 0 || d <= 0 {
			clear(sT[:attnRows*max(sk, 0)])
			return
		}
		need("scores", sT, 1, 0, attnRows*sk)
		need("transposed queries", qT, 1, 0, attnRows*d)
		need("keys", k, sk, kStride, d)
		asm(ptr(sT), ptr(qT), ptr(k), kStride, sk, d)
	}
}

// softmaxWith returns kernels.attnSoftmax on asm.
func softmaxWith(asm softmaxAsmFunc) func(sT []float32, sk int, scale float32, mask []float32, maskT bool, sums *[attnRows]float32) {
	return func(sT []float32, sk int, scale float32, mask []float32, maskT bool, sums *[attnRows]float32) {
		need("scores", sT, 1, 0, attnRows*sk)
		mode := softmaxMaskMode(mask, maskT, sk)
		asm(ptr(sT), max(sk, 0), scale, ptr(mask), mode, &sums[0])
	}
}

// softmaxMaskMode checks the mask of a softmax over sk keys and returns
// the kernels' mask mode for it (asmgen/nn/attention.go): 0 none, 1 one
// value per key, 2 transposed (16 per key).
func softmaxMaskMode(mask []float32, maskT bool, sk int) int {
	switch {
	case mask == nil:
		return 0
	case maskT:
		need("transposed mask", mask, 1, 0, attnRows*sk)
		return 2
	default:
		need("mask", mask, 1, 0, sk)
		return 1
	}
}

// softmaxS32With returns kernels.attnSoftmaxS32 on asm.
func softmaxS32With(asm softmaxS32AsmFunc) func(sT []float32, sk int, scale float32, mask []float32, maskT bool, sums *[attnRows]float32, in *s32Scores) {
	return func(sT []float32, sk int, scale float32, mask []float32, maskT bool, sums *[attnRows]float32, in *s32Scores) {
		sk = max(sk, 0)
		need("scores", sT, 1, 0, attnRows*sk)
		need("s32 scores", in.c, sk, in.ldc, attnRows)
		need("query column sums", in.colSum, 1, 0, attnRows)
		need("query scales", in.colScale, 1, 0, attnRows)
		need("key zero points", in.rowZP, 1, 0, sk)
		need("key scales", in.rowScale, 1, 0, sk)
		mode := softmaxMaskMode(mask, maskT, sk)
		asm(ptr(sT), sk, scale, ptr(mask), mode, &sums[0], ptr(in.c), in.ldc, ptr(in.colSum), ptr(in.colScale), ptr(in.rowZP), ptr(in.rowScale))
	}
}

// pvWith returns kernels.attnPV on asm, which takes the columns in
// multiples of colStep; pvGo computes the rest (each column is its own
// sum, so splitting them changes no bit).
func pvWith(asm pvAsmFunc, colStep int) func(out []float32, outStride, rows int, pT, v []float32, vStride, sk, d int, sums *[attnRows]float32, acc []float32) {
	return func(out []float32, outStride, rows int, pT, v []float32, vStride, sk, d int, sums *[attnRows]float32, acc []float32) {
		if rows <= 0 || d <= 0 {
			return
		}
		if rows > attnRows {
			panic(fmt.Sprintf("nn: P·V of %d rows", rows))
		}
		sk = max(sk, 0)
		need("output", out, rows, outStride, d)
		need("probabilities", pT, 1, 0, attnRows*sk)
		need("values", v, sk, vStride, d)
		dAsm := d / colStep * colStep
		if dAsm > 0 {
			asm(ptr(out), outStride, rows, ptr(pT), ptr(v), vStride, sk, dAsm, &sums[0])
		}
		if dAsm < d {
			var vTail []float32
			if sk > 0 {
				vTail = v[dAsm:]
			}
			pvGo(out[dAsm:], outStride, rows, pT, vTail, vStride, sk, d-dAsm, sums, acc)
		}
	}
}

func lnStats16AVX512(x []float32, stride, n int, eps float32, mean, inv *[lnGroup]float64) {
	need("LayerNorm rows", x, lnGroup, stride, n)
	lnStats16Asm(ptr(x), stride, n, float64(n), float64(eps), &mean[0], &inv[0])
}

// Flag bits of lnNormAsm: asmgen/nn/layernorm.go.
const (
	lnBeta = 1 << iota
	lnF32
	lnU8
)

// lnNormFlags checks every slice lnNormAsm or lnNormAVX2Asm reads or
// writes for the row x and returns their flags (0: nothing to write).
func lnNormFlags(y []float32, q []uint8, x []float32, ln *LayerNormParams) int {
	n := len(x)
	need("gamma", ln.Gamma, 1, 0, n)
	flags := 0
	if ln.Beta != nil {
		need("beta", ln.Beta, 1, 0, n)
		flags |= lnBeta
	}
	if y != nil {
		need("LayerNorm output", y, 1, 0, n)
		flags |= lnF32
	}
	if q != nil {
		need("LayerNorm u8 output", q, 1, 0, n)
		flags |= lnU8
	}
	if flags&(lnF32|lnU8) == 0 {
		return 0
	}
	return flags
}

// lnDualFlags checks every slice lnNormDualAsm or lnNormDualAVX2Asm reads
// or writes for the row x and returns their flags.
func lnDualFlags(y []float32, q []uint8, x []float32, ln *LayerNormParams, gammaQ, betaQ []float32) int {
	n := len(x)
	need("gamma", ln.Gamma, 1, 0, n)
	need("u8 output's gamma", gammaQ, 1, 0, n)
	need("LayerNorm output", y, 1, 0, n)
	need("LayerNorm u8 output", q, 1, 0, n)
	flags := 0
	if (ln.Beta == nil) != (betaQ == nil) {
		panic("nn: LayerNormDual with one beta and not the other")
	}
	if ln.Beta != nil {
		need("beta", ln.Beta, 1, 0, n)
		need("u8 output's beta", betaQ, 1, 0, n)
		flags |= lnBeta
	}
	return flags
}

func lnNormalizeAVX512(y []float32, q []uint8, x []float32, st lnstats.Row32, ln *LayerNormParams, invScale float32, zp int32) {
	flags := lnNormFlags(y, q, x, ln)
	if len(x) == 0 || flags == 0 {
		return
	}
	if !quantZPOK(zp) {
		lnNormalizeGo(y, q, x, st, ln, invScale, zp)
		return
	}
	lnNormAsm(ptr(y), ptr(q), ptr(x), len(x), st.MeanHi, st.MeanLo, st.Inv, ptr(ln.Gamma), ptr(ln.Beta), invScale, zp, flags)
}

func quantizeAVX512(dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, invScale float32, zp int32) {
	if rows <= 0 || cols <= 0 {
		return
	}
	need("quantised output", dst, rows, dstStride, cols)
	need("quantisation input", src, rows, srcStride, cols)
	if !quantZPOK(zp) {
		quantizeGo(dst, dstStride, src, srcStride, rows, cols, invScale, zp)
		return
	}
	quantizeU8Asm(ptr(dst), dstStride, ptr(src), srcStride, rows, cols, invScale, zp)
}

// quantZPOK says whether the AVX-512 quantiser handles the zero point zp.
func quantZPOK(zp int32) bool { return zp >= -quantMaxZP && zp <= quantMaxZP }

func quantizeRowsAVX512(dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, scales []float32, zps []int32) {
	if !checkQuantizeRows(dst, dstStride, src, srcStride, rows, cols, scales, zps) {
		return
	}
	quantizeRowsU8Asm(ptr(dst), dstStride, ptr(src), srcStride, rows, cols, ptr(scales), ptr(zps))
}

// checkQuantizeRows panics unless the operands of kernels.quantizeRows
// fit, and says whether there is anything to quantise.
func checkQuantizeRows(dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, scales []float32, zps []int32) bool {
	if rows <= 0 || cols <= 0 {
		return false
	}
	need("quantised output", dst, rows, dstStride, cols)
	need("quantisation input", src, rows, srcStride, cols)
	need("row scales", scales, 1, 0, rows)
	need("row zero points", zps, 1, 0, rows)
	return true
}

// packQueries16With returns kernels.packQueries16 on asm
// (packQueries16Asm or its AVX2 form) for a Kp that is whole 64-byte steps
// (every qgemm Kp is), the Go form otherwise.
func packQueries16With(asm func(dst *uint32, src *uint8, kp int, rows int, colSum *int32)) func(words []uint32, codes []uint8, kp, rows int, colSum []int32) {
	return func(words []uint32, codes []uint8, kp, rows int, colSum []int32) {
		if kp <= 0 || kp%qgemm.KBlock != 0 || rows <= 0 || rows > qgemm.NBlock {
			packQueries16Go(words, codes, kp, rows, colSum)
			return
		}
		need("packed queries", words, 1, 0, kp/4*qgemm.NBlock)
		need("query codes", codes, rows, kp, kp)
		need("query column sums", colSum, 1, 0, qgemm.NBlock)
		asm(&words[0], &codes[0], kp, rows, &colSum[0])
	}
}

// checkValueGroups panics unless the operands of kernels.packValueGroups
// fit, and returns the number of 16-channel strips it writes (0: nothing
// to pack).
func checkValueGroups(words []uint32, stripWords int, v []float32, vStride, groups int, inv []float32, colSum []int32, hd int) (strips int) {
	if groups <= 0 || hd <= 0 {
		return 0
	}
	strips = (hd + qgemm.NBlock - 1) / qgemm.NBlock
	need("packed values", words, strips, stripWords, groups*qgemm.NBlock)
	need("value rows", v, 4*groups, vStride, hd)
	need("value scales", inv, 1, 0, hd)
	need("value column sums", colSum, 1, 0, hd)
	return strips
}

// packValueGroupsAVX512 is kernels.packValueGroups.
func packValueGroupsAVX512(words []uint32, stripWords int, v []float32, vStride, groups int, inv []float32, colSum []int32, hd int) {
	if checkValueGroups(words, stripWords, v, vStride, groups, inv, colSum, hd) == 0 {
		return
	}
	packValuesAsm(&words[0], 4*stripWords, &v[0], vStride, groups, &inv[0], &colSum[0], hd)
}

func minMaxAVX512(x []float32) (lo, hi float32) {
	if len(x) == 0 {
		return 0, 0
	}
	return minMaxAsm(ptr(x), len(x))
}

func minMaxRowsAVX512(x []float32, stride, rows, cols int, lo, hi []float32) {
	if rows <= 0 {
		return
	}
	if cols <= 0 {
		clear(lo[:rows])
		clear(hi[:rows])
		return
	}
	need("minMax rows", x, rows, stride, cols)
	need("row minima", lo, 1, 0, rows)
	need("row maxima", hi, 1, 0, rows)
	minMaxRowsAsm(ptr(x), stride, rows, cols, ptr(lo), ptr(hi))
}

func absMaxColsAVX512(m, x []float32, stride, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	need("channel maxima", m, 1, 0, cols)
	need("absMax rows", x, rows, stride, cols)
	absMaxColsAsm(ptr(m), ptr(x), stride, rows, cols)
}

func geluAVX512(dst, src []float32) {
	if len(src) == 0 {
		return
	}
	need("GELU output", dst, 1, 0, len(src))
	geluAsm(ptr(dst), ptr(src), len(src))
}

// rotaryAVX512 is kernels.rotary on rotaryAsm.
func rotaryAVX512(dst, x, cos, sin []float32, heads, d int) {
	if heads <= 0 || d <= 0 {
		return
	}
	if d%2 != 0 {
		panic(fmt.Sprintf("nn: rotary head size %d is odd", d))
	}
	need("rotary output", dst, 1, 0, heads*d)
	need("rotary input", x, 1, 0, heads*d)
	need("rotary cos", cos, 1, 0, d)
	need("rotary sin", sin, 1, 0, d)
	rotaryAsm(ptr(dst), ptr(x), ptr(cos), ptr(sin), heads, d/2)
}

func siluAVX512(dst, src []float32) {
	if len(src) == 0 {
		return
	}
	need("SiLU output", dst, 1, 0, len(src))
	siluAsm(ptr(dst), ptr(src), len(src))
}

func geluTanhAVX512(dst, src []float32) {
	if len(src) == 0 {
		return
	}
	need("GELU output", dst, 1, 0, len(src))
	geluTanhAsm(ptr(dst), ptr(src), len(src))
}

// symScalesAVX512 is kernels.symScales on symScalesAsm.
func symScalesAVX512(m, scale, inv []float32) {
	n := len(m)
	if n == 0 {
		return
	}
	need("value scales", scale, 1, 0, n)
	need("value inverse scales", inv, 1, 0, n)
	symScalesAsm(&m[0], &scale[0], &inv[0], n)
}

// Flags of relGatherAsm (asmgen/nn's constants of the same names).
const (
	relGatherDivide = 1 << iota // divide by div
	relGatherAdd                // add the value already in dst
)

// relGatherAVX512 is kernels.relGather on relGatherAsm. The assembly
// reads src at offsets from the indices without checking them: the caller
// promises every index lies in span (DisentangledBias checks its tables
// before any call), and this checks that base and lane keep all of span
// inside src and the offsets within int32.
func relGatherAVX512(dst []float32, dstStride int, src []float32, idx []int32, idxStride, rows, cols, base, lane int, span idxSpan, div float32, add bool) {
	if rows <= 0 || cols <= 0 {
		return
	}
	need("relative gather output", dst, rows, dstStride, cols)
	need("relative gather indices", idx, rows, idxStride, cols)
	first, last := base+int(span.lo)*attnRows, base+int(span.hi)*attnRows+lane*(cols-1)
	if span.lo > span.hi || lane < 0 || first < 0 || last >= len(src) || len(src) > math.MaxInt32 {
		panic(fmt.Sprintf("nn: relative gather of indices %d..%d at base %d, lane %d, %d columns outside %d values", span.lo, span.hi, base, lane, cols, len(src)))
	}
	flags := 0
	if div != 1 {
		flags |= relGatherDivide
	}
	if add {
		flags |= relGatherAdd
	}
	relGatherAsm(ptr(dst), dstStride, ptr(src), ptr(idx), idxStride, rows, cols, base, lane, div, flags)
}

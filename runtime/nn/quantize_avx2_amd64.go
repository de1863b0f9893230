//go:build amd64 && !noasm

package nn

import "github.com/sqc-dev/sqc/runtime/qgemm"

// useAVX2Quantize sets k's quantisers' loops (quantize, minMax) to their AVX2 assembly forms.
func useAVX2Quantize(k *kernels) {
	k.quantize = quantizeAVX2
	k.minMax = minMaxAVX2
	k.quantizeRows = quantizeRowsAVX2
	k.minMaxRows = minMaxRowsAVX2
	k.absMaxCols = absMaxColsAVX2
	k.packValues4 = packValues4AVX2
	k.packValueGroups = packValueGroupsAVX2
	k.packQueries16 = packQueries16With(packQueries16AVX2Asm)
	k.attnProbs = probsWith(probsT16AVX2Asm)
}

// quantizeAVX2 is kernels.quantize: quantizeU8AVX2Asm on the whole groups
// of 8 columns of every row, quantizeGo on the rest (each code depends on
// its own value only).
func quantizeAVX2(dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, invScale float32, zeroPoint int32) {
	if rows <= 0 || cols <= 0 {
		return
	}
	need("quantised output", dst, rows, dstStride, cols)
	need("quantisation input", src, rows, srcStride, cols)
	c8 := cols &^ 7
	if c8 > 0 {
		quantizeU8AVX2Asm(ptr(dst), dstStride, ptr(src), srcStride, rows, c8, invScale, zeroPoint)
	}
	if c8 < cols {
		quantizeGo(dst[c8:], dstStride, src[c8:], srcStride, rows, cols-c8, invScale, zeroPoint)
	}
}

// quantizeRowsAVX2 is kernels.quantizeRows: quantizeRowsU8AVX2Asm on the
// whole groups of 8 columns of every row, quantizeGo row by row on the
// rest.
func quantizeRowsAVX2(dst []uint8, dstStride int, src []float32, srcStride, rows, cols int, scales []float32, zps []int32) {
	if !checkQuantizeRows(dst, dstStride, src, srcStride, rows, cols, scales, zps) {
		return
	}
	c8 := cols &^ 7
	if c8 > 0 {
		quantizeRowsU8AVX2Asm(ptr(dst), dstStride, ptr(src), srcStride, rows, c8, ptr(scales), ptr(zps))
	}
	if c8 < cols {
		quantizeRowsWith(quantizeGo)(dst[c8:], dstStride, src[c8:], srcStride, rows, cols-c8, scales, zps)
	}
}

// minMaxAVX2 is kernels.minMax: minMaxAVX2Asm on the whole groups of 8
// values, then minMaxGo's scan on the rest, continued from the
// assembly's minimum and maximum (exact: neither is ever -0 or NaN).
func minMaxAVX2(x []float32) (lo, hi float32) {
	n8 := len(x) &^ 7
	if n8 > 0 {
		lo, hi = minMaxAVX2Asm(ptr(x), n8)
	}
	for _, v := range x[n8:] {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// minMaxRowsAVX2 is kernels.minMaxRows: minMaxRowsAVX2Asm on the whole
// groups of 8 columns of every row, then minMaxGo's scan on the rest of
// each row, continued from the assembly's minimum and maximum (exact, as
// in minMaxAVX2).
func minMaxRowsAVX2(x []float32, stride, rows, cols int, lo, hi []float32) {
	if rows <= 0 {
		return
	}
	n8 := cols &^ 7
	if n8 == 0 {
		minMaxRowsWith(minMaxGo)(x, stride, rows, cols, lo, hi)
		return
	}
	need("minMax rows", x, rows, stride, cols)
	need("row minima", lo, 1, 0, rows)
	need("row maxima", hi, 1, 0, rows)
	minMaxRowsAVX2Asm(ptr(x), stride, rows, n8, ptr(lo), ptr(hi))
	for i := range rows {
		l, h := lo[i], hi[i]
		for _, v := range x[i*stride+n8 : i*stride+cols] {
			if v < l {
				l = v
			}
			if v > h {
				h = v
			}
		}
		lo[i], hi[i] = l, h
	}
}

// absMaxColsAVX2 is kernels.absMaxCols: absMaxColsAVX2Asm on the whole
// groups of 8 channels, absMaxColsGo on the rest (each channel is its
// own maximum).
func absMaxColsAVX2(m, x []float32, stride, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	n8 := cols &^ 7
	if n8 > 0 {
		need("channel maxima", m, 1, 0, cols)
		need("absMax rows", x, rows, stride, cols)
		absMaxColsAVX2Asm(ptr(m), ptr(x), stride, rows, n8)
	}
	if n8 < cols {
		absMaxColsGo(m[n8:], x[n8:], stride, rows, cols-n8)
	}
}

// packValues4AVX2 is kernels.packValues4: packValues4AVX2Asm on the whole
// groups of 8 channels from c0, packValues4Go on the rest (each word and
// column sum depends on its own channel only).
func packValues4AVX2(words []uint32, stripWords int, rows *[4][]float32, inv []float32, colSum []int32, c0, hd int) {
	if c0%8 != 0 || hd <= c0 {
		packValues4Go(words, stripWords, rows, inv, colSum, c0, hd)
		return
	}
	c8 := c0 + (hd-c0)&^7
	if c8 > c0 {
		last := c8 - 1
		need("packed values", words, 1, 0, (last/16)*stripWords+last%16+1)
		for t := range rows {
			need("value row", rows[t], 1, 0, c8)
		}
		need("value scales", inv, 1, 0, c8)
		need("value column sums", colSum, 1, 0, c8)
		if c0%16 != 0 {
			panic("nn: packValues4AVX2 from the middle of a strip")
		}
		at := (c0 / 16) * stripWords
		packValues4AVX2Asm(&words[at], 4*stripWords, &rows[0][c0], &rows[1][c0], &rows[2][c0], &rows[3][c0], &inv[c0], &colSum[c0], (c8-c0)/8)
	}
	if c8 < hd {
		packValues4Go(words, stripWords, rows, inv, colSum, c8, hd)
	}
}

// packValueGroupsAVX2 is kernels.packValueGroups: packValues4AVX2Asm
// group by group on the whole groups of 8 channels, with the bounds
// checked once for the head rather than per group, and packValues4Go on
// the rest; each group's words are cleared first, as packValueGroupsGo
// does, for the channels past hd.
func packValueGroupsAVX2(words []uint32, stripWords int, v []float32, vStride, groups int, inv []float32, colSum []int32, hd int) {
	strips := checkValueGroups(words, stripWords, v, vStride, groups, inv, colSum, hd)
	if strips == 0 {
		return
	}
	c8 := hd &^ 7
	var rows [4][]float32
	for g := range groups {
		for s := range strips {
			clear(words[s*stripWords+g*qgemm.NBlock:][:qgemm.NBlock])
		}
		r := v[4*g*vStride:]
		if c8 > 0 {
			packValues4AVX2Asm(&words[g*qgemm.NBlock], 4*stripWords, &r[0], &r[vStride], &r[2*vStride], &r[3*vStride], &inv[0], &colSum[0], c8/8)
		}
		if c8 < hd {
			for t := range rows {
				rows[t] = r[t*vStride:][:hd]
			}
			packValues4Go(words[g*qgemm.NBlock:], stripWords, &rows, inv, colSum, c8, hd)
		}
	}
}

// probsWith returns kernels.attnProbs on asm (probsT16AVX2Asm or
// probsT16Asm) for the whole groups of 8 keys, probsGoFrom on the rest.
func probsWith(asm func(p *uint8, kpv int, sT *float32, blocks int)) func(p []uint8, kpv int, sT []float32, sk int) {
	return func(p []uint8, kpv int, sT []float32, sk int) {
		if sk <= 0 {
			return
		}
		need("probabilities", p, attnRows, kpv, sk)
		need("softmax numerators", sT, 1, 0, sk*attnRows)
		j8 := sk &^ 7
		if j8 > 0 {
			asm(&p[0], kpv, &sT[0], j8/8)
		}
		if j8 < sk {
			probsGoFrom(p, kpv, sT, j8, sk)
		}
	}
}

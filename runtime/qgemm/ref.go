package qgemm

import "unsafe"

// This file holds the two pure-Go Kernels: refKernel, the obviously
// correct reference every other kernel is tested against, and goKernel,
// the portable variant used on arm64, under -tags noasm and on x86 CPUs
// without AVX2.

// kernelSlices views the kernel operands as slices covering exactly what
// the ABI lets a kernel touch.
func kernelSlices(a *uint8, lda int, b *int8, kp int, c *int32, ldc int, m int, nblocks int) ([]uint8, []uint8, []int32) {
	as := unsafe.Slice(a, (m-1)*lda+kp)
	bs := unsafe.Slice((*uint8)(unsafe.Pointer(b)), nblocks*kp*NBlock)
	cs := unsafe.Slice(c, (m-1)*ldc+nblocks*NBlock)
	return as, bs, cs
}

// refKernel is the reference Kernel: one dot product per output element,
// read straight from the layout formula of the package comment.
func refKernel(a *uint8, lda int, b *int8, kp int, c *int32, ldc int, m int, nblocks int) {
	if m <= 0 || nblocks <= 0 {
		return
	}
	as, bs, cs := kernelSlices(a, lda, b, kp, c, ldc, m, nblocks)
	for i := 0; i < m; i++ {
		for nb := 0; nb < nblocks; nb++ {
			for col := 0; col < NBlock; col++ {
				var sum int32
				for k := 0; k < kp; k++ {
					w := int8(bs[((nb*(kp/4)+k/4)*NBlock+col)*4+k%4])
					sum += int32(as[i*lda+k]) * int32(w)
				}
				cs[i*ldc+nb*NBlock+col] = sum
			}
		}
	}
}

// goKChunk is the K extent of goKernel's widened B chunk: 256 K values x 8
// uint64 = 16 KiB, which stays in L1d (48 KiB) next to the A row segments
// it is multiplied with.
const goKChunk = 256

// goWideMinRows is the smallest m for which widening a B chunk pays: the
// widening costs about three row-passes of the SWAR loop.
const goWideMinRows = 4

// goKernel is the portable Kernel. For each N-block and K chunk it widens
// B once into uint64 words holding two columns as 32-bit lanes, biased to
// unsigned (w+128), so one 64-bit multiply-add serves two columns:
//
//	sum_k a*w = sum_k a*(w+128) - 128*sum_k a
//
// A lane sums at most goKChunk products of at most 255*255, so it stays
// below 2^24 and never carries into its neighbour.
func goKernel(a *uint8, lda int, b *int8, kp int, c *int32, ldc int, m int, nblocks int) {
	if m <= 0 || nblocks <= 0 {
		return
	}
	as, bs, cs := kernelSlices(a, lda, b, kp, c, ldc, m, nblocks)
	if m < goWideMinRows {
		goKernelNarrow(as, lda, bs, kp, cs, ldc, m, nblocks)
		return
	}
	var wide [goKChunk * 8]uint64
	for nb := 0; nb < nblocks; nb++ {
		strip := bs[nb*kp*NBlock : (nb+1)*kp*NBlock]
		for k0 := 0; k0 < kp; k0 += goKChunk {
			kc := min(goKChunk, kp-k0)
			w := wide[:kc*8]
			widenChunk(w, strip[k0*NBlock:(k0+kc)*NBlock], kc)
			for i := 0; i < m; i++ {
				row := as[i*lda+k0 : i*lda+k0+kc]
				out := cs[i*ldc+nb*NBlock : i*ldc+nb*NBlock+NBlock]
				dotRowWide(out, row, w, k0 == 0)
			}
		}
	}
}

// widenChunk fills w[k*8+p] with columns 2p and 2p+1 of K row k, each
// biased by +128, in the low and high 32 bits. strip holds kc/4 rows of 16
// columns x 4 K values (the packed layout).
func widenChunk(w []uint64, strip []uint8, kc int) {
	for kg := 0; kg < kc/4; kg++ {
		src := strip[kg*64 : kg*64+64]
		for j := 0; j < 4; j++ {
			dst := w[(kg*4+j)*8 : (kg*4+j)*8+8]
			for p := range dst {
				lo := uint64(src[(2*p)*4+j] ^ 0x80)
				hi := uint64(src[(2*p+1)*4+j] ^ 0x80)
				dst[p] = lo | hi<<32
			}
		}
	}
}

// dotRowWide computes the 16 dot products of the A row segment with the
// widened chunk w and stores them into out (or adds them, if !first).
func dotRowWide(out []int32, row []uint8, w []uint64, first bool) {
	var s0, s1, s2, s3, s4, s5, s6, s7 uint64
	var rowSum uint32
	for k, av := range row {
		x := uint64(av)
		ww := w[k*8 : k*8+8 : k*8+8]
		s0 += x * ww[0]
		s1 += x * ww[1]
		s2 += x * ww[2]
		s3 += x * ww[3]
		s4 += x * ww[4]
		s5 += x * ww[5]
		s6 += x * ww[6]
		s7 += x * ww[7]
		rowSum += uint32(av)
	}
	bias := int32(rowSum) * 128
	out = out[:16]
	if first {
		out[0], out[1] = int32(uint32(s0))-bias, int32(uint32(s0>>32))-bias
		out[2], out[3] = int32(uint32(s1))-bias, int32(uint32(s1>>32))-bias
		out[4], out[5] = int32(uint32(s2))-bias, int32(uint32(s2>>32))-bias
		out[6], out[7] = int32(uint32(s3))-bias, int32(uint32(s3>>32))-bias
		out[8], out[9] = int32(uint32(s4))-bias, int32(uint32(s4>>32))-bias
		out[10], out[11] = int32(uint32(s5))-bias, int32(uint32(s5>>32))-bias
		out[12], out[13] = int32(uint32(s6))-bias, int32(uint32(s6>>32))-bias
		out[14], out[15] = int32(uint32(s7))-bias, int32(uint32(s7>>32))-bias
		return
	}
	out[0] += int32(uint32(s0)) - bias
	out[1] += int32(uint32(s0>>32)) - bias
	out[2] += int32(uint32(s1)) - bias
	out[3] += int32(uint32(s1>>32)) - bias
	out[4] += int32(uint32(s2)) - bias
	out[5] += int32(uint32(s2>>32)) - bias
	out[6] += int32(uint32(s3)) - bias
	out[7] += int32(uint32(s3>>32)) - bias
	out[8] += int32(uint32(s4)) - bias
	out[9] += int32(uint32(s4>>32)) - bias
	out[10] += int32(uint32(s5)) - bias
	out[11] += int32(uint32(s5>>32)) - bias
	out[12] += int32(uint32(s6)) - bias
	out[13] += int32(uint32(s6>>32)) - bias
	out[14] += int32(uint32(s7)) - bias
	out[15] += int32(uint32(s7>>32)) - bias
}

// goKernelNarrow serves m < goWideMinRows (e.g. one token): a direct dot
// product over the packed strip, 16 int32 accumulators per row.
func goKernelNarrow(as []uint8, lda int, bs []uint8, kp int, cs []int32, ldc int, m int, nblocks int) {
	for i := 0; i < m; i++ {
		row := as[i*lda : i*lda+kp]
		for nb := 0; nb < nblocks; nb++ {
			strip := bs[nb*kp*NBlock : (nb+1)*kp*NBlock]
			var acc [NBlock]int32
			for kg := 0; kg < kp/4; kg++ {
				a4 := row[kg*4 : kg*4+4 : kg*4+4]
				a0, a1, a2, a3 := int32(a4[0]), int32(a4[1]), int32(a4[2]), int32(a4[3])
				g := strip[kg*64 : kg*64+64 : kg*64+64]
				for col := range acc {
					w := g[col*4 : col*4+4 : col*4+4]
					acc[col] += a0*int32(int8(w[0])) + a1*int32(int8(w[1])) + a2*int32(int8(w[2])) + a3*int32(int8(w[3]))
				}
			}
			copy(cs[i*ldc+nb*NBlock:i*ldc+nb*NBlock+NBlock], acc[:])
		}
	}
}

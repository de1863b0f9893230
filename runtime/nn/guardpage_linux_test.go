//go:build linux

package nn

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sqc-dev/sqc/internal/lnstats"
)

// pageEnd returns n float32 that end exactly where an inaccessible page
// begins, so that a kernel reading one element past them faults; release
// unmaps them.
func pageEnd(t *testing.T, n int) (s []float32, release func()) {
	t.Helper()
	page := unix.Getpagesize()
	size := (4*n + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, size+page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	if err := unix.Mprotect(mem[size:], unix.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	f := unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), size/4)
	return f[size/4-n:], func() { unix.Munmap(mem) }
}

// TestKernelsAtPageEnd runs the LayerNorm, quantiser and dense-layer kernels on inputs
// that end at an inaccessible page, at widths with partial blocks of 8:
// the AVX2 statistics load the last row's partial block under a
// VMASKMOVPS mask, which must not touch the masked-out lanes (a fault
// here would crash the test), and no kernel may read past its slices.
func TestKernelsAtPageEnd(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, impl := range implementations(t) {
		for _, n := range []int{1, 3, 7, 9, 13, 17, 31, 771} {
			stride := n + 1
			x, release := pageEnd(t, (lnGroup-1)*stride+n)
			fillRandom(r, x, -3, 3, 0)
			var mean, inv, wantMean, wantInv [lnGroup]float64
			impl.lnStats16(x, stride, n, 1e-5, &mean, &inv)
			lnStats16Go(x, stride, n, 1e-5, &wantMean, &wantInv)
			if mean != wantMean || inv != wantInv {
				t.Fatalf("%s stats at a page end, n=%d: %v %v, Go kernel %v %v", impl.name, n, mean, inv, wantMean, wantInv)
			}
			row := x[len(x)-n:]
			ln := &LayerNormParams{N: n, Gamma: row, Beta: row}
			y, q := make([]float32, n), make([]uint8, n)
			impl.lnNormalize(y, q, row, lnstats.Row32{MeanHi: 0.5, Inv: 2}, ln, 30, 128)
			impl.lnNormalizeDual(y, q, row, lnstats.Row32{MeanHi: 0.5, Inv: 2}, ln, row, row, 30, 128)
			impl.quantize(q, n, row, n, 1, n, 30, 128)
			impl.minMax(row)
			lo, hi := make([]float32, lnGroup), make([]float32, lnGroup)
			impl.minMaxRows(x, stride, lnGroup, n, lo, hi)
			impl.absMaxCols(y, x, stride, lnGroup, n)
			scales, zps := make([]float32, lnGroup), make([]int32, lnGroup)
			for i := range scales {
				scales[i], zps[i] = 0.03, 128
			}
			impl.quantizeRows(make([]uint8, lnGroup*stride), stride, x, stride, lnGroup, n, scales, zps)
			// x as the weights of a depth-16 dense layer, its last row at the page end.
			xs := randSlice(19, linearTileRows*lnGroup, -1, 1)
			for _, rows := range []int{linearTileRows, 1} {
				impl.linearTile(make([]float32, rows*n), n, xs, lnGroup, rows, lnGroup, stride, x, 0, n)
			}
			release()
		}
	}
}

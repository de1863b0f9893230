//go:build amd64 && !noasm

package qgemm

import (
	"math/rand/v2"
	"runtime/debug"
	"testing"
	"unsafe"

	"github.com/sqc-dev/sqc/runtime/cpu"
)

// asmKernel is one assembly Kernel under test; why says why it cannot run
// on this CPU (empty if it can).
type asmKernel struct {
	name string
	k    Kernel
	why  string
}

func asmKernels() []asmKernel {
	f := cpu.Detect()
	need := func(ok bool, what string) string {
		if ok {
			return ""
		}
		return "CPU/OS lacks " + what + " (features: " + f.String() + ")"
	}
	return []asmKernel{
		{"amx", qgemmAMX, need(f.AMXInt8, "AMX-INT8 with tile permission")},
		{"amx-emulated", qgemmAMXEmulated, need(f.AVX512VNNI, "AVX512-VNNI (the AMX emulation runs on it)")},
		{"amx-emulated-avx2", qgemmAMXEmulatedAVX2, need(f.AVX2, "AVX2 (the AMX emulation runs on it)")},
		{"vnni", qgemmVNNI, need(f.AVX512VNNI, "AVX512-VNNI")},
		{"avx2", qgemmAVX2, need(f.AVX2, "AVX2")},
	}
}

// asmtestPackB packs the K x N row-major w into the layout of api.go. It
// is this file's own packer, independent of pack.go.
func asmtestPackB(w []int8, k, n int) (data []int8, kp, nblocks int) {
	kp, np := RoundUp(k, KBlock), RoundUp(n, NBlock)
	nblocks = np / NBlock
	data = make([]int8, np*kp)
	for nb := 0; nb < nblocks; nb++ {
		for kg := 0; kg < kp/4; kg++ {
			for c := 0; c < 16; c++ {
				for j := 0; j < 4; j++ {
					kk, nn := 4*kg+j, 16*nb+c
					if kk < k && nn < n {
						data[((nb*(kp/4)+kg)*16+c)*4+j] = w[kk*n+nn]
					}
				}
			}
		}
	}
	return data, kp, nblocks
}

// asmtestRef computes the m x (nblocks*16) reference product from the
// unpacked weights (columns >= n are zero).
func asmtestRef(a []uint8, lda int, w []int8, k, n, m, nblocks int) []int32 {
	ldc := nblocks * 16
	c := make([]int32, m*ldc)
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		for kk := 0; kk < k; kk++ {
			av := int32(a[i*lda+kk])
			wrow := w[kk*n : kk*n+n]
			for j, wv := range wrow {
				row[j] += av * int32(wv)
			}
		}
	}
	return c
}

// unsafeInt8s views p as []int8.
func unsafeInt8s(p []byte) []int8 {
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(p))), len(p))
}

// kernelShape is one kernel test case (the driver tests' gemmShape).
type kernelShape = gemmShape

// kernelShapes are the shapes of the brief plus M tails with m%32 > 16
// (31, 50), K = 1000 (AMX K passes of 768 + 256 bytes) and N-block
// counts that leave AMX pair and VNNI group tails
// (N=40: 3 blocks, N=80: 5 blocks). The largest products are subsampled
// so the test stays within seconds.
func kernelShapes() []kernelShape {
	big := map[kernelShape]bool{
		{384, 768, 768}: true, {128, 3072, 768}: true, {128, 768, 3072}: true,
		{33, 3072, 3072}: true, {384, 80, 3072}: true,
	}
	var out []kernelShape
	for _, m := range []int{1, 7, 31, 33, 50, 128, 384} {
		for _, n := range []int{1, 17, 40, 80, 768, 3072} {
			for _, k := range []int{4, 20, 768, 1000, 3072} {
				s := kernelShape{m, n, k}
				if m*RoundUp(n, 16)*RoundUp(k, 64) <= 1<<24 || big[s] {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

const guardWord = int32(0x5A5A5A5A) // sentinel around every output block

// runKernelChecked runs kern on A, B in guarded memory and checks the
// result against want and the sentinels around it. A fault (an A or B read
// out of bounds) is turned into a test failure.
func runKernelChecked(t *testing.T, kern Kernel, s kernelShape, a []uint8, lda int, b []int8, kp, nblocks int, want []int32) {
	t.Helper()
	const guardRows, padCols = 2, 3
	ldc := nblocks*16 + padCols
	cbuf := make([]int32, (s.m+2*guardRows)*ldc)
	for i := range cbuf {
		cbuf[i] = guardWord
	}
	c := cbuf[guardRows*ldc:]
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%v: kernel faulted (read outside A or B?): %v", s, r)
			}
		}()
		kern(&a[0], lda, &b[0], kp, &c[0], ldc, s.m, nblocks)
	}()
	wldc := nblocks * 16
	bad := 0
	for i := -guardRows; i < s.m+guardRows; i++ {
		for j := 0; j < ldc; j++ {
			got := cbuf[(i+guardRows)*ldc+j]
			exp := guardWord
			if i >= 0 && i < s.m && j < wldc {
				exp = want[i*wldc+j]
			}
			if got != exp {
				if bad < 5 {
					t.Errorf("%v: C[%d][%d] = %d, want %d", s, i, j, got, exp)
				}
				bad++
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%v: %d wrong elements", s, bad)
	}
}

func TestKernelsMatchReference(t *testing.T) {
	kernels := asmKernels()
	rng := rand.New(rand.NewPCG(1, 2))
	for si, s := range kernelShapes() {
		kp := RoundUp(s.k, KBlock)
		lda := kp
		if si%3 == 1 {
			lda = kp + 13 // an odd row stride
		}
		// A holds exactly m rows and sits against a guard page: at the
		// end for even cases (over-reads fault), at the start for odd.
		a := guardedBytes(t, s.m*lda, si%2 == 0)
		for i := range a {
			a[i] = uint8(rng.Uint32()) // includes the junk in columns k..kp-1
		}
		w := make([]int8, s.k*s.n)
		for i := range w {
			w[i] = int8(rng.Uint32())
		}
		// Extreme values in the first rows/columns: all of A's 255 against
		// W's -128 and 127.
		for kk := 0; kk < s.k; kk++ {
			a[kk] = 255
			w[kk*s.n] = -128
			if s.n > 1 {
				w[kk*s.n+1] = 127
			}
		}
		packed, kp2, nblocks := asmtestPackB(w, s.k, s.n)
		if kp2 != kp {
			t.Fatalf("kp %d != %d", kp2, kp)
		}
		b := unsafeInt8s(guardedBytes(t, len(packed), si%2 == 0))
		copy(b, packed)
		want := asmtestRef(a, lda, w, s.k, s.n, s.m, nblocks)
		for _, kr := range kernels {
			if kr.why != "" {
				continue
			}
			t.Run(kr.name+"/"+s.String(), func(t *testing.T) {
				runKernelChecked(t, kr.k, s, a, lda, b, kp, nblocks, want)
			})
		}
	}
	for _, kr := range kernels {
		if kr.why != "" {
			t.Run(kr.name, func(t *testing.T) { t.Skip(kr.why) })
		}
	}
}

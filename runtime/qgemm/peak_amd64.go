//go:build amd64 && !noasm

package qgemm

import "github.com/sqc-dev/sqc/runtime/cpu"

// Operations (2 per multiply-add) per iteration of the peak loops that
// asmgen/qgemm/peak.go generates.
const (
	peakLoopOpsAMX  = 8 * 16 * 16 * 64 * 2 // 8 TDPBUSD: 16x16 int32, each from a 64-byte u8 row x s8 column
	peakLoopOpsVNNI = 24 * 16 * 4 * 2      // 24 VPDPBUSD zmm: 16 int32 lanes x 4 byte pairs
	peakLoopOpsFP32 = 24 * 16 * 2          // 24 VFMADD231PS zmm: 16 float32 lanes
	// 12 VPMADDWD ymm: 16 int16 products each (8 int32 lanes x 2), the
	// AVX2 kernel's multiply-adds of widened u8 x s8 pairs.
	peakLoopOpsAVX2     = 12 * 16 * 2
	peakLoopOpsFP32AVX2 = 12 * 8 * 2 // 12 VFMADD231PS ymm: 8 float32 lanes
)

func archPeakLoops() []PeakLoop {
	f := cpu.Detect()
	var ls []PeakLoop
	if f.AMXInt8 {
		ls = append(ls, PeakLoop{Name: "amx", OpsPerIter: peakLoopOpsAMX, Run: peakAMX})
	}
	if f.AVX512VNNI {
		ls = append(ls, PeakLoop{Name: "vnni", OpsPerIter: peakLoopOpsVNNI, Run: peakVNNI})
	}
	if f.AVX2 {
		ls = append(ls, PeakLoop{Name: "avx2", OpsPerIter: peakLoopOpsAVX2, Run: peakAVX2})
	}
	switch {
	case f.AVX512:
		ls = append(ls, PeakLoop{Name: "fp32", OpsPerIter: peakLoopOpsFP32, Run: peakFP32})
	case f.AVX2 && f.FMA:
		// The FP32 ceiling of a CPU without AVX-512.
		ls = append(ls, PeakLoop{Name: "fp32-ymm", OpsPerIter: peakLoopOpsFP32AVX2, Run: peakFP32AVX2})
	}
	return ls
}

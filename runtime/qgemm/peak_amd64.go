//go:build amd64 && !noasm

package qgemm

import "github.com/sqc-dev/sqc/runtime/cpu"

// Operations (2 per multiply-add) per iteration of the peak loops that
// asmgen/qgemm/peak.go generates.
const (
	peakLoopOpsAMX  = 8 * 16 * 16 * 64 * 2 // 8 TDPBUSD: 16x16 int32, each from a 64-byte u8 row x s8 column
	peakLoopOpsVNNI = 24 * 16 * 4 * 2      // 24 VPDPBUSD zmm: 16 int32 lanes x 4 byte pairs
	peakLoopOpsFP32 = 24 * 16 * 2          // 24 VFMADD231PS zmm: 16 float32 lanes
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
	if f.AVX512 {
		ls = append(ls, PeakLoop{Name: "fp32", OpsPerIter: peakLoopOpsFP32, Run: peakFP32})
	}
	return ls
}

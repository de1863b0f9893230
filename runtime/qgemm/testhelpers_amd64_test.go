//go:build amd64 && !noasm

package qgemm

import "github.com/sqc-dev/sqc/runtime/cpu"

func cpuFeatures() cpu.Features { return cpu.Detect() }

// extraTestVariants adds the AMX kernel's emulations in AVX512-VNNI and in
// AVX2 (same loops, tile configs and tails as the real AMX kernel), so that
// the driver's AMX path is exercised on CPUs without AMX. Their epilogue is
// the pure-Go one (Variant.Epilogue nil).
func extraTestVariants() []testVariant {
	vnni := testVariant{name: "amx-emulated", v: Variant{ISA: ISAAMX, Kernel: qgemmAMXEmulated}}
	if !cpuFeatures().AVX512VNNI {
		vnni.why = "AMX emulation in AVX512-VNNI needs AVX512-VNNI"
	}
	avx2 := testVariant{name: "amx-emulated-avx2", v: Variant{ISA: ISAAMX, Kernel: qgemmAMXEmulatedAVX2}}
	if !cpuFeatures().AVX2 {
		avx2.why = "AMX emulation in AVX2 needs AVX2"
	}
	return []testVariant{vnni, avx2}
}

//go:build amd64 && !noasm

package qgemm

import "github.com/sqc-dev/sqc/runtime/cpu"

func cpuFeatures() cpu.Features { return cpu.Detect() }

// extraTestVariants adds the AMX kernel's VNNI emulation (same loops, tile
// configs and tails as the real AMX kernel), so that the driver's AMX path
// is exercised on CPUs without AMX.
func extraTestVariants() []testVariant {
	tv := testVariant{name: "amx-emulated", v: Variant{ISA: ISAAMX, Kernel: qgemmAMXEmulated}}
	if !cpuFeatures().AVX512VNNI {
		tv.why = "AMX emulation needs AVX512-VNNI"
	}
	return []testVariant{tv}
}

// Package cpu tells which instruction sets this process may use: CPUID
// flags from golang.org/x/sys/cpu, the OS's XCR0 state, and, for AMX, the
// Linux permission request arch_prctl(ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA) that must succeed before any tile instruction.
//
// Detect does the work once per process (the AMX permission is a
// per-process request, and the answer never changes afterwards) and
// returns a copy of the cached result.
package cpu

import (
	"fmt"
	"sync"

	"golang.org/x/sys/cpu"
)

// Features are the instruction sets kernels may use in this process.
type Features struct {
	AVX2       bool // AVX2 with OS YMM support
	FMA        bool // FMA3 (VFMADD*PS on xmm/ymm) with OS YMM support
	AVX512     bool // AVX-512 F, BW, VL with OS ZMM/opmask support
	AVX512VNNI bool // VPDPBUSD on zmm (implies AVX512)
	AMXInt8    bool // AMX-TILE + AMX-INT8, XTILEDATA enabled in XCR0 and permission granted

	// AMXNote says why AMXInt8 is false on a CPU whose CPUID reports
	// AMX-TILE and AMX-INT8 (for example the permission request failed);
	// it is empty otherwise.
	AMXNote string
}

// String lists the usable instruction sets, e.g. "avx2 fma avx512 vnni amx".
func (f Features) String() string {
	s := ""
	add := func(ok bool, name string) {
		if ok {
			if s != "" {
				s += " "
			}
			s += name
		}
	}
	add(f.AVX2, "avx2")
	add(f.FMA, "fma")
	add(f.AVX512, "avx512")
	add(f.AVX512VNNI, "vnni")
	add(f.AMXInt8, "amx")
	if s == "" {
		s = "none"
	}
	if f.AMXNote != "" {
		s += " (" + f.AMXNote + ")"
	}
	return s
}

// XCR0 state-component bits (Intel SDM vol. 1, 13.1) that must be enabled
// by the OS before the matching registers may be used.
const (
	xcr0SSE       = 1 << 1  // XMM registers
	xcr0AVX       = 1 << 2  // upper halves of YMM
	xcr0Opmask    = 1 << 5  // k0-k7
	xcr0ZMMHi256  = 1 << 6  // upper halves of ZMM0-15
	xcr0Hi16ZMM   = 1 << 7  // ZMM16-31
	xcr0TileCfg   = 1 << 17 // XTILECFG
	xcr0TileData  = 1 << 18 // XTILEDATA
	xcr0YMM       = xcr0SSE | xcr0AVX
	xcr0ZMM       = xcr0YMM | xcr0Opmask | xcr0ZMMHi256 | xcr0Hi16ZMM
	xcr0AMXStates = xcr0TileCfg | xcr0TileData
)

var (
	detectOnce sync.Once
	detected   Features // written once inside detectOnce, read-only after
)

// Detect returns the instruction sets this process may use. The first call
// probes CPUID and XCR0 and, where the CPU has AMX, asks Linux for the
// tile-data permission; later calls return the cached answer.
func Detect() Features {
	detectOnce.Do(func() { detected = detect() })
	return detected
}

func detect() Features {
	var f Features
	x := cpu.X86
	// XGETBV faults unless the OS has set CR4.OSXSAVE.
	if !x.HasOSXSAVE {
		return f
	}
	xcr0 := readXCR0()
	has := func(bits uint64) bool { return xcr0&bits == bits }

	f.AVX2 = x.HasAVX2 && has(xcr0YMM)
	f.FMA = x.HasFMA && has(xcr0YMM)
	f.AVX512 = x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && has(xcr0ZMM)
	f.AVX512VNNI = f.AVX512 && x.HasAVX512VNNI

	if x.HasAMXTile && x.HasAMXInt8 {
		switch {
		case !xgetbvAvailable:
			f.AMXNote = "XGETBV unavailable in this build"
		case !has(xcr0AMXStates):
			f.AMXNote = fmt.Sprintf("OS has not enabled tile state in XCR0 (%#x)", xcr0)
		default:
			if err := requestAMXPermission(); err != nil {
				f.AMXNote = "AMX permission denied: " + err.Error()
			} else if xcr0 = readXCR0(); !has(xcr0AMXStates) {
				f.AMXNote = fmt.Sprintf("tile state missing from XCR0 (%#x) after the permission request", xcr0)
			} else {
				f.AMXInt8 = true
			}
		}
	}
	return f
}

package cpu

import (
	"testing"

	"golang.org/x/sys/cpu"
)

func TestDetectMatchesXSysCPU(t *testing.T) {
	f := Detect()
	t.Logf("features: %s", f)
	x := cpu.X86
	if !xgetbvAvailable {
		// Without XGETBV nothing may be claimed.
		if f.AVX2 || f.AVX512 || f.AVX512VNNI || f.AMXInt8 {
			t.Fatalf("build without XGETBV reports %s", f)
		}
		return
	}
	// x/sys/cpu folds the OS's YMM/ZMM state into HasAVX2 and HasAVX512F,
	// so our own XCR0 reading must agree with it.
	if f.AVX2 != x.HasAVX2 {
		t.Errorf("AVX2 = %v, x/sys/cpu HasAVX2 = %v", f.AVX2, x.HasAVX2)
	}
	want512 := x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL
	if f.AVX512 != want512 {
		t.Errorf("AVX512 = %v, x/sys/cpu F&&BW&&VL = %v", f.AVX512, want512)
	}
	if f.AVX512VNNI != (want512 && x.HasAVX512VNNI) {
		t.Errorf("AVX512VNNI = %v, x/sys/cpu = %v", f.AVX512VNNI, want512 && x.HasAVX512VNNI)
	}
	cpuidAMX := x.HasAMXTile && x.HasAMXInt8
	if f.AMXInt8 && !cpuidAMX {
		t.Errorf("AMXInt8 reported but CPUID lacks AMX-TILE/AMX-INT8")
	}
	if !cpuidAMX && f.AMXNote != "" {
		t.Errorf("AMXNote %q set on a CPU without AMX", f.AMXNote)
	}
	if cpuidAMX && !f.AMXInt8 && f.AMXNote == "" {
		t.Errorf("CPU has AMX, AMXInt8 is false and no AMXNote says why")
	}
	if f.AMXInt8 && readXCR0()&xcr0AMXStates != xcr0AMXStates {
		t.Errorf("AMXInt8 reported but XCR0 = %#x lacks tile state", readXCR0())
	}
}

func TestDetectIsCached(t *testing.T) {
	a, b := Detect(), Detect()
	if a != b {
		t.Fatalf("Detect changed between calls: %v then %v", a, b)
	}
}

func TestXCR0HasSSEWhenAVX(t *testing.T) {
	f := Detect()
	if f.AVX2 && readXCR0()&xcr0YMM != xcr0YMM {
		t.Fatalf("AVX2 reported with XCR0 %#x", readXCR0())
	}
}

//go:build linux && amd64

package cpu

import (
	"testing"

	"golang.org/x/sys/cpu"
)

func TestAMXPermission(t *testing.T) {
	if !(cpu.X86.HasAMXTile && cpu.X86.HasAMXInt8) {
		t.Skip("CPU has no AMX-TILE/AMX-INT8; nothing to grant")
	}
	f := Detect()
	granted, err := amxPermissionGranted()
	if err != nil {
		t.Fatalf("ARCH_GET_XCOMP_PERM: %v", err)
	}
	t.Logf("AMX: AMXInt8=%v, XTILEDATA permitted=%v, XCR0=%#x, note=%q", f.AMXInt8, granted, readXCR0(), f.AMXNote)
	if !xgetbvAvailable {
		t.Skip("built without XGETBV (noasm): AMX is not used")
	}
	if f.AMXInt8 != granted {
		t.Errorf("AMXInt8 = %v but the kernel reports permission %v", f.AMXInt8, granted)
	}
}

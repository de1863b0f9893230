//go:build linux && amd64

package cpu

import (
	"syscall"
	"unsafe"
)

// Linux arch_prctl codes for dynamically enabled XSAVE features
// (arch/x86/include/uapi/asm/prctl.h) and the tile-data component number.
const (
	sysArchPrctl       = 158 // SYS_arch_prctl on amd64
	archGetXCompPerm   = 0x1022
	archReqXCompPerm   = 0x1023
	xfeatureXTileData  = 18
	xfeatureXTileDataM = 1 << xfeatureXTileData
)

// requestAMXPermission asks the kernel to let this process use AMX tile
// data. The permission is per process and covers threads that already
// exist, so one call (from Detect's sync.Once) is enough.
func requestAMXPermission() error {
	if _, _, errno := syscall.RawSyscall(sysArchPrctl, archReqXCompPerm, xfeatureXTileData, 0); errno != 0 {
		return errno
	}
	granted, err := amxPermissionGranted()
	if err != nil {
		return err
	}
	if !granted {
		return syscall.EPERM
	}
	return nil
}

// amxPermissionGranted reads back the process's permitted XSAVE feature
// mask with ARCH_GET_XCOMP_PERM.
func amxPermissionGranted() (bool, error) {
	var mask uint64
	if _, _, errno := syscall.RawSyscall(sysArchPrctl, archGetXCompPerm, uintptr(unsafe.Pointer(&mask)), 0); errno != 0 {
		return false, errno
	}
	return mask&xfeatureXTileDataM != 0, nil
}

//go:build !linux || !amd64

package cpu

import "errors"

// requestAMXPermission fails: only Linux on amd64 has the arch_prctl
// permission protocol this package implements.
func requestAMXPermission() error {
	return errors.New("AMX permission request is implemented for linux/amd64 only")
}

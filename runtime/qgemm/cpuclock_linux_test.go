//go:build linux

package qgemm

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU returns the CPU time used so far by all threads of the
// process.
func processCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

//go:build linux

package qgemm

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time used so far by the calling thread (the
// benchmark locks its goroutine to the thread).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

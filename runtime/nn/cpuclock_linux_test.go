//go:build linux

package nn

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU returns the CPU time used so far by all threads of the
// process: benchmarks report it per op too, since wall time on a shared
// machine includes other processes' turns.
func processCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

package bench

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// PeakRSS returns the process's peak resident set size in bytes
// (getrusage ru_maxrss, which Linux reports in KiB), and whether it is
// known.
func PeakRSS() (int64, bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Maxrss * 1024, true
}

// LoadAverage is the 1-minute load average (runnable threads, from
// /proc/loadavg), or -1 if unknown: above the CPU count, other work
// competed for the cores while things were measured.
func LoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// ProcessCPU is the CPU time (user + system) of every thread of the
// process so far, or -1 if unknown.
func ProcessCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package bench

import (
	"bytes"
	"fmt"
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

// ResetPeakRSS makes the kernel's high-water mark of the process's RSS
// (VmHWM) its current RSS, by writing "5" to /proc/self/clear_refs
// (Linux 4.0+), so that RSS reports the peak from now on. getrusage's
// ru_maxrss (PeakRSS) is not reset: it keeps the process's whole peak.
func ResetPeakRSS() error {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("resetting the peak RSS: %w", err)
	}
	return nil
}

// RSS returns the process's resident set size now (VmRSS) and its peak
// (VmHWM) since the start or the last ResetPeakRSS, in bytes, from
// /proc/self/status, and whether they are known.
func RSS() (cur, peak int64, ok bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, false
	}
	field := func(name string) (int64, bool) {
		i := bytes.Index(b, []byte("\n"+name+":"))
		if i < 0 {
			return 0, false
		}
		f := strings.Fields(string(b[i+len(name)+2:]))
		if len(f) < 2 || f[1] != "kB" {
			return 0, false
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		return v * 1024, err == nil
	}
	cur, ok1 := field("VmRSS")
	peak, ok2 := field("VmHWM")
	return cur, peak, ok1 && ok2
}

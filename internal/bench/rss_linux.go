package bench

import "golang.org/x/sys/unix"

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

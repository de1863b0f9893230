//go:build !linux

package bench

import (
	"fmt"
	"runtime"
	"time"
)

// PeakRSS is unknown outside Linux (ru_maxrss units differ between
// systems, and some have no getrusage).
func PeakRSS() (int64, bool) { return 0, false }

// LoadAverage is unknown outside Linux.
func LoadAverage() float64 { return -1 }

// ProcessCPU is unknown outside Linux.
func ProcessCPU() time.Duration { return -1 }

// ResetPeakRSS needs Linux's /proc/self/clear_refs.
func ResetPeakRSS() error {
	return fmt.Errorf("resetting the peak RSS needs Linux's /proc/self/clear_refs; %s has none", runtime.GOOS)
}

// RSS is unknown outside Linux.
func RSS() (cur, peak int64, ok bool) { return 0, 0, false }

//go:build !linux

package bench

import "time"

// PeakRSS is unknown outside Linux (ru_maxrss units differ between
// systems, and some have no getrusage).
func PeakRSS() (int64, bool) { return 0, false }

// LoadAverage is unknown outside Linux.
func LoadAverage() float64 { return -1 }

// ProcessCPU is unknown outside Linux.
func ProcessCPU() time.Duration { return -1 }

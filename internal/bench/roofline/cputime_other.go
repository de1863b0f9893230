//go:build !linux

package roofline

import "time"

// threadCPU is unknown outside Linux: rate falls back to wall time.
func threadCPU() time.Duration { return -1 }

// processCPU is unknown outside Linux: no CPU-time rates.
func processCPU() time.Duration { return -1 }

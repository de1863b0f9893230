//go:build !linux

package roofline

import "time"

// threadCPU is unknown outside Linux: rate falls back to wall time.
func threadCPU() time.Duration { return -1 }

//go:build !linux

package qgemm

import "time"

// threadCPU is not measured here: GOP/cpu-s is then not reported.
func threadCPU() time.Duration { return 0 }

//go:build !linux

package qgemm

import "time"

// processCPU is not measured here: GOP/cpu-s is then not reported.
func processCPU() time.Duration { return 0 }

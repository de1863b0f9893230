//go:build !linux

package nn

import "time"

// processCPU is unavailable here: benchmarks report 0 CPU time.
func processCPU() time.Duration { return 0 }

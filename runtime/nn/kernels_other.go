//go:build !amd64 || noasm

package nn

import "github.com/sqc-dev/sqc/runtime/cpu"

// archKernels returns nil: this build has no assembly kernels (arm64,
// other architectures, or -tags noasm), so the Go kernels serve.
func archKernels(cpu.Features) *kernels { return nil }

// archKernelSets returns none: this build has no assembly kernels.
func archKernelSets(cpu.Features) []*kernels { return nil }

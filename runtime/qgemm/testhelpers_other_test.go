//go:build !amd64 || noasm

package qgemm

import "github.com/sqc-dev/sqc/runtime/cpu"

func cpuFeatures() cpu.Features { return cpu.Detect() }

func extraTestVariants() []testVariant { return nil }

func extraBenchVariants(Variant) []testVariant { return nil }

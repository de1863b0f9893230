//go:build !amd64 || noasm

package qgemm

import "github.com/sqc-dev/sqc/runtime/cpu"

// archVariants returns no assembly variants: this build has none (arm64,
// other architectures, or -tags noasm), so the pure-Go variant serves.
func archVariants(cpu.Features) []Variant { return nil }

// EmulatedAMX returns false: the AMX emulation is assembly, which this
// build has none of (see the amd64 EmulatedAMX).
func EmulatedAMX() (Variant, bool) { return Variant{}, false }

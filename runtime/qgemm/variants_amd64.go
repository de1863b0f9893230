//go:build amd64 && !noasm

package qgemm

import "github.com/sqc-dev/sqc/runtime/cpu"

// archVariants returns the assembly variants this CPU can run, best first.
// The AMX kernel needs the tile-data permission that cpu.Detect requests
// (f.AMXInt8 is only true once it is granted); it applies the AVX-512
// epilogue inside the call where it can (fused_amd64.go). The AVX-512 epilogue
// (AVX-512 F/BW) serves every variant whose CPU has it, else the AVX2 +
// FMA3 one.
func archVariants(f cpu.Features) []Variant {
	var ep EpilogueFunc // nil: the pure-Go epilogue
	switch {
	case f.AVX512:
		ep = epilogueAVX512
	case f.AVX2 && f.FMA:
		ep = epilogueAVX2
	}
	var vs []Variant
	if f.AMXInt8 {
		amx := Variant{ISA: ISAAMX, Kernel: qgemmAMX, Epilogue: ep}
		if f.AVX512 { // the fused kernels call the AVX-512 epilogue
			amx.fusedBlock, amx.fusedPipelined, amx.perBlock = amxPipelinedBlock, true, amxFusedBlock
		}
		vs = append(vs, amx)
	}
	if f.AVX512VNNI {
		// No fused form: on Zen 5 (2026-12-06) the epilogue applied inside
		// the kernel call, per 8x48 micro-kernel block from an L1 buffer or
		// per 48-column N-group after its rows, was 2-15% slower than the
		// separate pass over whole rows for GELU and residual epilogues (and
		// at best 2-5% faster for the QKV projection's f32 one): the
		// per-block calls and short rows cost more than the s32 round trip
		// through L2 saves, while the tiles' far higher rate makes that round
		// trip the larger cost on AMX.
		vs = append(vs, Variant{ISA: ISAVNNI, Kernel: qgemmVNNI, Epilogue: ep})
	}
	if f.AVX2 {
		vs = append(vs, Variant{ISA: ISAAVX2, Kernel: qgemmAVX2, Epilogue: ep})
	}
	return vs
}

// EmulatedAMX returns the AMX variant with every tile instruction
// emulated in AVX512-VNNI: the *Emulated twins of its kernels (the same
// loops, tile configs, tails and epilogue inside the call, pipelined as
// the real variant's), the AVX-512 epilogue and the AMX block costs, where
// this CPU has AVX512-VNNI and AVX-512 (false elsewhere). It is for tests
// on CPUs without AMX: given as Options.Variant, it runs the AMX paths of
// the driver and of everything above it (LinearLayerNorm's row-major
// plans, INT8 attention's serial GEMMs, whole models) for their bits. It
// is far slower than the VNNI kernel, and Variants never lists it.
func EmulatedAMX() (Variant, bool) {
	if f := cpu.Detect(); !f.AVX512VNNI || !f.AVX512 {
		return Variant{}, false
	}
	return Variant{ISA: ISAAMX, Kernel: qgemmAMXEmulated, Epilogue: epilogueAVX512,
		fusedBlock: amxPipelinedEmulatedBlock, fusedPipelined: true, perBlock: amxFusedEmulatedBlock}, true
}

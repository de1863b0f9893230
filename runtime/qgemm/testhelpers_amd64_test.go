//go:build amd64 && !noasm

package qgemm

import "github.com/sqc-dev/sqc/runtime/cpu"

func cpuFeatures() cpu.Features { return cpu.Detect() }

// extraTestVariants adds the AMX kernel's emulations in AVX512-VNNI and in
// AVX2 (same loops, tile configs and tails as the real AMX kernel), so that
// the driver's AMX path is exercised on CPUs without AMX. Their epilogue is
// the pure-Go one (Variant.Epilogue nil), but for the fused kernels'
// emulations (per block and pipelined), which call the AVX-512 epilogue.
func extraTestVariants() []testVariant {
	vnni := testVariant{name: "amx-emulated", v: Variant{ISA: ISAAMX, Kernel: qgemmAMXEmulated}}
	if !cpuFeatures().AVX512VNNI {
		vnni.why = "AMX emulation in AVX512-VNNI needs AVX512-VNNI"
	}
	avx2 := testVariant{name: "amx-emulated-avx2", v: Variant{ISA: ISAAMX, Kernel: qgemmAMXEmulatedAVX2}}
	if !cpuFeatures().AVX2 {
		avx2.why = "AMX emulation in AVX2 needs AVX2"
	}
	pipelined := testVariant{name: "amx-emulated-pipelined"}
	var ok bool
	if pipelined.v, ok = EmulatedAMX(); !ok {
		pipelined.why = "the fused AMX emulation needs AVX512-VNNI and the AVX-512 epilogue"
	}
	fused := testVariant{name: "amx-emulated-fused", v: pipelined.v, why: pipelined.why}
	fused.v.fusedBlock, fused.v.fusedPipelined, fused.v.perBlock = amxFusedEmulatedBlock, false, nil
	return []testVariant{vnni, avx2, fused, pipelined}
}

// amxPipelinedPrefetchEmulatedBlock is amxPipelinedPrefetchBlock with the
// emulated kernel.
func amxPipelinedPrefetchEmulatedBlock(a []uint8, lda int, b *PackedB, c []int32, ldc int, ep *Epilogue, m0, n0, m, nblocks, n int) bool {
	return runAMXFused(qgemmAMXPipelinedPrefetchEmulated, a, lda, b, c, ldc, ep, m0, n0, m, nblocks, n)
}

// amxPipelinedPrefetchPairEmulatedBlock is amxPipelinedPrefetchPairBlock
// with the emulated kernel.
func amxPipelinedPrefetchPairEmulatedBlock(a []uint8, lda int, b *PackedB, c []int32, ldc int, ep *Epilogue, m0, n0, m, nblocks, n int) bool {
	return runAMXFused(qgemmAMXPipelinedPrefetchPairEmulated, a, lda, b, c, ldc, ep, m0, n0, m, nblocks, n)
}

// extraBenchVariants are the kernels BenchmarkQGEMM (and
// BenchmarkQGEMMColdWeights) times beside v's own that no variant uses
// yet: for AMX, the pipelined kernel with the B prefetch into L1 of the
// step after next ("amx-pfb") and the one with the prefetch into L2 of
// the next N pair ("amx-pfn").
func extraBenchVariants(v Variant) []testVariant {
	if v.ISA != ISAAMX || v.fusedBlock == nil || !v.fusedPipelined {
		return nil
	}
	pfb, pfn := v, v
	pfb.fusedBlock = amxPipelinedPrefetchBlock
	pfn.fusedBlock = amxPipelinedPrefetchPairBlock
	return []testVariant{{name: "amx-pfb", v: pfb}, {name: "amx-pfn", v: pfn}}
}

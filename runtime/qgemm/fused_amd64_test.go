//go:build amd64 && !noasm

package qgemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sqc-dev/sqc/runtime/cpu"
)

// TestAMXFusedMatchesReference runs the fused AMX kernels, pipelined (with
// and without either B prefetch) and per block (the real ones where the CPU has AMX, their emulations
// wherever AVX512-VNNI is) straight,
// not through the driver, on the odd shapes of kernelShapes (M tails of
// 1..31 rows, odd N-block counts, real N short of the last block, K passes
// of 768 + 232 bytes), each cut into up to four macro-blocks at uneven row
// and column offsets, with every epilogue feature set in turn. The output,
// guards around and between its rows included, must have the bits of the
// pure-Go epilogue on the naive product; for a feature set the assembly
// epilogue does not serve, the kernel must decline and write nothing.
func TestAMXFusedMatchesReference(t *testing.T) {
	f := cpu.Detect()
	kernels := []struct {
		name string
		run  fusedBlockFunc
		ok   bool
	}{
		{"amx-pipelined", amxPipelinedBlock, f.AMXInt8 && f.AVX512},
		{"amx-block", amxFusedBlock, f.AMXInt8 && f.AVX512},
		{"amx-pipelined-prefetch", amxPipelinedPrefetchBlock, f.AMXInt8 && f.AVX512},
		{"amx-pipelined-prefetch-pair", amxPipelinedPrefetchPairBlock, f.AMXInt8 && f.AVX512},
		{"amx-pipelined-emulated", amxPipelinedEmulatedBlock, f.AVX512VNNI && f.AVX512},
		{"amx-pipelined-prefetch-emulated", amxPipelinedPrefetchEmulatedBlock, f.AVX512VNNI && f.AVX512},
		{"amx-pipelined-prefetch-pair-emulated", amxPipelinedPrefetchPairEmulatedBlock, f.AVX512VNNI && f.AVX512},
		{"amx-block-emulated", amxFusedEmulatedBlock, f.AVX512VNNI && f.AVX512},
	}
	opts := allEpiOptions()
	for _, k := range kernels {
		t.Run(k.name, func(t *testing.T) {
			if !k.ok {
				t.Skipf("CPU/OS lacks what %s needs (AMX-INT8 or AVX512-VNNI, and AVX-512; features: %v)", k.name, f)
			}
			rng := rand.New(rand.NewPCG(7, 7))
			for i, s := range kernelShapes() {
				o := opts[(i*37)%len(opts)]
				t.Run(fmt.Sprintf("%v/%v", s, o), func(t *testing.T) {
					p := newProblem(t, rng, s, 3)
					ep, f32buf, u8buf := newEpilogue(rng, p, o)
					wantF, wantU := expected(p, ep, f32buf, u8buf)
					served := o.rowScale == o.rowZeroPoint // epilogueAsmArgsFor's rule for these epilogues
					nblocks := p.b.Np / NBlock
					rowCuts := []int{0, s.m / 2, s.m}
					colCuts := []int{0, nblocks / 2, nblocks}
					for r := 0; r+1 < len(rowCuts); r++ {
						for c := 0; c+1 < len(colCuts); c++ {
							m0, rows := rowCuts[r], rowCuts[r+1]-rowCuts[r]
							nb0, nbs := colCuts[c], colCuts[c+1]-colCuts[c]
							if rows == 0 || nbs == 0 {
								continue
							}
							n0 := nb0 * NBlock
							ldc := scratchStride(nbs * NBlock)
							scratch := make([]int32, rows*ldc)
							got := k.run(p.a, p.lda, p.b, scratch, ldc, ep, m0, n0, rows, nbs, min(nbs*NBlock, s.n-n0))
							if got != served {
								t.Fatalf("block rows %d+%d, N-blocks %d+%d: fused kernel returned %v, want %v", m0, rows, nb0, nbs, got, served)
							}
						}
					}
					if !served {
						// Nothing may have been written: the outputs are all guard.
						wantF, wantU = pristine(f32buf, u8buf)
					}
					compareOutputs(t, k.name, ep, f32buf, wantF, u8buf, wantU)
				})
			}
		})
	}
}

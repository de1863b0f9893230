package nn

import (
	"fmt"
	"math"
	"testing"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// biasCase is an attnCase with MPNet's bias, [1, heads, sq, sk], and the
// mask it is added to and their float32 sum, materialised as a full
// [batch, heads, sq, sk] mask.
func biasCase(c attnCase) (dims, summedDims *AttentionDims, q, k, v, mask, bias, summed []float32) {
	dims, q, k, v, mask = attnCaseData(c)
	bias = randSlice(13, c.heads*c.sq*c.sk, -3, 3)
	bias[0], bias[1] = float32(math.Copysign(0, -1)), 0 // the sum turns -0 to +0; the kernels skip adding 0
	dims.MaskBatchStride, dims.MaskHeadStride, dims.MaskRowStride = 0, 0, 0
	if mask != nil {
		dims.MaskBatchStride = c.sk // attnCaseData's masks are [batch, 1, 1, sk] here
	}
	dims.BiasHeadStride, dims.BiasRowStride = c.sq*c.sk, c.sk
	sd := *dims
	sd.BiasBatchStride, sd.BiasHeadStride, sd.BiasRowStride = 0, 0, 0
	sd.MaskBatchStride, sd.MaskHeadStride, sd.MaskRowStride = c.heads*c.sq*c.sk, c.sq*c.sk, c.sk
	summed = make([]float32, c.batch*c.heads*c.sq*c.sk)
	for b := range c.batch {
		for h := range c.heads {
			for i := range c.sq {
				for j := range c.sk {
					x := bias[(h*c.sq+i)*c.sk+j]
					if mask != nil {
						x += mask[b*c.sk+j]
					}
					summed[((b*c.heads+h)*c.sq+i)*c.sk+j] = x
				}
			}
		}
	}
	return dims, &sd, q, k, v, mask, bias, summed
}

// TestAttentionBiasIsSummedMask: attention with a bias beside the mask
// gives, bit for bit, what it gives on their float32 sum as one full mask
// (which is what sqc.Attention's bias input means), FP32 and INT8, with
// every kernel set, with and without a padding mask (float32's lowest,
// which the sum keeps: those keys are not live in INT8 either).
func TestAttentionBiasIsSummedMask(t *testing.T) {
	engines := int8Engines(t)
	for _, c := range []attnCase{
		{"padded", 3, 21, 21, 4, 16, 0, "padding"},
		{"no mask", 2, 9, 9, 2, 8, 3, ""},
		{"chunk tails", 2, 130, 130, 2, 64, 0, "padding"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dims, sd, q, k, v, mask, bias, summed := biasCase(c)
			n := c.batch * c.sq * dims.OutStride
			for _, kern := range append(implementations(t), goKernels()) {
				withPools(t, func(t *testing.T, p *pool.Pool) {
					got, want := make([]float32, n), make([]float32, n)
					scratch := make([]float32, AttentionScratchLen(workers(p), c.sk, c.d))
					attention(kern, p, scratch, got, q, k, v, mask, bias, dims)
					attention(kern, p, scratch, want, q, k, v, summed, nil, sd)
					sameBits(t, fmt.Sprintf("FP32 kernels %s workers %d", kern.name, workers(p)), got, want)
					for _, e := range engines {
						scratch := make([]float32, AttentionInt8ScratchLen(workers(p), c.sk, c.d))
						attentionInt8(kern, p, e, scratch, attnOut{f32: got}, q, k, v, mask, bias, dims, nil)
						attentionInt8(kern, p, e, scratch, attnOut{f32: want}, q, k, v, summed, nil, sd, nil)
						sameBits(t, fmt.Sprintf("INT8 %s kernels %s workers %d", e.ISA(), kern.name, workers(p)), got, want)
					}
				})
			}
		})
	}
}

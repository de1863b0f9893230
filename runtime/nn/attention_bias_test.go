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

// positionBias is a bias of the positions only, as MPNet's: [heads, seq,
// seq] with element (h, i, j) a function of h and j - i, so the bias of a
// shorter sequence is the top-left corner of a longer one's.
func positionBias(heads, seq int) []float32 {
	const span = 200 // distances -99 .. 100
	table := randSlice(17, heads*span, -3, 3)
	bias := make([]float32, heads*seq*seq)
	for h := range heads {
		for i := range seq {
			for j := range seq {
				bias[(h*seq+i)*seq+j] = table[h*span+j-i+99]
			}
		}
	}
	return bias
}

// TestAttentionPackedBiasedMatchesAlone: a packed batch with a position
// bias computed at its longest length gives each sequence the bits the
// biased attention gives it alone (its own bias, no mask) and the bits of
// the padded batch (the same bias beside the padding mask): FP32 with
// every kernel set, INT8 into f32 and into u8.
func TestAttentionPackedBiasedMatchesAlone(t *testing.T) {
	const heads, hd = 3, 16
	lengths := []int{5, 1, 70, 17, 64, 33}
	longest, width := 70, heads*hd
	offsets := PackedOffsets(nil, lengths)
	tokens := offsets[len(lengths)]
	q, k, v := randSlice(30, tokens*width, -3, 3), randSlice(31, tokens*width, -3, 3), randSlice(32, tokens*width, -3, 3)
	bias := positionBias(heads, longest)
	dims := AttentionDims{Heads: heads, HeadDim: hd, Scale: 0.25, QStride: width, KStride: width, VStride: width, OutStride: width,
		BiasHeadStride: longest * longest, BiasRowStride: longest}

	// The padded batch: each sequence's rows at b*longest, pad rows
	// random, keys past its length masked.
	padQ, padK, padV := randSlice(33, len(lengths)*longest*width, -50, 50), randSlice(34, len(lengths)*longest*width, -50, 50), randSlice(35, len(lengths)*longest*width, -50, 50)
	mask := make([]float32, len(lengths)*longest)
	for b, l := range lengths {
		copy(padQ[b*longest*width:], q[offsets[b]*width:offsets[b+1]*width])
		copy(padK[b*longest*width:], k[offsets[b]*width:offsets[b+1]*width])
		copy(padV[b*longest*width:], v[offsets[b]*width:offsets[b+1]*width])
		for j := l; j < longest; j++ {
			mask[b*longest+j] = -math.MaxFloat32
		}
	}
	pd := dims
	pd.Batch, pd.SeqQ, pd.SeqK, pd.MaskBatchStride = len(lengths), longest, longest, longest

	type form struct {
		name string
		// run computes into out: packed (offsets), or the batch of
		// dims with mask and bias.
		run func(p *pool.Pool, out []float32, q, k, v, mask, bias []float32, d *AttentionDims, offsets []int)
	}
	var forms []form
	for _, kern := range append(implementations(t), goKernels()) {
		forms = append(forms, form{"FP32 kernels " + kern.name, func(p *pool.Pool, out []float32, q, k, v, mask, bias []float32, d *AttentionDims, offsets []int) {
			scratch := make([]float32, AttentionScratchLen(workers(p), longest, hd))
			if offsets != nil {
				attentionPacked(kern, p, scratch, out, q, k, v, bias, d, offsets)
			} else {
				attention(kern, p, scratch, out, q, k, v, mask, bias, d)
			}
		}})
	}
	for _, e := range int8Engines(t) {
		forms = append(forms, form{fmt.Sprint("INT8 ", e.ISA()), func(p *pool.Pool, out []float32, q, k, v, mask, bias []float32, d *AttentionDims, offsets []int) {
			scratch := make([]float32, AttentionInt8ScratchLen(workers(p), longest, hd))
			if offsets != nil {
				AttentionInt8PackedBiased(p, e, scratch, out, q, k, v, bias, d, offsets)
			} else {
				AttentionInt8Biased(p, e, scratch, out, q, k, v, mask, bias, d)
			}
		}}, form{fmt.Sprint("INT8->u8 ", e.ISA()), func(p *pool.Pool, out []float32, q, k, v, mask, bias []float32, d *AttentionDims, offsets []int) {
			// The u8 codes, widened to compare as floats.
			scratch := make([]float32, AttentionInt8ScratchLen(workers(p), longest, hd))
			codes := make([]uint8, len(out))
			if offsets != nil {
				AttentionInt8U8PackedBiased(p, e, scratch, codes, q, k, v, bias, d, offsets, 9, 120)
			} else {
				AttentionInt8U8Biased(p, e, scratch, codes, q, k, v, mask, bias, d, 9, 120)
			}
			for i, c := range codes {
				out[i] = float32(c)
			}
		}})
	}
	for _, f := range forms {
		withPools(t, func(t *testing.T, p *pool.Pool) {
			packed, padded := make([]float32, tokens*width), make([]float32, len(padQ))
			f.run(p, packed, q, k, v, nil, bias, &dims, offsets)
			f.run(p, padded, padQ, padK, padV, mask, bias, &pd, nil)
			for b, l := range lengths {
				ad := dims
				ad.Batch, ad.SeqQ, ad.SeqK, ad.BiasHeadStride, ad.BiasRowStride = 1, l, l, l*l, l
				alone := make([]float32, l*width)
				rows := offsets[b] * width
				f.run(p, alone, q[rows:], k[rows:], v[rows:], nil, positionBias(heads, l), &ad, nil)
				what := fmt.Sprintf("%s workers %d sequence %d", f.name, workers(p), b)
				sameBits(t, what+" packed", packed[rows:rows+l*width], alone)
				sameBits(t, what+" padded", padded[b*longest*width:][:l*width], alone)
			}
		})
	}
}

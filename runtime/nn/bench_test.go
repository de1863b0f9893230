package nn

import (
	"fmt"
	"testing"

	"github.com/sqc-dev/sqc/internal/lnstats"
	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Benchmarks run every kernel implementation this build and CPU have
// (sub-benchmarks "go" and "avx512"), at BERT-base shapes: batch 8 of 128
// tokens (and of 32), 12 heads of 64, hidden size 768. Besides ns/op they
// report the process CPU time per op (cpu-ns/op, all workers together),
// which other processes on a shared machine do not inflate.

func benchKernels(b *testing.B, f func(b *testing.B, kern *kernels)) {
	ks := []*kernels{goKernels()}
	if a := active(); a.name != "go" {
		ks = append(ks, a)
	}
	for _, k := range ks {
		b.Run(k.name, func(b *testing.B) {
			start := processCPU()
			f(b, k)
			if used := processCPU() - start; used > 0 {
				b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// bertAttentionOperands are the attention benchmarks' operands: BERT-base's
// batch of 8 with 12 heads of 64, fused QKV rows as a BERT graph has them,
// a [batch, 1, 1, seq] mask with nothing padded, and the output; flops
// counts Q·K^T and P·V at 2 per multiply-add.
func bertAttentionOperands(seq int) (d *AttentionDims, qkv, mask, out []float32, flops int) {
	const batch, heads, hd = 8, 12, 64
	w := heads * hd
	d = &AttentionDims{
		Batch: batch, SeqQ: seq, SeqK: seq, Heads: heads, HeadDim: hd, Scale: 0.125,
		QStride: 3 * w, KStride: 3 * w, VStride: 3 * w, OutStride: w, MaskBatchStride: seq,
	}
	return d, randSlice(1, batch*seq*3*w, -2, 2), make([]float32, batch*seq), make([]float32, batch*seq*w), 4 * batch * heads * seq * seq * hd
}

func BenchmarkAttention(b *testing.B) {
	for _, seq := range []int{128, 32} {
		b.Run(fmt.Sprintf("seq%d", seq), func(b *testing.B) {
			d, qkv, mask, out, flops := bertAttentionOperands(seq)
			w := d.Heads * d.HeadDim
			p := pool.New(0)
			defer p.Close()
			scratch := make([]float32, AttentionScratchLen(p.Workers(), seq, d.HeadDim))
			benchKernels(b, func(b *testing.B, kern *kernels) {
				for b.Loop() {
					attention(kern, p, scratch, out, qkv, qkv[w:], qkv[2*w:], mask, nil, d)
				}
				b.ReportMetric(float64(flops)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		})
	}
}

func BenchmarkLayerNorm(b *testing.B) {
	const rows, n = 8 * 128, 768
	src := randSlice(1, rows*n, -3, 3)
	dst := make([]float32, rows*n)
	dstU8 := make([]uint8, rows*n)
	ln := &LayerNormParams{N: n, Gamma: randSlice(2, n, 0.5, 1.5), Beta: randSlice(3, n, -1, 1), Epsilon: 1e-12}
	p := pool.New(0)
	defer p.Close()
	b.Run("f32", func(b *testing.B) {
		benchKernels(b, func(b *testing.B, kern *kernels) {
			b.SetBytes(int64(4 * len(src)))
			for b.Loop() {
				layerNorm(kern, p, dst, n, nil, 0, src, n, rows, ln, 0, 0)
			}
		})
	})
	b.Run("f32+u8", func(b *testing.B) {
		benchKernels(b, func(b *testing.B, kern *kernels) {
			b.SetBytes(int64(4 * len(src)))
			for b.Loop() {
				layerNorm(kern, p, dst, n, dstU8, n, src, n, rows, ln, 30, 128)
			}
		})
	})
}

func BenchmarkQuantize(b *testing.B) {
	const rows, cols = 8 * 128, 768
	src := randSlice(1, rows*cols, -4, 4)
	dst := make([]uint8, rows*cols)
	scales, zps := make([]float32, rows), make([]int32, rows)
	b.Run("static", func(b *testing.B) {
		benchKernels(b, func(b *testing.B, kern *kernels) {
			b.SetBytes(int64(4 * len(src)))
			for b.Loop() {
				quantizeU8(kern, dst, cols, src, cols, rows, cols, 30, 128)
			}
		})
	})
	b.Run("rows", func(b *testing.B) {
		benchKernels(b, func(b *testing.B, kern *kernels) {
			b.SetBytes(int64(4 * len(src)))
			for b.Loop() {
				quantizeRowsU8(kern, dst, cols, src, cols, rows, cols, scales, zps)
			}
		})
	})
}

func BenchmarkGelu(b *testing.B) {
	const n = 8 * 128 * 3072 // BERT-base FFN activations of a batch
	src := randSlice(1, n, -6, 6)
	dst := make([]float32, n)
	benchKernels(b, func(b *testing.B, kern *kernels) {
		b.SetBytes(4 * n)
		for b.Loop() {
			kern.gelu(dst, src)
		}
	})
}

// BenchmarkLNKernels times the LayerNorm and quantiser kernels alone, at
// BERT-base's hidden size (768, whole blocks of 8) and at 771 (a tail on
// every row): statistics of one group of 16 rows, then each one-row kernel.
func BenchmarkLNKernels(b *testing.B) {
	for _, n := range []int{768, 771} {
		x := randSlice(1, lnGroup*n, -3, 3)
		y, q := make([]float32, n), make([]uint8, n)
		ln := &LayerNormParams{N: n, Gamma: randSlice(2, n, 0.5, 1.5), Beta: randSlice(3, n, -1, 1), Epsilon: 1e-12}
		gammaQ, betaQ := randSlice(4, n, 0.05, 4), randSlice(5, n, -0.5, 0.5)
		var mean, inv [lnGroup]float64
		row := x[:n]
		for _, c := range []struct {
			name string
			f    func(kern *kernels)
		}{
			{"stats16", func(kern *kernels) { kern.lnStats16(x, n, n, ln.Epsilon, &mean, &inv) }},
			{"normalize", func(kern *kernels) {
				kern.lnNormalize(y, q, row, lnstats.Row32{MeanHi: 0.1, MeanLo: 1e-9, Inv: 0.9}, ln, 30, 128)
			}},
			{"dual", func(kern *kernels) {
				kern.lnNormalizeDual(y, q, row, lnstats.Row32{MeanHi: 0.1, MeanLo: 1e-9, Inv: 0.9}, ln, gammaQ, betaQ, 30, 128)
			}},
			{"quantize", func(kern *kernels) { kern.quantize(q, n, row, n, 1, n, 30, 128) }},
			{"minMax", func(kern *kernels) { kern.minMax(row) }},
		} {
			b.Run(fmt.Sprintf("%s/n%d", c.name, n), func(b *testing.B) {
				benchKernels(b, func(b *testing.B, kern *kernels) {
					for b.Loop() {
						c.f(kern)
					}
				})
			})
		}
	}
}

// BenchmarkAttentionInt8 runs BenchmarkAttention's BERT-base shapes through
// the FP32 attention ("fp32", the active kernels) and the INT8 one on each
// qgemm variant ("int8-amx", "int8-avx2", ...), side by side in one run.
func BenchmarkAttentionInt8(b *testing.B) {
	for _, seq := range []int{128, 32} {
		b.Run(fmt.Sprintf("seq%d", seq), func(b *testing.B) {
			d, qkv, mask, out, flops := bertAttentionOperands(seq)
			w, hd := d.Heads*d.HeadDim, d.HeadDim
			p := pool.New(0)
			defer p.Close()
			report := func(b *testing.B) {
				b.ReportMetric(float64(flops)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
			}
			b.Run("fp32", func(b *testing.B) {
				scratch := make([]float32, AttentionScratchLen(p.Workers(), seq, hd))
				for b.Loop() {
					Attention(p, scratch, out, qkv, qkv[w:], qkv[2*w:], mask, d)
				}
				report(b)
			})
			for _, v := range qgemm.Variants() {
				e, err := qgemm.New(qgemm.Options{Pool: p, Variant: &v})
				if err != nil {
					b.Fatal(err)
				}
				b.Run("int8-"+v.ISA.String(), func(b *testing.B) {
					scratch := make([]float32, AttentionInt8ScratchLen(p.Workers(), seq, hd))
					for b.Loop() {
						AttentionInt8(p, e, scratch, out, qkv, qkv[w:], qkv[2*w:], mask, d)
					}
					report(b)
				})
				// With MPNet's relative position bias, [1, heads, seq, seq].
				b.Run("int8-"+v.ISA.String()+"-biased", func(b *testing.B) {
					scratch := make([]float32, AttentionInt8ScratchLen(p.Workers(), seq, hd))
					bias := make([]float32, d.Heads*seq*seq)
					bd := *d
					bd.BiasHeadStride, bd.BiasRowStride = seq*seq, seq
					for b.Loop() {
						AttentionInt8Biased(p, e, scratch, out, qkv, qkv[w:], qkv[2*w:], mask, bias, &bd)
					}
					report(b)
				})
			}
		})
	}
}

// BenchmarkMinMaxRows times the per-row extremes INT8 attention takes of a
// head's 128 key or query rows (64 values each, rows 2304 floats apart as
// in BERT-base's fused QKV output), warm in L2.
func BenchmarkMinMaxRows(b *testing.B) {
	const rows, n, stride = 128, 64, 2304
	x := randSlice(1, rows*stride, -3, 3)
	lo, hi := make([]float32, rows), make([]float32, rows)
	benchKernels(b, func(b *testing.B, kern *kernels) {
		for b.Loop() {
			kern.minMaxRows(x, stride, rows, n, lo, hi)
		}
	})
}

// BenchmarkAttnProbs times INT8 attention's quantisation of one 16-query
// block of softmax numerators over 128 keys into the u8 P operand.
func BenchmarkAttnProbs(b *testing.B) {
	const sk = 128
	sT := randSlice(1, sk*attnRows, 0, 1)
	p := make([]uint8, attnRows*sk)
	benchKernels(b, func(b *testing.B, kern *kernels) {
		for b.Loop() {
			kern.attnProbs(p, sk, sT, sk)
		}
	})
}

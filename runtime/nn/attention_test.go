package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// attentionRef is multi-head attention written plainly in float64, with
// the mask given as full [batch, heads, seqQ, seqK] via the strides.
func attentionRef(q, k, v, mask []float32, d *AttentionDims) []float64 {
	hd := d.HeadDim
	y := make([]float64, d.Batch*d.SeqQ*d.OutStride)
	p := make([]float64, d.SeqK)
	for b := range d.Batch {
		for h := range d.Heads {
			for i := range d.SeqQ {
				top := math.Inf(-1)
				for j := range d.SeqK {
					dot := 0.0
					for c := range hd {
						dot += float64(q[(b*d.SeqQ+i)*d.QStride+h*hd+c]) * float64(k[(b*d.SeqK+j)*d.KStride+h*hd+c])
					}
					s := dot * float64(d.Scale)
					if mask != nil {
						s += float64(mask[b*d.MaskBatchStride+h*d.MaskHeadStride+i*d.MaskRowStride+j])
					}
					p[j] = s
					top = math.Max(top, s)
				}
				sum := 0.0
				for j := range p {
					p[j] = math.Exp(p[j] - top)
					sum += p[j]
				}
				for j := range p {
					for c := range hd {
						y[(b*d.SeqQ+i)*d.OutStride+h*hd+c] += p[j] / sum * float64(v[(b*d.SeqK+j)*d.VStride+h*hd+c])
					}
				}
			}
		}
	}
	return y
}

type attnCase struct {
	name                    string
	batch, sq, sk, heads, d int
	pad                     int // extra row-stride elements
	mask                    string
}

func TestAttention(t *testing.T) {
	for _, c := range []attnCase{
		{"bert-like padded", 3, 21, 21, 4, 16, 0, "padding"},
		{"one row", 1, 1, 1, 1, 8, 0, ""},
		{"strided cross", 2, 9, 13, 3, 5, 7, "full"},
		{"rows multiple of 8", 2, 16, 16, 2, 12, 0, "padding"},
		{"all masked", 2, 5, 5, 2, 4, 0, "all"},
		{"head broadcast", 2, 6, 7, 3, 4, 1, "rows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			width := c.heads * c.d
			dims, q, k, v, mask := attnCaseData(c)
			want := attentionRef(q, k, v, mask, dims)
			var first []float32
			withPools(t, func(t *testing.T, p *pool.Pool) {
				out := make([]float32, c.batch*c.sq*dims.OutStride)
				scratch := make([]float32, AttentionScratchLen(workers(p), c.sk, c.d))
				Attention(p, scratch, out, q, k, v, mask, dims)
				worst := 0.0
				for b := range c.batch {
					for i := range c.sq {
						for e := range dims.OutStride {
							at := (b*c.sq+i)*dims.OutStride + e
							if e >= width {
								if out[at] != 0 {
									t.Fatalf("Attention wrote the row padding at %d", at)
								}
								continue
							}
							worst = max(worst, math.Abs(float64(out[at])-want[at]))
						}
					}
				}
				// Outputs are convex combinations of values in [-2, 2].
				if worst > 4e-6 {
					t.Errorf("max |Attention - float64 reference| = %.3g, want <= 4e-6", worst)
				}
				if first == nil {
					first = out
				} else {
					sameBits(t, "Attention with a pool", out, first)
				}
			})
		})
	}
}

// TestAttnScores2Kernel compares the two-block score kernel with the Go
// one-block kernel run on each block, bit for bit, on odd shapes with
// guarded outputs.
func TestAttnScores2Kernel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, impl := range implementations(t) {
		for _, sk := range testSeqs {
			for _, d := range testDims {
				kStride := d + r.IntN(4)
				qA, qB := make([]float32, attnRows*d), make([]float32, attnRows*d)
				fillRandom(r, qA, -2, 2, 0.02)
				fillRandom(r, qB, -2, 2, 0.02)
				k, _ := guarded(max(0, (sk-1)*kStride+d))
				fillRandom(r, k, -2, 2, 0.02)
				wantA, wantB := make([]float32, attnRows*sk), make([]float32, attnRows*sk)
				scoresGo(wantA, qA, k, kStride, sk, d)
				scoresGo(wantB, qB, k, kStride, sk, d)
				gotA, checkA := guarded(attnRows * sk)
				gotB, checkB := guarded(attnRows * sk)
				impl.attnScores2(gotA, gotB, qA, qB, k, kStride, sk, d)
				checkA(t, "attnScores2 A")
				checkB(t, "attnScores2 B")
				what := fmt.Sprintf("scores2 sk=%d d=%d", sk, d)
				sameFloats(t, what+" block A", gotA, wantA)
				sameFloats(t, what+" block B", gotB, wantB)
			}
		}
	}
}

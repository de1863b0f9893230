package nn

import "github.com/sqc-dev/sqc/runtime/pool"

// MaskedSum sets dst[b*hidden+c] = float32(sum over s < seq, in order, of
// float64(float32(x[(b*seq+s)*hidden+c] * float32(mask[b*seq+s])))) for b < batch:
// the masked sum over the tokens that mean pooling in a graph starts with
// (sqc.MaskedSum), as the exported Mul and ReduceSum (which accumulates
// in float64 and rounds once) compute it.
func MaskedSum(dst, x []float32, mask []int64, batch, seq, hidden int) {
	MaskedSumParallel(nil, dst, x, mask, batch, seq, hidden)
}

// maskedSumChunk is how many columns one pass over the rows sums: 256
// float64 accumulators (2 KiB, on the stack, in L1 beside the rows).
const maskedSumChunk = 256

// maskedSumRows sums the len(mask) rows of x (hidden wide) times their
// mask values into dst, each column in row order.
func maskedSumRows(dst, x []float32, mask []int64, hidden int) {
	for c0 := 0; c0 < hidden; c0 += maskedSumChunk {
		var acc [maskedSumChunk]float64
		w := min(maskedSumChunk, hidden-c0)
		for s, m := range mask {
			row := x[s*hidden+c0 : s*hidden+c0+w]
			for c, v := range row {
				acc[c] += float64(v * float32(m))
			}
		}
		for c, v := range acc[:w] {
			dst[c0+c] = float32(v)
		}
	}
}

// MaskedSumParallel is MaskedSum with the sequences spread over p's
// workers (nil: the caller's goroutine); the bits are MaskedSum's.
func MaskedSumParallel(p *pool.Pool, dst, x []float32, mask []int64, batch, seq, hidden int) {
	forRows(maskedSumCalls, p, batch, seq*hidden, maskedSumArgs{dst: dst, x: x, mask: mask, seq: seq, hidden: hidden}, maskedSumRange)
}

// MaskedSumPacked is MaskedSum on a packed batch: x holds sequence b's
// tokens at rows offsets[b] .. offsets[b+1]-1 (PackedOffsets) and mask is
// the padded batch's, [batch, seq]; each sequence sums its real tokens,
// with their mask values, the bits of its padded sum (a padded token adds
// float64(x*0), ±0, which changes a sum only from -0 to +0: a column whose
// every real product is -0 sums to -0 here and +0 padded).
func MaskedSumPacked(p *pool.Pool, dst, x []float32, mask []int64, seq, hidden int, offsets []int) {
	batch := len(offsets) - 1
	forRows(maskedSumCalls, p, batch, seq*hidden, maskedSumArgs{dst: dst, x: x, mask: mask, seq: seq, hidden: hidden, offsets: offsets}, maskedSumRange)
}

type maskedSumArgs struct {
	dst, x      []float32
	mask        []int64
	seq, hidden int
	offsets     []int // nil: padded
}

var maskedSumCalls = newRowsRecycler[maskedSumArgs]()

func maskedSumRange(a *maskedSumArgs, b0, b1 int) {
	for b := b0; b < b1; b++ {
		if a.offsets == nil {
			maskedSumRows(a.dst[b*a.hidden:(b+1)*a.hidden], a.x[b*a.seq*a.hidden:], a.mask[b*a.seq:(b+1)*a.seq], a.hidden)
			continue
		}
		n := a.offsets[b+1] - a.offsets[b]
		maskedSumRows(a.dst[b*a.hidden:(b+1)*a.hidden], a.x[a.offsets[b]*a.hidden:], a.mask[b*a.seq:b*a.seq+n], a.hidden)
	}
}

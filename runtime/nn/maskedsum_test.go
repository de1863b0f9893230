package nn

import (
	"math"
	"testing"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// TestMaskedSum: MaskedSum is the float32 products summed in float64 in
// token order (hidden wider than one chunk of accumulators); 1 and 3
// workers give its bits, and MaskedSumPacked, on each sequence's real
// tokens, the padded sum's.
func TestMaskedSum(t *testing.T) {
	const batch, seq, hidden = 4, 9, maskedSumChunk + 37
	x := randSlice(4, batch*seq*hidden, -3, 3)
	lengths := []int{9, 1, 5, 7}
	mask := make([]int64, batch*seq)
	for b, l := range lengths {
		for s := range l {
			mask[b*seq+s] = 1
		}
	}
	want := make([]float32, batch*hidden)
	for b := range batch {
		for c := range hidden {
			var acc float64
			for s := range seq {
				acc += float64(x[(b*seq+s)*hidden+c] * float32(mask[b*seq+s]))
			}
			want[b*hidden+c] = float32(acc)
		}
	}
	offsets := PackedOffsets(nil, lengths)
	var packed []float32
	for b, l := range lengths {
		packed = append(packed, x[b*seq*hidden:][:l*hidden]...)
	}
	for _, workers := range []int{1, 3} {
		p := pool.New(workers)
		got, check := guarded(batch * hidden)
		MaskedSumParallel(p, got, x, mask, batch, seq, hidden)
		check(t, "MaskedSumParallel")
		sameBits(t, "MaskedSumParallel", got, want)
		got, check = guarded(batch * hidden)
		MaskedSumPacked(p, got, packed, mask, seq, hidden, offsets)
		check(t, "MaskedSumPacked")
		sameBits(t, "MaskedSumPacked", got, want)
		p.Close()
	}
	if math.Float32bits(want[hidden]) != math.Float32bits(x[seq*hidden]) { // sequence 1 has one token
		t.Errorf("a one-token sum is %g, want the token's %g", want[hidden], x[seq*hidden])
	}
}

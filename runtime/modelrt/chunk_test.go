package modelrt

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// spreadBatch is n sequences with lengths spread over [lo, hi] in a
// seeded random order, each id naming its sequence and position.
func spreadBatch(n, lo, hi int, seed uint64) Batch {
	r := rand.New(rand.NewPCG(seed, 7))
	b := Batch{InputIDs: make([][]int64, n), AttentionMask: make([][]int64, n), TokenTypeIDs: make([][]int64, n)}
	for i := range n {
		l := lo + r.IntN(hi-lo+1)
		b.InputIDs[i], b.AttentionMask[i], b.TokenTypeIDs[i] = make([]int64, l), make([]int64, l), make([]int64, l)
		for j := range l {
			b.InputIDs[i][j] = int64(1000*i + j)
			b.AttentionMask[i][j] = 1
			b.TokenTypeIDs[i][j] = int64(j % 2)
		}
	}
	return b
}

func TestChunkOrder(t *testing.T) {
	lengths := func(b *Batch, order []int) []int {
		var ls []int
		for _, i := range order {
			ls = append(ls, len(b.InputIDs[i]))
		}
		return ls
	}
	b := Batch{InputIDs: [][]int64{{1, 2, 3}, {1}, {1, 2}, {1}, {1, 2, 3}, {1, 2}}}
	if got := ChunkOrder(nil, &b, 6); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("one chunk: order %v, want request order", got)
	}
	if got := ChunkOrder(nil, &b, 1); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("chunks of 1: order %v, want request order", got)
	}
	// Stable: equal lengths keep request order.
	got := ChunkOrder(nil, &b, 4)
	if want := []int{1, 3, 2, 5, 0, 4}; !slices.Equal(got, want) {
		t.Errorf("order %v (lengths %v), want %v", got, lengths(&b, got), want)
	}
	// The slice is reused when large enough, and grown when not.
	buf := make([]int, 0, 6)
	if got := ChunkOrder(buf, &b, 2); &got[0] != &buf[:1][0] {
		t.Error("ChunkOrder did not reuse a large enough slice")
	}
	big := spreadBatch(300, 8, 128, 1)
	order := ChunkOrder(buf, &big, 8)
	if len(order) != 300 || !slices.IsSorted(lengths(&big, order)) {
		t.Fatalf("300 sequences: order of %d, lengths %v", len(order), lengths(&big, order))
	}
	sorted := slices.Clone(order)
	slices.Sort(sorted)
	for i, x := range sorted {
		if x != i {
			t.Fatalf("order is not a permutation of 0..299: %v", order)
		}
	}
	if before, after := PaddedTokens(&big, ChunkOrder(nil, &big, 1)[:300], 8), PaddedTokens(&big, order, 8); after >= before {
		t.Errorf("padded tokens %d after sorting, %d before", after, before)
	}
}

func TestFillInputsOf(t *testing.T) {
	b := Batch{InputIDs: [][]int64{{5}, {6, 7, 8}, {9, 9}}, TokenTypeIDs: [][]int64{{1}, {0, 1, 1}, {1, 1}}}
	ids, mask, types := make([]int64, 9), make([]int64, 9), make([]int64, 9)
	for i := range ids {
		ids[i], mask[i], types[i] = -7, -7, -7 // stale data from an earlier chunk
	}
	idx := []int{2, 0, 1}
	seq := LongestOf(&b, idx[:2])
	if seq != 2 {
		t.Fatalf("LongestOf = %d, want 2", seq)
	}
	FillInputsOf(ids, mask, types, &b, idx[:2], seq, 0)
	if want := []int64{9, 9, 5, 0}; !slices.Equal(ids[:4], want) {
		t.Errorf("ids %v, want %v", ids[:4], want)
	}
	if want := []int64{1, 1, 1, 0}; !slices.Equal(mask[:4], want) {
		t.Errorf("mask %v, want %v", mask[:4], want)
	}
	if want := []int64{1, 1, 1, 0}; !slices.Equal(types[:4], want) {
		t.Errorf("types %v, want %v", types[:4], want)
	}
	// The same rows FillInputs writes for the same sequences in order.
	a, a2 := make([]int64, 9), make([]int64, 9)
	FillInputsOf(a, make([]int64, 9), nil, &b, []int{1, 2}, 3, 4)
	FillInputs(a2, make([]int64, 9), nil, &b, 1, 3, 3, 4)
	if !slices.Equal(a, a2) {
		t.Errorf("FillInputsOf %v, FillInputs %v", a, a2)
	}
}

// TestChunkingAllocatesNothing: with a kept order slice, ordering and
// filling the chunks of a request allocate nothing.
func TestChunkingAllocatesNothing(t *testing.T) {
	b := spreadBatch(64, 8, 128, 2)
	ids, mask, types := make([]int64, 8*128), make([]int64, 8*128), make([]int64, 8*128)
	order := ChunkOrder(nil, &b, 8)
	allocs := testing.AllocsPerRun(20, func() {
		order = ChunkOrder(order, &b, 8)
		for lo := 0; lo < len(order); lo += 8 {
			idx := order[lo:min(len(order), lo+8)]
			FillInputsOf(ids, mask, types, &b, idx, LongestOf(&b, idx), 0)
		}
	})
	if allocs != 0 {
		t.Errorf("%g allocations per request, want 0", allocs)
	}
}

// BenchmarkChunkOrder reports the token positions a forward pass computes
// for 64 sequences of 8..128 tokens in chunks of 8, padded per chunk, in
// request order ("before") and in ChunkOrder ("after"), and the time the
// ordering takes.
func BenchmarkChunkOrder(b *testing.B) {
	batch := spreadBatch(64, 8, 128, 3)
	real := 0
	for _, ids := range batch.InputIDs {
		real += len(ids)
	}
	inOrder := ChunkOrder(nil, &batch, 1)
	order := ChunkOrder(nil, &batch, 8)
	before, after := PaddedTokens(&batch, inOrder, 8), PaddedTokens(&batch, order, 8)
	b.ReportAllocs()
	for b.Loop() {
		order = ChunkOrder(order, &batch, 8)
	}
	b.ReportMetric(float64(real), "tokens")
	b.ReportMetric(float64(before), "padded-tokens-before")
	b.ReportMetric(float64(after), "padded-tokens-after")
}

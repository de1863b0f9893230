package main

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/examples/sentiment/sentimentmodel"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// spreadBatch is n sequences of random token ids ([CLS] first, [SEP]
// last) with lengths uniform in [lo, hi], in a seeded random order.
func spreadBatch(n, lo, hi int, seed uint64) sentimentmodel.Batch {
	r := rand.New(rand.NewPCG(seed, 11))
	b := sentimentmodel.Batch{InputIDs: make([][]int64, n)}
	for i := range b.InputIDs {
		ids := make([]int64, lo+r.IntN(hi-lo+1))
		for j := range ids {
			ids[j] = 1000 + r.Int64N(sentimentmodel.VocabSize-1000)
		}
		ids[0], ids[len(ids)-1] = 101, 102
		b.InputIDs[i] = ids
	}
	return b
}

// TestRunLengthOrderedChunks runs a request of 3 x MaxBatch + 5 mixed
// lengths, which Run chunks in order of length (so chunk membership
// differs from request order), and requires each sequence's logits to be
// the bits it gets alone, returned in request order; with and without
// explicit masks.
func TestRunLengthOrderedChunks(t *testing.T) {
	m := newModel(t)
	ctx := context.Background()
	b := spreadBatch(3*sentimentmodel.MaxBatch+5, 2, sentimentmodel.MaxSequence, 5)
	order := modelrt.ChunkOrder(nil, &b, sentimentmodel.MaxBatch)
	if slices.IsSorted(order) {
		t.Fatal("the lengths are already in order: the test would not reorder")
	}
	withMasks := b
	withMasks.AttentionMask = make([][]int64, len(b.InputIDs))
	for i, ids := range b.InputIDs {
		withMasks.AttentionMask[i] = slices.Repeat([]int64{1}, len(ids))
	}
	for _, req := range []sentimentmodel.Batch{b, withMasks} {
		all, err := m.Run(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for i, ids := range req.InputIDs {
			one, err := m.Run(ctx, sentimentmodel.Batch{InputIDs: [][]int64{ids}})
			if err != nil {
				t.Fatal(err)
			}
			for j, v := range one.Logits[0] {
				if math.Float32bits(v) != math.Float32bits(all.Logits[i][j]) {
					t.Fatalf("sequence %d (%d tokens): logit %d is %g in the batch, %g alone", i, len(ids), j, all.Logits[i][j], v)
				}
			}
		}
	}
}

// BenchmarkRunMixedLengths times a request of 64 sequences of 8..128
// tokens: "in-order" runs its chunks of MaxBatch in request order (what
// Run did before it ordered chunks by length: one Run per chunk),
// "length-ordered" is one Run. Both report the token positions computed
// (padding included) and the process's CPU milliseconds per request,
// steadier than wall time on a shared machine.
func BenchmarkRunMixedLengths(b *testing.B) {
	m, err := sentimentmodel.New()
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	req := spreadBatch(64, 8, 128, 9)
	ctx := context.Background()
	inOrder := make([]int, len(req.InputIDs))
	for i := range inOrder {
		inOrder[i] = i
	}
	b.Run("in-order", func(b *testing.B) {
		tokens := modelrt.PaddedTokens(&req, inOrder, sentimentmodel.MaxBatch)
		cpu := processCPU()
		for b.Loop() {
			for lo := 0; lo < len(req.InputIDs); lo += sentimentmodel.MaxBatch {
				chunk := sentimentmodel.Batch{InputIDs: req.InputIDs[lo:min(len(req.InputIDs), lo+sentimentmodel.MaxBatch)]}
				if _, err := m.Run(ctx, chunk); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportCPU(b, cpu)
		b.ReportMetric(float64(tokens), "tokens/op")
	})
	b.Run("length-ordered", func(b *testing.B) {
		tokens := modelrt.PaddedTokens(&req, modelrt.ChunkOrder(nil, &req, sentimentmodel.MaxBatch), sentimentmodel.MaxBatch)
		cpu := processCPU()
		for b.Loop() {
			if _, err := m.Run(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpu)
		b.ReportMetric(float64(tokens), "tokens/op")
	})
}

// reportCPU reports the CPU milliseconds per op since start (if known).
func reportCPU(b *testing.B, start time.Duration) {
	if end := processCPU(); start >= 0 && end >= 0 {
		b.ReportMetric(float64((end-start).Nanoseconds())/1e6/float64(b.N), "cpu-ms/op")
	}
}

// TestRunAllocations: a request of 4 x MaxBatch sequences, chunked in
// order of length, allocates no more than 4 requests of MaxBatch (which
// are not reordered): ordering adds nothing per chunk (the order is kept
// in the workspace), and the only allocations are the results.
func TestRunAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	m := newModel(t)
	ctx := context.Background()
	allocs := func(b sentimentmodel.Batch) float64 {
		if _, err := m.Run(ctx, b); err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(5, func() {
			if _, err := m.Run(ctx, b); err != nil {
				t.Fatal(err)
			}
		})
	}
	long := spreadBatch(4*sentimentmodel.MaxBatch, 2, 40, 3)
	if slices.IsSorted(modelrt.ChunkOrder(nil, &long, sentimentmodel.MaxBatch)) {
		t.Fatal("the request is already in length order")
	}
	short := sentimentmodel.Batch{InputIDs: long.InputIDs[:sentimentmodel.MaxBatch]}
	a, one := allocs(long), allocs(short)
	t.Logf("%d sequences: %.0f allocations per Run; %d sequences: %.0f", len(long.InputIDs), a, len(short.InputIDs), one)
	if a > 4*one {
		t.Errorf("%.0f allocations for 4 chunks, more than 4 x %.0f for one", a, one)
	}
	// The results are all that is allocated: the model has one output, so
	// one slice per sequence plus the slice of them. The kernels, the
	// workspace and the chunk order allocate nothing in steady state.
	for _, c := range []struct {
		n      int
		allocs float64
	}{{len(long.InputIDs), a}, {len(short.InputIDs), one}} {
		if c.allocs > float64(c.n+1) {
			t.Errorf("%d sequences: %.0f allocations per Run, want at most %d (the results)", c.n, c.allocs, c.n+1)
		}
	}
}

package nn

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// TestParallelMatchesSerial runs every *Parallel function on sizes that
// split into several chunks (and on tiny ones that do not) and requires
// the serial function's bits, for every pool size.
func TestParallelMatchesSerial(t *testing.T) {
	withPools(t, func(t *testing.T, p *pool.Pool) {
		for _, n := range []int{1, 37, 3 * elementsPerChunk, 5*elementsPerChunk + 13} {
			name := fmt.Sprintf("%d workers, %d values", workers(p), n)
			src := randSlice(uint64(n), n, -9, 9)
			for _, f := range []struct {
				name     string
				serial   func(dst, src []float32)
				parallel func(p *pool.Pool, dst, src []float32)
			}{{"Gelu", Gelu, GeluParallel}, {"GeluTanh", GeluTanh, GeluTanhParallel}, {"TanhSlice", TanhSlice, TanhSliceParallel}, {"Relu", Relu, ReluParallel}} {
				want, got := make([]float32, n), make([]float32, n)
				f.serial(want, src)
				f.parallel(p, got, src)
				sameBits(t, f.name+", "+name, got, want)
			}
			for _, bl := range []int{n, 1, 7} { // same length, and broadcasts
				if n%bl != 0 {
					continue
				}
				b := randSlice(uint64(bl)+1, bl, -2, 2)
				want, got := make([]float32, n), make([]float32, n)
				Add(want, src, b)
				AddParallel(p, got, src, b)
				sameBits(t, fmt.Sprintf("Add of %d, %s", bl, name), got, want)
			}
		}
		for _, shape := range [][2]int{{1, 5}, {3, 70}, {300, 384}, {1000, 100}} {
			rows, cols := shape[0], shape[1]
			kp := (cols + 63) / 64 * 64
			name := fmt.Sprintf("%d workers, %dx%d", workers(p), rows, cols)
			src := randSlice(uint64(rows*cols), rows*cols, -3, 3)
			want, got := make([]uint8, rows*kp), make([]uint8, rows*kp)
			QuantizeU8(want, kp, src, cols, rows, cols, 37.5, 121)
			QuantizeU8Parallel(p, got, kp, src, cols, rows, cols, 37.5, 121)
			if !slices.Equal(got, want) {
				t.Errorf("QuantizeU8Parallel, %s: differs from QuantizeU8", name)
			}
			scales, zps := make([]float32, rows), make([]int32, rows)
			gotScales, gotZps := make([]float32, rows), make([]int32, rows)
			QuantizeRowsU8(want, kp, src, cols, rows, cols, scales, zps)
			QuantizeRowsU8Parallel(p, got, kp, src, cols, rows, cols, gotScales, gotZps)
			if !slices.Equal(got, want) || !slices.Equal(gotZps, zps) {
				t.Errorf("QuantizeRowsU8Parallel, %s: differs from QuantizeRowsU8", name)
			}
			sameBits(t, "QuantizeRowsU8Parallel scales, "+name, gotScales, scales)
		}
	})
}

// TestEmbedSumParallel compares EmbedSumParallel with EmbedSum, bits and
// errors, on enough tokens to split.
func TestEmbedSumParallel(t *testing.T) {
	const hidden, vocab, types, maxPos, batch, seq = 48, 50, 2, 64, 9, 60
	e := &Embeddings{
		Hidden: hidden, Words: randSlice(1, vocab*hidden, -1, 1),
		Positions: randSlice(2, maxPos*hidden, -1, 1), TokenTypes: randSlice(3, types*hidden, -1, 1),
	}
	ids, tt := make([]int64, batch*seq), make([]int64, batch*seq)
	for i := range ids {
		ids[i] = int64(i*13%(2*vocab) - vocab) // negative ids count from the end
		tt[i] = int64(i % types)
	}
	withPools(t, func(t *testing.T, p *pool.Pool) {
		for _, typeIDs := range [][]int64{tt, nil} {
			want, got := make([]float32, batch*seq*hidden), make([]float32, batch*seq*hidden)
			if err := EmbedSum(want, e, ids, typeIDs, batch, seq); err != nil {
				t.Fatal(err)
			}
			if err := EmbedSumParallel(p, got, e, ids, typeIDs, batch, seq); err != nil {
				t.Fatal(err)
			}
			sameBits(t, fmt.Sprintf("EmbedSumParallel, %d workers, types %v", workers(p), typeIDs != nil), got, want)
		}
		out := make([]float32, batch*seq*hidden)
		badIDs, badTypes := slices.Clone(ids), slices.Clone(tt)
		badIDs[77], badIDs[200], badTypes[5] = vocab, -vocab-1, -types-1
		for _, c := range []struct{ ids, types []int64 }{{badIDs, tt}, {ids, badTypes}, {badIDs, badTypes}} {
			want := EmbedSum(out, e, c.ids, c.types, batch, seq)
			got := EmbedSumParallel(p, out, e, c.ids, c.types, batch, seq)
			if want == nil || got == nil || got.Error() != want.Error() {
				t.Errorf("error %v, EmbedSum gives %v", got, want)
			}
		}
		long := make([]int64, maxPos+1)
		if got, want := EmbedSumParallel(p, make([]float32, (maxPos+1)*hidden), e, long, nil, 1, maxPos+1),
			EmbedSum(make([]float32, (maxPos+1)*hidden), e, long, nil, 1, maxPos+1); got == nil || got.Error() != want.Error() {
			t.Errorf("sequence too long: error %v, EmbedSum gives %v", got, want)
		}
	})
}

// TestEmbedSumPositionsFirst: with PositionsFirst, EmbedSum,
// EmbedSumParallel and EmbedSumPacked all give float32 (word + position) +
// type, which is not the default order's bits.
func TestEmbedSumPositionsFirst(t *testing.T) {
	const hidden, vocab, types, maxPos, batch, seq = 32, 40, 2, 16, 5, 16
	// Tables on different grids (randSlice's values are multiples of 2^-23
	// in [-1, 1), whose sums are exact in any order).
	e := &Embeddings{
		Hidden: hidden, Words: randSlice(4, vocab*hidden, -1, 1), Positions: randSlice(5, maxPos*hidden, -0.3, 0.3),
		TokenTypes: randSlice(6, types*hidden, -0.07, 0.07), PositionsFirst: true,
	}
	ids, tt := make([]int64, batch*seq), make([]int64, batch*seq)
	for i := range ids {
		ids[i], tt[i] = int64(i*7%vocab), int64(i%types)
	}
	want := make([]float32, batch*seq*hidden)
	for i := range batch * seq {
		for c := range hidden {
			want[i*hidden+c] = (e.Words[int(ids[i])*hidden+c] + e.Positions[(i%seq)*hidden+c]) + e.TokenTypes[int(tt[i])*hidden+c]
		}
	}
	offsets := make([]int, batch+1)
	for b := range offsets {
		offsets[b] = b * seq
	}
	withPools(t, func(t *testing.T, p *pool.Pool) {
		for name, run := range map[string]func(dst []float32, e *Embeddings) error{
			"EmbedSum":         func(dst []float32, e *Embeddings) error { return EmbedSum(dst, e, ids, tt, batch, seq) },
			"EmbedSumParallel": func(dst []float32, e *Embeddings) error { return EmbedSumParallel(p, dst, e, ids, tt, batch, seq) },
			"EmbedSumPacked":   func(dst []float32, e *Embeddings) error { return EmbedSumPacked(p, dst, e, ids, tt, seq, offsets) },
		} {
			got := make([]float32, len(want))
			if err := run(got, e); err != nil {
				t.Fatal(err)
			}
			sameBits(t, fmt.Sprintf("%s, %d workers", name, workers(p)), got, want)
			other := *e
			other.PositionsFirst = false
			if err := run(got, &other); err != nil {
				t.Fatal(err)
			}
			if slices.Equal(got, want) {
				t.Errorf("%s: the default order gives the same bits; the test data cannot tell the orders apart", name)
			}
		}
	})
}

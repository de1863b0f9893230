package nn

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// disentangledCase is a DisentangledBias call: batch, seq, heads, head
// size, embedding rows, the row strides' padding, and which terms.
type disentangledCase struct {
	name                        string
	batch, seq, heads, hd, rows int
	pad                         int
	c2p, p2c                    bool
	exactSpan                   int // the index tables: clamp(span ± (i - j))
	divisor                     float32
}

// disentangledData makes the case's operands: q and k with padded rows,
// the embeddings, and DeBERTa's tables clamp(span + i - j) (c2p) and
// clamp(span - (j - i)) read at [j, i] (p2c), clamped to the rows.
func disentangledData(c disentangledCase) (d *DisentangledDims, q, posKey []float32, c2p []int64, k, posQuery []float32, p2c []int64) {
	width := c.heads * c.hd
	d = &DisentangledDims{Batch: c.batch, Seq: c.seq, Heads: c.heads, HeadDim: c.hd, Rows: c.rows,
		QStride: width + c.pad, KStride: width + 2*c.pad, Divisor: c.divisor}
	clamp := func(v int) int64 { return int64(min(max(v, 0), c.rows-1)) }
	table := func(sign int) []int64 {
		t := make([]int64, c.seq*c.seq)
		for i := range c.seq {
			for j := range c.seq {
				t[i*c.seq+j] = clamp(c.exactSpan + sign*(i-j))
			}
		}
		return t
	}
	if c.c2p {
		q = randSlice(31, c.batch*c.seq*d.QStride, -2, 2)
		posKey = randSlice(32, c.rows*width, -2, 2)
		c2p = table(1)
	}
	if c.p2c {
		k = randSlice(33, c.batch*c.seq*d.KStride, -2, 2)
		posQuery = randSlice(34, c.rows*width, -2, 2)
		p2c = table(-1)
	}
	return d, q, posKey, c2p, k, posQuery, p2c
}

// disentangledReference is DisentangledBias's formula, one value at a time.
func disentangledReference(d *DisentangledDims, q, posKey []float32, c2p []int64, k, posQuery []float32, p2c []int64) []float32 {
	s, hd, width := d.Seq, d.HeadDim, d.Heads*d.HeadDim
	dot := func(x, y []float32) float32 {
		var acc float32
		for c := range hd {
			acc += float32(x[c] * y[c])
		}
		return acc
	}
	out := make([]float32, d.Batch*d.Heads*s*s)
	for b := range d.Batch {
		for h := range d.Heads {
			for i := range s {
				for j := range s {
					var v float32
					switch {
					case q != nil && k != nil:
						v = dot(q[(b*s+i)*d.QStride+h*hd:], posKey[int(c2p[i*s+j])*width+h*hd:])/d.Divisor +
							dot(k[(b*s+j)*d.KStride+h*hd:], posQuery[int(p2c[j*s+i])*width+h*hd:])/d.Divisor
					case q != nil:
						v = dot(q[(b*s+i)*d.QStride+h*hd:], posKey[int(c2p[i*s+j])*width+h*hd:]) / d.Divisor
					default:
						v = dot(k[(b*s+j)*d.KStride+h*hd:], posQuery[int(p2c[j*s+i])*width+h*hd:]) / d.Divisor
					}
					out[((b*d.Heads+h)*s+i)*s+j] = v
				}
			}
		}
	}
	return out
}

// TestDisentangledBias: every kernel set gives the reference's bits with
// both terms or one, sequences that are not a multiple of 16 rows (a
// block's lanes past the sequence), padded row strides, tables that clamp
// at both ends and ones that reach only the middle rows, with and
// without a pool; the output is written in full (no guard value left).
func TestDisentangledBias(t *testing.T) {
	for _, c := range []disentangledCase{
		{"both terms", 2, 21, 3, 8, 16, 3, true, true, 8, 4.898979},
		{"c2p only, one row", 1, 1, 2, 16, 4, 0, true, false, 2, 2},
		{"p2c only, 33 rows", 2, 33, 2, 64, 512, 1, false, true, 256, 13.856406},
		{"clamped tables", 1, 40, 4, 8, 12, 0, true, true, 6, 1.7320508},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, q, posKey, c2p, k, posQuery, p2c := disentangledData(c)
			want := disentangledReference(d, q, posKey, c2p, k, posQuery, p2c)
			for _, kern := range append(implementations(t), goKernels()) {
				withPools(t, func(t *testing.T, p *pool.Pool) {
					workers := 1
					if p != nil {
						workers = p.Workers()
					}
					got := make([]float32, len(want))
					for i := range got {
						got[i] = 12345
					}
					scratch := make([]float32, DisentangledScratchLen(workers, d.Rows, d.HeadDim))
					if err := disentangledBias(kern, p, scratch, got, q, posKey, c2p, k, posQuery, p2c, d, nil); err != nil {
						t.Fatal(err)
					}
					sameBits(t, kern.name, got, want)
				})
			}
		})
	}
}

// TestDisentangledBiasRefusesIndices: an index outside the embedding rows
// is an error naming the table, and nothing is written.
func TestDisentangledBiasRefusesIndices(t *testing.T) {
	c := disentangledCase{"", 1, 5, 2, 8, 6, 0, true, true, 3, 2}
	for _, bad := range []struct {
		table string
		value int64
		want  string
	}{{"c2p", -1, "c2p index -1 is negative"}, {"p2c", 6, "p2c index 6 is past the 6"}} {
		d, q, posKey, c2p, k, posQuery, p2c := disentangledData(c)
		if bad.table == "c2p" {
			c2p[7] = bad.value
		} else {
			p2c[7] = bad.value
		}
		out := make([]float32, d.Batch*d.Heads*d.Seq*d.Seq)
		err := DisentangledBias(nil, make([]float32, DisentangledScratchLen(1, d.Rows, d.HeadDim)), out, q, posKey, c2p, k, posQuery, p2c, d)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s[7] = %d: err = %v, want %q", bad.table, bad.value, err, bad.want)
		}
		for i, v := range out {
			if v != 0 {
				t.Fatalf("%s[7] = %d: out[%d] = %g written", bad.table, bad.value, i, v)
			}
		}
	}
}

// TestDisentangledBiasDoesNotAllocate: the call's state is recycled.
func TestDisentangledBiasDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops recycled items at random")
	}
	c := disentangledCase{"", 2, 24, 2, 16, 32, 0, true, true, 16, 2}
	d, q, posKey, c2p, k, posQuery, p2c := disentangledData(c)
	p := pool.New(2)
	defer p.Close()
	out := make([]float32, d.Batch*d.Heads*d.Seq*d.Seq)
	scratch := make([]float32, DisentangledScratchLen(2, d.Rows, d.HeadDim))
	if a := testing.AllocsPerRun(50, func() {
		_ = DisentangledBias(p, scratch, out, q, posKey, c2p, k, posQuery, p2c, d)
	}); a != 0 {
		t.Errorf("%g allocations per call", a)
	}
}

// TestDisentangledBiasPacked: on a packed batch of sequences of 0, 1, 17
// and the padded 21 tokens, each sequence's corner of the padded bias has
// the bits DisentangledBias gives it alone, with every kernel set; the
// rest of the buffer is left as it was.
func TestDisentangledBiasPacked(t *testing.T) {
	c := disentangledCase{"", 1, 21, 3, 8, 40, 2, true, true, 20, 4.898979}
	lengths := []int{17, 0, 21, 1}
	alone := make([][]float32, len(lengths))
	dAll, q, posKey, c2p, k, posQuery, p2c := disentangledData(disentangledCase{"", len(lengths), c.seq, c.heads, c.hd, c.rows, c.pad, true, true, c.exactSpan, c.divisor})
	// Pack the rows: sequence b's first lengths[b] rows of the padded data.
	offsets := []int{0}
	var pq, pk []float32
	for b, n := range lengths {
		pq = append(pq, q[b*c.seq*dAll.QStride:][:n*dAll.QStride]...)
		pk = append(pk, k[b*c.seq*dAll.KStride:][:n*dAll.KStride]...)
		offsets = append(offsets, offsets[b]+n)
		// Alone: the sequence's rows at its own length, and the tables'
		// corner (they depend on i - j only).
		d := *dAll
		d.Batch, d.Seq = 1, n
		corner := func(tab []int64) []int64 {
			out := make([]int64, 0, n*n)
			for i := range n {
				out = append(out, tab[i*c.seq:][:n]...)
			}
			return out
		}
		if n > 0 {
			alone[b] = disentangledReference(&d, q[b*c.seq*dAll.QStride:], posKey, corner(c2p), k[b*c.seq*dAll.KStride:], posQuery, corner(p2c))
		}
	}
	for _, kern := range append(implementations(t), goKernels()) {
		withPools(t, func(t *testing.T, p *pool.Pool) {
			workers := 1
			if p != nil {
				workers = p.Workers()
			}
			out := make([]float32, len(lengths)*c.heads*c.seq*c.seq)
			for i := range out {
				out[i] = 12345
			}
			scratch := make([]float32, DisentangledScratchLen(workers, c.rows, c.hd))
			d := *dAll
			if err := disentangledBias(kern, p, scratch, out, pq, posKey, c2p, pk, posQuery, p2c, &d, offsets); err != nil {
				t.Fatal(err)
			}
			for b, n := range lengths {
				for h := range c.heads {
					for i := range c.seq {
						for j := range c.seq {
							got := out[((b*c.heads+h)*c.seq+i)*c.seq+j]
							if i >= n || j >= n {
								if got != 12345 {
									t.Fatalf("%s: sequence %d head %d [%d, %d] outside its %d tokens written", kern.name, b, h, i, j, n)
								}
								continue
							}
							if want := alone[b][(h*n+i)*n+j]; math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%s: sequence %d head %d [%d, %d] = %g, alone %g", kern.name, b, h, i, j, got, want)
							}
						}
					}
				}
			}
		})
	}
	if err := DisentangledBiasPacked(nil, nil, nil, pq, posKey, c2p, pk, posQuery, p2c, dAll, offsets[:3]); err == nil {
		t.Error("offsets for 2 sequences of a batch of 4: no error")
	}
}

// BenchmarkDisentangledBias is one DeBERTa-v3-base layer's relative terms
// at 8 x 128 (12 heads of 64, 512 embedding rows, log buckets: the
// distances below 128 each their own row) on 2 workers.
// divisor=1 is FuseDisentangledBias's form (the embeddings divided at
// compile time).
func BenchmarkDisentangledBias(b *testing.B) {
	for _, div := range []float32{13.856406, 1} {
		b.Run(fmt.Sprintf("divisor=%g", div), func(b *testing.B) {
			c := disentangledCase{"", 8, 128, 12, 64, 512, 0, true, true, 256, div}
			d, q, posKey, c2p, k, posQuery, p2c := disentangledData(c)
			p := pool.New(2)
			defer p.Close()
			out := make([]float32, d.Batch*d.Heads*d.Seq*d.Seq)
			scratch := make([]float32, DisentangledScratchLen(2, d.Rows, d.HeadDim))
			for b.Loop() {
				if err := DisentangledBias(p, scratch, out, q, posKey, c2p, k, posQuery, p2c, d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRelGatherKernels: every kernel set's relGather gives relGatherGo's
// bits on odd shapes (1 to 3 rows of 1 to 40 columns, across and past the
// 16-lane steps, padded strides), both lane steps DisentangledBias uses
// (0 for c2p, 1 for p2c), with and without the division and the add, on
// edge values (signed zeros, infinities, NaN, subnormals) and indices at
// both ends of their span; nothing is written outside the rows' columns
// (guard values around and between them).
func TestRelGatherKernels(t *testing.T) {
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-40, -3e38}
	const gap = 3 // padding between output rows
	for _, k := range implementations(t) {
		for _, rows := range []int{1, 3} {
			for _, cols := range []int{1, 5, 15, 16, 17, 33, 40} {
				for _, lane := range []int{0, 1} {
					if lane == 1 && cols > attnRows {
						continue // p2c gathers one 16-key block per call
					}
					for _, div := range []float32{1, 13.856406} {
						for _, add := range []bool{false, true} {
							what := fmt.Sprintf("%s relGather %dx%d lane %d div %g add %v", k.name, rows, cols, lane, div, add)
							span := idxSpan{3, 3 + int32(cols)/2 + 2}
							srcRows := int(span.hi) - int(span.lo) + 1
							src := randSlice(uint64(rows*100+cols), srcRows*attnRows+attnRows, -5, 5)
							for i, v := range specials {
								src[(i*13)%len(src)] = v
							}
							idxStride := cols + 2
							idx := make([]int32, (rows-1)*idxStride+cols)
							for i := range idx {
								idx[i] = span.lo + int32((i*7+i/3)%srcRows)
							}
							idx[0], idx[len(idx)-1] = span.hi, span.lo
							base := 5 - int(span.lo)*attnRows // a row offset, as c2p's r%16
							if lane == 1 {
								base = -int(span.lo) * attnRows
							}
							stride := cols + gap
							n := (rows-1)*stride + cols
							start := randSlice(uint64(cols), n, -1, 1)
							want := slices.Clone(start)
							relGatherGo(want, stride, src, idx, idxStride, rows, cols, base, lane, span, div, add)
							got, check := guarded(n)
							copy(got, start)
							for r := range rows - 1 {
								for c := range gap {
									got[r*stride+cols+c] = 777 // between rows: must stay
									want[r*stride+cols+c] = 777
								}
							}
							k.relGather(got, stride, src, idx, idxStride, rows, cols, base, lane, span, div, add)
							check(t, what)
							sameBits(t, what, got, want)
						}
					}
				}
			}
		}
	}
}

// TestRelGatherRefusesOutOfSpan: an index outside the promised span
// panics in the Go kernel, and indices the source cannot hold panic in
// every kernel (the assembly's wrapper checks the span before reading).
func TestRelGatherRefusesOutOfSpan(t *testing.T) {
	src := make([]float32, 4*attnRows)
	dst := make([]float32, 8)
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", what)
			}
		}()
		f()
	}
	mustPanic("go: index past the span", func() {
		relGatherGo(dst, 8, src, []int32{0, 1, 2, 3, 2, 1, 0, 1}, 8, 1, 8, 0, 0, idxSpan{0, 2}, 1, false)
	})
	for _, k := range implementations(t) {
		mustPanic(k.name+": span past the source", func() {
			k.relGather(dst, 8, src, []int32{0, 1, 2, 4, 2, 1, 0, 1}, 8, 1, 8, 0, 0, idxSpan{0, 4}, 1, false)
		})
		mustPanic(k.name+": span before the source", func() {
			k.relGather(dst, 8, src, []int32{1, 1, 1, 1, 1, 1, 1, 1}, 8, 1, 8, -2*attnRows, 0, idxSpan{1, 1}, 1, false)
		})
	}
}

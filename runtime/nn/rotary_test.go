package nn

import (
	"fmt"
	"math"
	"testing"

	"github.com/sqc-dev/sqc/runtime/pool"
)

// rotaryReference is x*cos + rotate_half(x)*sin per head, written as the
// exported graph computes it: rotate_half as a new vector (Concat of the
// negated upper half and the lower half), then two float32 products and
// a float32 sum per element.
func rotaryReference(x, cos, sin []float32, heads, d int) []float32 {
	y := make([]float32, len(x))
	half := d / 2
	for h := range heads {
		xs := x[h*d : (h+1)*d]
		rot := make([]float32, d)
		for e := range half {
			rot[e], rot[e+half] = -xs[e+half], xs[e]
		}
		for e := range d {
			a := float32(xs[e] * cos[e])
			b := float32(rot[e] * sin[e])
			y[h*d+e] = a + b
		}
	}
	return y
}

// TestRotary: Rotary, RotaryParallel (tables shared or per sequence, 1 and
// 3 workers) and RotaryPacked give the reference's bits on odd shapes,
// and write nothing past the rows they own.
func TestRotary(t *testing.T) {
	for ci, c := range []struct{ batch, seq, heads, d, tableBatch int }{
		{1, 1, 1, 2, 1}, {2, 5, 3, 6, 1}, {3, 7, 2, 10, 3}, {4, 33, 5, 14, 1},
	} {
		width := c.heads * c.d
		seed := uint64(3 * ci)
		x := randSlice(seed, c.batch*c.seq*width, -4, 4)
		cos, sin := randSlice(seed+1, c.tableBatch*c.seq*c.d, -1, 1), randSlice(seed+2, c.tableBatch*c.seq*c.d, -1, 1)
		want := make([]float32, len(x))
		for tok := range c.batch * c.seq {
			b, s := tok/c.seq, tok%c.seq
			if c.tableBatch == 1 {
				b = 0
			}
			row := (b*c.seq + s) * c.d
			copy(want[tok*width:], rotaryReference(x[tok*width:(tok+1)*width], cos[row:row+c.d], sin[row:row+c.d], c.heads, c.d))
		}
		dims := &RotaryDims{Batch: c.batch, Seq: c.seq, Heads: c.heads, HeadSize: c.d, TableBatch: c.tableBatch}
		for _, workers := range []int{1, 3} {
			p := pool.New(workers)
			got := make([]float32, len(x)+8) // guard values past the end
			for i := len(x); i < len(got); i++ {
				got[i] = 42
			}
			RotaryParallel(p, got, x, cos, sin, dims)
			p.Close()
			sameBits(t, "RotaryParallel", got[:len(x)], want)
			for i := len(x); i < len(got); i++ {
				if got[i] != 42 {
					t.Fatalf("%+v: RotaryParallel wrote past the end", c)
				}
			}
		}
		if c.tableBatch != 1 {
			continue
		}
		// Packed: sequence b keeps its first lengths[b] tokens.
		lengths := make([]int, c.batch)
		for b := range lengths {
			lengths[b] = 1 + (b*5+3)%c.seq
		}
		offsets := PackedOffsets(nil, lengths)
		var px, pwant []float32
		for b, l := range lengths {
			px = append(px, x[b*c.seq*width:][:l*width]...)
			pwant = append(pwant, want[b*c.seq*width:][:l*width]...)
		}
		for _, workers := range []int{1, 3} {
			p := pool.New(workers)
			got := make([]float32, len(px))
			RotaryPacked(p, got, px, cos, sin, dims, offsets)
			p.Close()
			sameBits(t, "RotaryPacked", got, pwant)
		}
	}
}

// TestMulParallel: the elementwise product, the same bits on any number
// of workers.
func TestMulParallel(t *testing.T) {
	a, b := randSlice(1, 10007, -3, 3), randSlice(2, 10007, -3, 3)
	want := make([]float32, len(a))
	for i := range a {
		want[i] = a[i] * b[i]
	}
	for _, workers := range []int{1, 2, 3} {
		p := pool.New(workers)
		got := make([]float32, len(a))
		MulParallel(p, got, a, b)
		p.Close()
		sameBits(t, "MulParallel", got, want)
	}
}

// TestAddSaturating: two finite addends that overflow give ±MaxFloat32;
// infinities and in-range sums are float32's own.
func TestAddSaturating(t *testing.T) {
	lowest := float32(-math.MaxFloat32)
	inf := float32(math.Inf(1))
	for _, c := range []struct{ a, b, want float32 }{
		{lowest, lowest, lowest}, {-lowest, -lowest, -lowest}, {lowest, 0, lowest}, {1.5, 2.25, 3.75},
		{lowest, -5, lowest}, {-inf, 0, -inf}, {-inf, lowest, -inf}, {inf, 1, inf},
	} {
		if got := AddSaturating(c.a, c.b); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("AddSaturating(%g, %g) = %g, want %g", c.a, c.b, got, c.want)
		}
	}
}

// BenchmarkRotary is ModernBERT-base's rotary embedding of one projection
// (12 heads of 64) for a batch of 8 x 128 tokens, on one goroutine.
func BenchmarkRotary(b *testing.B) {
	dims := &RotaryDims{Batch: 8, Seq: 128, Heads: 12, HeadSize: 64, TableBatch: 1}
	x := randSlice(1, dims.Batch*dims.Seq*dims.Heads*dims.HeadSize, -1, 1)
	cos, sin := randSlice(2, dims.Seq*dims.HeadSize, -1, 1), randSlice(3, dims.Seq*dims.HeadSize, -1, 1)
	dst := make([]float32, len(x))
	b.SetBytes(int64(8 * len(x))) // x read and dst written
	for b.Loop() {
		RotaryParallel(nil, dst, x, cos, sin, dims)
	}
}

// TestRotaryKernels: every kernel set's rotary gives rotaryGo's bits on
// odd shapes (head sizes below, at and past the 16-lane chunks, one to
// five heads) with edge values (signed zeros, infinities, NaN from 0·∞,
// subnormals), writing nothing outside the row (guard values around dst);
// rotaryGo itself is TestRotary's reference.
func TestRotaryKernels(t *testing.T) {
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -3e38, 1}
	for _, k := range implementations(t) {
		for _, heads := range []int{1, 2, 5} {
			for _, d := range []int{2, 6, 30, 32, 34, 64, 70} {
				x := randSlice(uint64(heads*100+d), heads*d, -3, 3)
				cos, sin := randSlice(uint64(d), d, -1, 1), randSlice(uint64(d)+1, d, -1, 1)
				for i, v := range specials {
					if i < len(x) {
						x[(i*7)%len(x)] = v
					}
					cos[(i*3)%d] = specials[(i+2)%len(specials)]
				}
				want := make([]float32, heads*d)
				rotaryGo(want, x, cos, sin, heads, d)
				got, check := guarded(heads * d)
				k.rotary(got, x, cos, sin, heads, d)
				check(t, fmt.Sprintf("%s rotary %d x %d", k.name, heads, d))
				sameBits(t, fmt.Sprintf("%s rotary %d x %d", k.name, heads, d), got, want)
			}
		}
	}
}

package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// randSlice is n deterministic values uniform in [lo, hi).
func randSlice(seed uint64, n int, lo, hi float32) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x6e6e))
	s := make([]float32, n)
	for i := range s {
		s[i] = lo + float32((hi-lo)*r.Float32()) // float32(): no FMA on arm64, same data everywhere
	}
	return s
}

// sameBits fails unless got and want are equal bit for bit.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if bad < 5 {
				t.Errorf("%s[%d] = %g (%#x), want %g (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d values differ", what, bad, len(got))
	}
}

// withPools runs f without a pool and with pools of 2 and 3 workers.
func withPools(t *testing.T, f func(t *testing.T, p *pool.Pool)) {
	for _, w := range []int{0, 2, 3} {
		var p *pool.Pool
		if w > 0 {
			p = pool.New(w)
		}
		f(t, p)
		if p != nil {
			p.Close()
		}
	}
}

// ulpDiff is the distance in float32 ulps between a and the float64 b
// rounded to float32.
func ulpDiff(a float32, b float64) int64 {
	x, y := int64(math.Float32bits(a)), int64(math.Float32bits(float32(b)))
	if (x < 0x80000000) != (y < 0x80000000) { // opposite signs: distance through 0
		return (x & 0x7fffffff) + (y & 0x7fffffff)
	}
	d := x - y
	if d < 0 {
		d = -d
	}
	return d
}

// gemmVariants is every qgemm variant this process can run, then, on a
// CPU without AMX that can emulate it, the AMX variant with its tile
// instructions emulated (qgemm.EmulatedAMX): the AMX paths of INT8
// attention and LinearLayerNorm (serial tile GEMMs, the fused pipelined
// epilogue, the AMX cost model's row-major finish plans) run here too.
func gemmVariants() []qgemm.Variant { return qgemm.WithEmulatedAMX(qgemm.Variants()) }

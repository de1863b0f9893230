package exec

import (
	"testing"

	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// TestMemory checks Program.Memory on allocModel against sizes worked out
// from the graph: packed weights from each i8 initializer's padded shape,
// every f32 table and parameter once, nothing held as i8 besides the
// packed form, and an arena that is empty before the first Run and grows
// with the shape.
func TestMemory(t *testing.T) {
	g := parse(t, allocModel)
	p := compile(t, g, nil, 2)
	f32 := func(names ...string) (n int64) {
		for _, name := range names {
			n += 4 * int64(g.Initializers[name].Len())
		}
		return n
	}
	var packed, scales int64
	for _, name := range []string{"wq", "wk", "wv", "wo", "w1", "w2"} {
		w := g.Initializers[name]
		k, n := int(w.Shape[0]), int(w.Shape[1])
		np := int64(qgemm.RoundUp(n, 16))
		packed += int64(qgemm.RoundUp(k, qgemm.KBlock))*np + 4*np
		scales += 4 * int64(n)
	}
	want := Memory{
		PackedGEMM: packed,
		GEMMParams: scales + f32("bq", "bf1"),
		Embeddings: f32("word", "pos", "typ"),
		NormParams: f32("g0", "b0", "g1", "b1", "g2"),
		F32Linear:  f32("wp", "bp", "wc", "bc"),
		Constants:  8, // %i0, the Gather index
	}
	m := p.Memory()
	if m.Activations != 0 || m.Scratch != 0 {
		t.Errorf("before any Run: activations %d, scratch %d bytes, want 0", m.Activations, m.Scratch)
	}
	got := m
	got.Activations, got.Scratch, got.SharedRefs = 0, 0, 0
	if got != want {
		t.Errorf("Memory() = %+v\nwant         %+v", got, want)
	}
	if m.I8Initializers != 0 {
		t.Errorf("%d bytes of i8 initializers held besides the packed weights", m.I8Initializers)
	}
	if w := want.PackedGEMM + want.GEMMParams + want.Embeddings + want.NormParams + want.F32Linear + want.Constants; p.Memory().Weights() != w {
		t.Errorf("Weights %d, want %d", p.Memory().Weights(), w)
	}
	run(t, p, allocInputs(2, 8))
	small := p.Memory()
	run(t, p, allocInputs(4, 16))
	large := p.Memory()
	// [4, 16] tokens x 32 f32 hidden values is 8 KiB per f32 value; there
	// are several, plus the FFN's 96-wide ones.
	if small.Activations <= 0 || large.Activations <= small.Activations || large.Scratch <= 0 {
		t.Errorf("activations %d then %d bytes, scratch %d: want growth with the shape", small.Activations, large.Activations, large.Scratch)
	}
	if large.Arena() != large.Activations+large.Scratch || p.Memory().Arena() != large.Arena() {
		t.Errorf("Arena %d, again %d, want %d", large.Arena(), p.Memory().Arena(), large.Activations+large.Scratch)
	}
	if large.Weights() != m.Weights() {
		t.Errorf("weights changed by running: %d then %d", m.Weights(), large.Weights())
	}
	if min := int64(4*16*32*4) * 3; large.Activations < min {
		t.Errorf("activations %d bytes, less than three f32 [4, 16, 32] values (%d)", large.Activations, min)
	}
}

package nn

import (
	"math"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// TestReluMatchesEpilogue requires the standalone ReLU (ReluParallel, as
// the engine runs it outside a GEMM) to give the bits of a GEMM
// epilogue's ActRelu, on every epilogue of this process (the pure-Go one
// and each variant's), for values over the whole float32 range: -0,
// denormals, infinities and quiet NaNs of both signs with payloads. With
// c = 1 and Scale = x the epilogue's v is 1*x, which is x but for
// signalling NaNs (the product quiets them; no epilogue v is one).
func TestReluMatchesEpilogue(t *testing.T) {
	var xs []float32
	for bits := uint64(0); bits < 1<<32; bits += 65537 {
		x := math.Float32frombits(uint32(bits))
		if x != x {
			x = math.Float32frombits(uint32(bits) | 1<<22) // quiet
		}
		xs = append(xs, x)
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), math.Float32frombits(0x80000001), math.Float32frombits(0xFFC00000))
	n := len(xs)
	got := make([]float32, n)
	p := pool.New(2)
	defer p.Close()
	ReluParallel(p, got, xs)
	ones := make([]int32, n)
	for i := range ones {
		ones[i] = 1
	}
	epilogues := map[string]qgemm.EpilogueFunc{"go": qgemm.EpilogueGo}
	for _, v := range qgemm.Variants() {
		if v.Epilogue != nil {
			epilogues[v.ISA.String()] = v.Epilogue
		}
	}
	for name, f := range epilogues {
		ep := &qgemm.Epilogue{Scale: xs, Act: qgemm.ActRelu, OutF32: make([]float32, n), OutStride: n}
		f(ep, ones, n, 0, 0, 1, n)
		for i, want := range ep.OutF32 {
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("ReluParallel(%#x) = %#x, %s epilogue ActRelu gives %#x", math.Float32bits(xs[i]), math.Float32bits(got[i]), name, math.Float32bits(want))
			}
		}
	}
}

func TestGather(t *testing.T) {
	// src [2, 4, 3], gather along the middle axis.
	src := make([]float32, 24)
	for i := range src {
		src[i] = float32(i)
	}
	dst := make([]float32, 2*3*3)
	if err := Gather(dst, src, 2, 4, 3, []int64{3, 0, -1}); err != nil {
		t.Fatal(err)
	}
	want := []float32{9, 10, 11, 0, 1, 2, 9, 10, 11, 21, 22, 23, 12, 13, 14, 21, 22, 23}
	sameBits(t, "Gather", dst, want)
	for _, ix := range []int64{4, -5} {
		if err := Gather(dst, src, 2, 4, 3, []int64{0, ix}); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("index %d: err = %v, want out of range", ix, err)
		}
	}
}

// TestEmbed checks the fused embedding equals Gather, Add and LayerNorm
// in the graph's order, bit for bit, and rejects bad ids.
func TestEmbed(t *testing.T) {
	const vocab, hidden, maxPos, types, batch, seq = 50, 24, 16, 2, 3, 7
	e := &Embeddings{
		Hidden: hidden, Words: randSlice(30, vocab*hidden, -1, 1), Positions: randSlice(31, maxPos*hidden, -1, 1),
		TokenTypes: randSlice(32, types*hidden, -1, 1),
		Norm:       LayerNormParams{N: hidden, Gamma: randSlice(33, hidden, 0.5, 1.5), Beta: randSlice(34, hidden, -1, 1), Epsilon: 1e-12},
	}
	ids := make([]int64, batch*seq)
	tt := make([]int64, batch*seq)
	for i := range ids {
		ids[i] = int64(i*7) % vocab
		tt[i] = int64(i % 2)
	}
	noTypes := *e
	noTypes.TokenTypes = nil
	for _, c := range []struct {
		name    string
		e       *Embeddings
		typeIDs []int64
	}{{"type ids", e, tt}, {"type 0 without type ids", e, nil}, {"no type table", &noTypes, nil}} {
		want := make([]float32, batch*seq*hidden)
		if err := Gather(want, e.Words, 1, vocab, hidden, ids); err != nil {
			t.Fatal(err)
		}
		if c.e.TokenTypes != nil {
			typeIDs := c.typeIDs
			if typeIDs == nil {
				typeIDs = make([]int64, len(ids))
			}
			te := make([]float32, len(want))
			if err := Gather(te, e.TokenTypes, 1, types, hidden, typeIDs); err != nil {
				t.Fatal(err)
			}
			Add(want, want, te)
		}
		Add(want, want, e.Positions[:seq*hidden]) // [1, seq, hidden] broadcast over the batch
		LayerNorm(nil, want, hidden, want, hidden, batch*seq, &e.Norm)
		withPools(t, func(t *testing.T, p *pool.Pool) {
			got := make([]float32, len(want))
			if err := Embed(p, got, c.e, ids, c.typeIDs, batch, seq); err != nil {
				t.Fatal(err)
			}
			sameBits(t, "Embed, "+c.name, got, want)
		})
	}
	got := make([]float32, batch*seq*hidden)
	bad := append([]int64(nil), ids...)
	bad[5] = vocab
	if err := Embed(nil, got, e, bad, nil, batch, seq); err == nil {
		t.Error("token id = vocab size: no error")
	}
	badTypes := append([]int64(nil), tt...)
	badTypes[2] = types
	if err := Embed(nil, got, e, ids, badTypes, batch, seq); err == nil {
		t.Error("token type out of range: no error")
	}
	if err := Embed(nil, make([]float32, 2*(maxPos+1)*hidden), e, make([]int64, 2*(maxPos+1)), nil, 2, maxPos+1); err == nil {
		t.Error("sequence longer than the position table: no error")
	}
}

func TestActivations(t *testing.T) {
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	src := []float32{-2, negZero, 0, 1.5, nan, float32(math.Inf(-1))}
	dst := make([]float32, len(src))
	Relu(dst, src)
	for i, want := range []float32{0, 0, 0, 1.5, nan, 0} {
		if math.Float32bits(dst[i]) != math.Float32bits(want) && !(want != want && dst[i] != dst[i]) {
			t.Errorf("Relu(%g) = %g, want %g", src[i], dst[i], want)
		}
	}
	x := randSlice(40, 1000, -8, 8)
	Gelu(x[:500], x[:500]) // in place
	y := randSlice(40, 1000, -8, 8)
	for i := range 500 {
		if math.Float32bits(x[i]) != math.Float32bits(qgemm.ActGelu.Apply(y[i])) {
			t.Fatalf("Gelu(%g) = %g, ActGelu.Apply %g", y[i], x[i], qgemm.ActGelu.Apply(y[i]))
		}
	}
	GeluTanh(x[:500], y[:500])
	for i := range 500 {
		if math.Float32bits(x[i]) != math.Float32bits(qgemm.ActGeluTanh.Apply(y[i])) {
			t.Fatalf("GeluTanh(%g) = %g, ActGeluTanh.Apply %g", y[i], x[i], qgemm.ActGeluTanh.Apply(y[i]))
		}
	}
	TanhSlice(dst[:3], []float32{0.25, -3, 20})
	for i, w := range []float64{math.Tanh(0.25), math.Tanh(-3), 1} {
		if ulpDiff(dst[i], w) > 4 {
			t.Errorf("TanhSlice[%d] = %g, want %g", i, dst[i], w)
		}
	}
	a := []float32{1, 2, 3, 4, 5, 6}
	Add(a, a, []float32{10, 20})
	sameBits(t, "Add broadcast", a, []float32{11, 22, 13, 24, 15, 26})
	mask := make([]float32, 4)
	AttentionMask(mask, []int64{1, 0, 2, 0}, -math.MaxFloat32)
	sameBits(t, "AttentionMask", mask, []float32{0, -math.MaxFloat32, 0, -math.MaxFloat32})
}

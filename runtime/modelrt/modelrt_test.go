package modelrt

import (
	"errors"
	"math"
	"slices"
	"testing"
	"unsafe"
)

func TestValidateErrors(t *testing.T) {
	lim := Limits{MaxSequence: 4, Vocab: 10, TypeVocab: 2}
	ok := [][]int64{{1, 2, 3}}
	for _, tc := range []struct {
		name string
		b    Batch
		want error
	}{
		{"empty batch", Batch{}, ErrEmptyBatch},
		{"empty sequence", Batch{InputIDs: [][]int64{{1}, {}}}, ErrEmptySequence},
		{"too long", Batch{InputIDs: [][]int64{{1, 2, 3, 4, 5}}}, ErrSequenceTooLong},
		{"id too large", Batch{InputIDs: [][]int64{{1, 10}}}, ErrTokenOutOfRange},
		{"negative id", Batch{InputIDs: [][]int64{{-1}}}, ErrTokenOutOfRange},
		{"mask length", Batch{InputIDs: ok, AttentionMask: [][]int64{{1, 1}}}, ErrMaskLength},
		{"mask count", Batch{InputIDs: ok, AttentionMask: [][]int64{{1, 1, 1}, {1}}}, ErrBatchShape},
		{"types length", Batch{InputIDs: ok, TokenTypeIDs: [][]int64{{0}}}, ErrTokenTypeLength},
		{"type out of range", Batch{InputIDs: ok, TokenTypeIDs: [][]int64{{0, 2, 0}}}, ErrTokenTypeInRange},
	} {
		err := Validate(&tc.b, lim)
		if !errors.Is(err, tc.want) || !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: got %v, want %v (and ErrInvalidInput)", tc.name, err, tc.want)
		}
	}
	if err := Validate(&Batch{InputIDs: ok, AttentionMask: [][]int64{{1, 1, 0}}, TokenTypeIDs: [][]int64{{0, 1, 1}}}, lim); err != nil {
		t.Errorf("valid batch: %v", err)
	}
	// Without a type vocabulary only type 0 passes.
	if err := Validate(&Batch{InputIDs: ok, TokenTypeIDs: [][]int64{{0, 1, 0}}}, Limits{MaxSequence: 4, Vocab: 10}); !errors.Is(err, ErrTokenTypeInRange) {
		t.Errorf("type 1 without token types: %v", err)
	}
}

func TestFillInputsPads(t *testing.T) {
	b := Batch{InputIDs: [][]int64{{5}, {6, 7, 8}, {9, 9}}, TokenTypeIDs: [][]int64{{1}, {0, 1, 1}, {1, 1}}}
	ids, mask, types := make([]int64, 9), make([]int64, 9), make([]int64, 9)
	for i := range ids {
		ids[i], mask[i], types[i] = -7, -7, -7 // stale data from an earlier chunk
	}
	FillInputs(ids, mask, types, &b, 1, 3, 3, 0)
	if want := []int64{6, 7, 8, 9, 9, 0}; !slices.Equal(ids[:6], want) {
		t.Errorf("ids %v, want %v", ids[:6], want)
	}
	if want := []int64{1, 1, 1, 1, 1, 0}; !slices.Equal(mask[:6], want) {
		t.Errorf("mask %v, want %v", mask[:6], want)
	}
	if want := []int64{0, 1, 1, 1, 1, 0}; !slices.Equal(types[:6], want) {
		t.Errorf("types %v, want %v", types[:6], want)
	}
	if Longest(&b, 0, 3) != 3 || Longest(&b, 0, 1) != 1 {
		t.Error("Longest")
	}
}

func TestWeightsRoundTripAndCorruption(t *testing.T) {
	w := NewWeightsWriter()
	f := []float32{1.5, -2, float32(math.Inf(1)), math.SmallestNonzeroFloat32}
	i8 := []int8{-128, 0, 127}
	i32 := []int32{-1 << 31, 7}
	raw := []byte("[PAD]\nhello\n")
	offF, offI8, offI32, offRaw := w.F32(f), w.I8(i8), w.I32(i32), w.Raw(raw)
	data, sum := w.Bytes()
	for _, off := range []int{offF, offI8, offI32, offRaw} {
		if off%WeightAlign != 0 || off < 64 {
			t.Fatalf("offset %d not aligned past the header", off)
		}
	}
	r, err := OpenWeights(data, len(data), sum)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.F32(offF, len(f)); !slices.Equal(got, f) {
		t.Errorf("F32 %v", got)
	}
	if got := r.I8(offI8, len(i8)); !slices.Equal(got, i8) {
		t.Errorf("I8 %v", got)
	}
	if got := r.I32(offI32, len(i32)); !slices.Equal(got, i32) {
		t.Errorf("I32 %v", got)
	}
	if got := r.Raw(offRaw, len(raw)); string(got) != string(raw) {
		t.Errorf("Raw %q", got)
	}
	if r.F32(len(data)-4, 2) != nil || !errors.Is(r.Err(), ErrCorruptWeights) {
		t.Errorf("out-of-range read: err %v", r.Err())
	}

	flipped := slices.Clone(data)
	flipped[len(flipped)/2] ^= 1
	for name, tc := range map[string]struct {
		data []byte
		size int
	}{
		"truncated": {data[:len(data)-1], len(data)},
		"bit flip":  {flipped, len(data)},
		"no header": {append(make([]byte, 8), data[8:]...), len(data)},
	} {
		if _, err := OpenWeights(tc.data, tc.size, sum); !errors.Is(err, ErrCorruptWeights) {
			t.Errorf("%s: got %v, want ErrCorruptWeights", name, err)
		}
	}
}

func TestPredictAndMeanPool(t *testing.T) {
	p := Predict([]float32{1, 3, 3}, []string{"a", "b", "c"})
	if p.Index != 1 || p.Label != "b" {
		t.Errorf("argmax %d %q, want the first of a tie", p.Index, p.Label)
	}
	var sum float64
	for _, x := range p.Probs {
		sum += float64(x)
	}
	if math.Abs(sum-1) > 1e-6 || p.Score != p.Probs[1] || p.Probs[0] >= p.Probs[1] {
		t.Errorf("probabilities %v", p.Probs)
	}
	got := MeanPool([]float32{1, 2, 3, 4, 100, 100}, 2, []int64{1, 1, 0})
	if !slices.Equal(got, []float32{2, 3}) {
		t.Errorf("MeanPool %v, want [2 3]", got)
	}
}

// TestWeightsAliasOrCopy: on a little-endian host an aligned file's
// arrays share its memory (capacity = length, so an append cannot write
// into the file); a misaligned file gives equal decoded copies.
func TestWeightsAliasOrCopy(t *testing.T) {
	w := NewWeightsWriter()
	f := []float32{1.5, -2, 3.25}
	i64 := []int64{-5, 1 << 40}
	offF, offI64 := w.F32(f), w.I64(i64)
	data, sum := w.Bytes()
	// A copy at an address 1 byte past a 64-byte boundary is misaligned
	// for every type but int8.
	buf := make([]byte, len(data)+128)
	start := 64 - int(uintptr(unsafe.Pointer(&buf[0]))%64)
	aligned, misaligned := buf[start:start+len(data)], slices.Clone(buf[:len(data)+1])[1:]
	copy(aligned, data)
	if uintptr(unsafe.Pointer(&misaligned[0]))%4 == 0 {
		t.Skip("could not make a misaligned buffer")
	}
	copy(misaligned, data)
	for _, tc := range []struct {
		name  string
		data  []byte
		alias bool
	}{{"aligned", aligned, hostLittleEndian()}, {"misaligned", misaligned, false}} {
		r, err := OpenWeights(tc.data, len(tc.data), sum)
		if err != nil {
			t.Fatal(err)
		}
		gotF, gotI := r.F32(offF, len(f)), r.I64(offI64, len(i64))
		if !slices.Equal(gotF, f) || !slices.Equal(gotI, i64) || r.Err() != nil {
			t.Errorf("%s: F32 %v, I64 %v, err %v", tc.name, gotF, gotI, r.Err())
		}
		shared := unsafe.Pointer(&gotF[0]) == unsafe.Pointer(&tc.data[offF])
		if shared != tc.alias {
			t.Errorf("%s: F32 aliases the file: %v, want %v", tc.name, shared, tc.alias)
		}
		if cap(gotF) != len(f) {
			t.Errorf("%s: cap %d, want %d", tc.name, cap(gotF), len(f))
		}
	}
}

// TestCosine: orthogonal, parallel and opposite vectors, and the zero
// vectors' convention.
func TestCosine(t *testing.T) {
	for _, c := range []struct {
		a, b []float32
		want float64
	}{
		{[]float32{1, 0}, []float32{0, 1}, 0},
		{[]float32{1, 2, 3}, []float32{2, 4, 6}, 1},
		{[]float32{1, 2, 3}, []float32{-1, -2, -3}, -1},
		{[]float32{3, 4}, []float32{4, 3}, 24.0 / 25},
		{[]float32{0, 0}, []float32{0, 0}, 1},
		{[]float32{0, 0}, []float32{1, 0}, 0},
	} {
		if got := Cosine(c.a, c.b); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("Cosine(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

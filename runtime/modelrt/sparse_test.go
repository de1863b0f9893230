package modelrt

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// spladeByDefinition is SpladePooling's computation written out: the
// activation on every masked-in token's logit (masked tokens give zeros),
// then the maximum or the sum over the tokens.
func spladeByDefinition(h SparseHead, logits []float32, vocab int, mask []int64) []float32 {
	act := func(x float32) float64 {
		y := math.Log1p(math.Max(float64(x), 0))
		if h.Activation == SparseLog1pReLU {
			y = math.Log1p(float64(float32(y)))
		}
		return y
	}
	out := make([]float32, vocab)
	for j := range vocab {
		var m, s float64
		for r := range len(logits) / vocab {
			v := 0.0
			if mask == nil || mask[r] != 0 {
				v = float64(float32(act(logits[r*vocab+j])))
			}
			m, s = math.Max(m, v), s+v
		}
		if h.Pooling == SparseSum {
			out[j] = float32(s)
		} else {
			out[j] = float32(m)
		}
	}
	return out
}

func TestSparseHeadPool(t *testing.T) {
	const vocab = 5
	logits := []float32{
		-1, 0.5, 3, -2, 0,
		2, -0.5, 1, -3, 0,
		9, 9, 9, 9, 9, // masked: must not count
		0.25, 4, -1, -1, 0,
	}
	mask := []int64{1, 1, 0, 1}
	// By hand: the maxima over rows 0, 1, 3 are 2, 4, 3, -1, 0.
	want := []float32{float32(math.Log1p(2)), float32(math.Log1p(4)), float32(math.Log1p(3)), 0, 0}
	if got := (SparseHead{}).Pool(logits, vocab, mask); !slices.Equal(got, want) {
		t.Errorf("max pool = %v, want %v", got, want)
	}
	for _, h := range []SparseHead{{}, {Pooling: SparseSum}, {Activation: SparseLog1pReLU}, {Pooling: SparseSum, Activation: SparseLog1pReLU}} {
		for _, m := range [][]int64{mask, nil, {1, 0}} {
			got, want := h.Pool(logits, vocab, m), spladeByDefinition(h, logits[:min(len(logits), vocab*lenOr(m, 4))], vocab, m)
			if !slices.Equal(got, want) {
				t.Errorf("%+v mask %v: Pool = %v, by definition %v", h, m, got, want)
			}
		}
	}
	if got := Sparsify(want); !slices.Equal(got, []SparseValue{{0, want[0]}, {1, want[1]}, {2, want[2]}}) {
		t.Errorf("Sparsify = %v", got)
	}
	if got := Sparsify(make([]float32, 3)); got == nil || len(got) != 0 {
		t.Errorf("Sparsify of zeros = %#v, want an empty list (JSON [])", got)
	}
}

func lenOr(m []int64, n int) int {
	if m == nil {
		return n
	}
	return len(m)
}

func TestSparseHeadValidate(t *testing.T) {
	for _, h := range []SparseHead{{}, {Pooling: SparseMax, Activation: SparseReLU}, {Pooling: SparseSum, Activation: SparseLog1pReLU}} {
		if err := h.Validate(); err != nil {
			t.Errorf("%+v: %v", h, err)
		}
	}
	for _, h := range []SparseHead{{Pooling: "mean"}, {Activation: "gelu"}} {
		if err := h.Validate(); !errors.Is(err, ErrBadHead) {
			t.Errorf("%+v: %v, want ErrBadHead", h, err)
		}
	}
}

package modelrt

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestEmbeddingHeadPooling checks every pooling mode on three tokens of
// width 2, the last one padding, against values worked out by hand.
func TestEmbeddingHeadPooling(t *testing.T) {
	hidden := []float32{1, -2, 3, 4, 100, 100}
	mask := []int64{1, 1, 0}
	for _, tc := range []struct {
		mode PoolingMode
		want []float32
	}{
		{PoolCLS, []float32{1, -2}},
		{PoolMax, []float32{3, 4}},
		{PoolMean, []float32{2, 1}},
		{PoolMeanSqrtLen, []float32{float32(4 / math.Sqrt2), float32(2 / math.Sqrt2)}},
		{PoolWeightedMean, []float32{float32(7.0 / 3), 2}}, // (1*1+2*3)/3, (1*-2+2*4)/3
		{PoolLastToken, []float32{3, 4}},
	} {
		h := EmbeddingHead{Pooling: []PoolingMode{tc.mode}}
		if err := h.Validate(2); err != nil {
			t.Fatal(err)
		}
		if got := h.Embed(hidden, 2, mask); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.mode, got, tc.want)
		}
	}
	// Several modes concatenate in PoolingOrder.
	h := EmbeddingHead{Pooling: []PoolingMode{PoolCLS, PoolMean}}
	if got, want := h.Embed(hidden, 2, mask), []float32{1, -2, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("cls+mean: %v, want %v", got, want)
	}
	if h.Dim(2) != 4 {
		t.Errorf("Dim %d", h.Dim(2))
	}
	// No token unmasked: mean gives zeros, max -1e9, lasttoken the first.
	none := []int64{0, 0, 0}
	for mode, want := range map[PoolingMode][]float32{PoolMean: {0, 0}, PoolMax: {-1e9, -1e9}, PoolLastToken: {1, -2}} {
		h := EmbeddingHead{Pooling: []PoolingMode{mode}}
		if got := h.Embed(hidden, 2, none); !slices.Equal(got, want) {
			t.Errorf("%s with no tokens: %v, want %v", mode, got, want)
		}
	}
	// A nil mask is every token; it must agree with MeanPool.
	h = EmbeddingHead{Pooling: []PoolingMode{PoolMean}}
	if got, want := h.Embed(hidden, 2, nil), MeanPool(hidden, 2, nil); !slices.Equal(got, want) {
		t.Errorf("nil mask: %v, MeanPool %v", got, want)
	}
}

func TestEmbeddingHeadDenseNormalize(t *testing.T) {
	h := EmbeddingHead{
		Pooling: []PoolingMode{PoolCLS},
		Dense: []Dense{
			{In: 2, Out: 2, Weight: []float32{1, 1, 2, -1}, Bias: []float32{0, 1}, Activation: ActReLU},
			{In: 2, Out: 2, Weight: []float32{1, 0, 0, 1}, Activation: ActIdentity},
		},
		Normalize: true,
	}
	if err := h.Validate(2); err != nil {
		t.Fatal(err)
	}
	// cls [1, 2]: W·x+b = [3, 1], relu [3, 1], identity, / sqrt(10).
	got := h.Embed([]float32{1, 2, 9, 9}, 2, nil)
	want := []float32{float32(3 / math.Sqrt(10)), float32(1 / math.Sqrt(10))}
	if !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
	if h.Dim(2) != 2 {
		t.Errorf("Dim %d", h.Dim(2))
	}
	// A zero vector stays zero (the norm is clamped at 1e-12).
	z := EmbeddingHead{Pooling: []PoolingMode{PoolMean}, Normalize: true}
	if got := z.Embed([]float32{0, 0}, 2, nil); !slices.Equal(got, []float32{0, 0}) {
		t.Errorf("zero vector: %v", got)
	}
	for name, bad := range map[string]EmbeddingHead{
		"no pooling":     {},
		"unknown mode":   {Pooling: []PoolingMode{"median"}},
		"repeated mode":  {Pooling: []PoolingMode{PoolMean, PoolMean}},
		"out of order":   {Pooling: []PoolingMode{PoolMean, PoolCLS}},
		"dense in":       {Pooling: []PoolingMode{PoolCLS}, Dense: []Dense{{In: 3, Out: 1, Weight: make([]float32, 3), Activation: ActTanh}}},
		"dense weights":  {Pooling: []PoolingMode{PoolCLS}, Dense: []Dense{{In: 2, Out: 2, Weight: make([]float32, 3), Activation: ActTanh}}},
		"dense bias":     {Pooling: []PoolingMode{PoolCLS}, Dense: []Dense{{In: 2, Out: 1, Weight: make([]float32, 2), Bias: []float32{1, 2}, Activation: ActTanh}}},
		"bad activation": {Pooling: []PoolingMode{PoolCLS}, Dense: []Dense{{In: 2, Out: 1, Weight: make([]float32, 2), Activation: "swish"}}},
	} {
		if err := bad.Validate(2); !errors.Is(err, ErrBadHead) {
			t.Errorf("%s: %v, want ErrBadHead", name, err)
		}
	}
}

func TestActivationsAndScores(t *testing.T) {
	for _, tc := range []struct {
		a    Activation
		x    float32
		want float64
	}{
		{ActIdentity, -1.5, -1.5}, {ActTanh, 0.5, math.Tanh(0.5)}, {ActReLU, -1, 0}, {ActReLU, 2, 2},
		{ActSigmoid, 0, 0.5}, {ActSigmoid, 2, 1 / (1 + math.Exp(-2))}, {ActGELU, 1, 0.5 * (1 + math.Erf(1/math.Sqrt2))},
	} {
		if got := tc.a.Apply(tc.x); got != float32(tc.want) {
			t.Errorf("%s(%g) = %g, want %g", tc.a, tc.x, got, tc.want)
		}
	}
	if got := Scores([]float32{0, 100}, ActSigmoid); !slices.Equal(got, []float32{0.5, 1}) {
		t.Errorf("Scores %v", got)
	}
}

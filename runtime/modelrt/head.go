package modelrt

import (
	"errors"
	"fmt"
	"math"
)

// The post-processing head of a sentence-embedding model (what the
// sentence-transformers modules after the Transformer compute): pool the
// encoder's last hidden state into one vector, run it through Dense
// layers, L2-normalise it. It is data, not code: the CLI builds an
// EmbeddingHead from the model folder, a generated package holds one as a
// literal with its Dense weights in weights.bin, and both call Embed, so
// their embeddings are bit-identical whenever their hidden states are.

// PoolingMode is one of sentence-transformers' Pooling modes.
type PoolingMode string

// The pooling modes, as 1_Pooling/config.json names them without the
// "pooling_mode_" prefix and "_tokens"/"_token" suffix.
const (
	PoolCLS          PoolingMode = "cls"           // the first token's hidden state
	PoolMax          PoolingMode = "max"           // per dimension, the maximum over the tokens
	PoolMean         PoolingMode = "mean"          // the mean over the tokens
	PoolMeanSqrtLen  PoolingMode = "mean_sqrt_len" // the sum over the tokens / sqrt(their count)
	PoolWeightedMean PoolingMode = "weightedmean"  // mean weighted by position 1, 2, ...
	PoolLastToken    PoolingMode = "lasttoken"     // the last token's hidden state
)

// PoolingOrder is the order in which sentence-transformers concatenates
// the vectors of several enabled modes.
var PoolingOrder = []PoolingMode{PoolCLS, PoolMax, PoolMean, PoolMeanSqrtLen, PoolWeightedMean, PoolLastToken}

// Activation is an elementwise function after a Dense layer or on a
// classifier's logits.
type Activation string

// The activations sentence-transformers' Dense and CrossEncoder use
// (torch.nn.Tanh, Identity, ReLU, Sigmoid, GELU).
const (
	ActIdentity Activation = "identity"
	ActTanh     Activation = "tanh"
	ActReLU     Activation = "relu"
	ActSigmoid  Activation = "sigmoid"
	ActGELU     Activation = "gelu" // erf form, torch.nn.GELU()
)

// ErrBadHead is the cause of an EmbeddingHead that does not fit its model.
var ErrBadHead = errors.New("invalid embedding head")

// Apply computes the activation of x in float64, rounded to float32.
// An unknown activation is the identity (Validate rejects it).
func (a Activation) Apply(x float32) float32 {
	v := float64(x)
	switch a {
	case ActTanh:
		return float32(math.Tanh(v))
	case ActReLU:
		return float32(math.Max(v, 0))
	case ActSigmoid:
		return float32(1 / (1 + math.Exp(-v)))
	case ActGELU:
		return float32(0.5 * v * (1 + math.Erf(v/math.Sqrt2)))
	}
	return x
}

func (a Activation) valid() bool {
	switch a {
	case ActIdentity, ActTanh, ActReLU, ActSigmoid, ActGELU:
		return true
	}
	return false
}

// Dense is torch.nn.Linear followed by an activation: y = act(W·x + b).
type Dense struct {
	In, Out    int
	Weight     []float32 // [Out, In] row-major, torch's layout
	Bias       []float32 // Out values, or nil for none
	Activation Activation
}

// EmbeddingHead turns an encoder's last hidden state into a sentence
// embedding: Pooling (one or more modes, concatenated in PoolingOrder),
// then each Dense in order, then, if Normalize, division by the L2 norm.
type EmbeddingHead struct {
	Pooling   []PoolingMode
	Dense     []Dense
	Normalize bool
}

// Dim is the length of the embeddings for hidden states width wide.
func (h *EmbeddingHead) Dim(width int) int {
	if len(h.Dense) > 0 {
		return h.Dense[len(h.Dense)-1].Out
	}
	return width * len(h.Pooling)
}

// Validate checks that h can run on hidden states width wide: known modes
// in PoolingOrder without repeats, Dense shapes that chain, known
// activations. Errors wrap ErrBadHead.
func (h *EmbeddingHead) Validate(width int) error {
	if len(h.Pooling) == 0 {
		return fmt.Errorf("%w: no pooling mode", ErrBadHead)
	}
	next := 0
	for _, m := range h.Pooling {
		i := indexOf(PoolingOrder, m)
		switch {
		case i < 0:
			return fmt.Errorf("%w: unknown pooling mode %q", ErrBadHead, m)
		case i < next:
			return fmt.Errorf("%w: pooling mode %q repeated or out of sentence-transformers' order %v", ErrBadHead, m, PoolingOrder)
		}
		next = i + 1
	}
	dim := width * len(h.Pooling)
	for i, d := range h.Dense {
		switch {
		case d.In != dim:
			return fmt.Errorf("%w: Dense %d takes %d features, the vector before it has %d", ErrBadHead, i, d.In, dim)
		case d.Out <= 0 || len(d.Weight) != d.In*d.Out:
			return fmt.Errorf("%w: Dense %d: %d weights for %d x %d", ErrBadHead, i, len(d.Weight), d.Out, d.In)
		case d.Bias != nil && len(d.Bias) != d.Out:
			return fmt.Errorf("%w: Dense %d: %d biases for %d outputs", ErrBadHead, i, len(d.Bias), d.Out)
		case !d.Activation.valid():
			return fmt.Errorf("%w: Dense %d: unknown activation %q", ErrBadHead, i, d.Activation)
		}
		dim = d.Out
	}
	return nil
}

func indexOf[T comparable](list []T, v T) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return -1
}

// Embed computes the embedding of one sequence: hidden holds its len(mask)
// tokens' hidden states, width values each, and mask its attention mask
// (nil: every token). Sums run in float64 in token order, so the result
// depends only on the inputs' bits.
func (h *EmbeddingHead) Embed(hidden []float32, width int, mask []int64) []float32 {
	rows := len(hidden) / width
	if mask == nil {
		mask = make([]int64, rows)
		for i := range mask {
			mask[i] = 1
		}
	}
	rows = min(rows, len(mask))
	row := func(r int) []float32 { return hidden[r*width : (r+1)*width] }
	v := make([]float32, 0, width*len(h.Pooling))
	for _, m := range h.Pooling {
		switch m {
		case PoolCLS:
			v = append(v, row(0)...)
		case PoolMax:
			v = append(v, maxPool(hidden, width, rows, mask)...)
		case PoolMean, PoolMeanSqrtLen, PoolWeightedMean:
			v = append(v, sumPool(hidden, width, rows, mask, m)...)
		case PoolLastToken:
			last := 0
			for r := rows - 1; r >= 0; r-- {
				if mask[r] != 0 {
					last = r
					break
				}
			}
			v = append(v, row(last)...)
		}
	}
	for i := range h.Dense {
		v = h.Dense[i].apply(v)
	}
	if h.Normalize {
		normalize(v)
	}
	return v
}

// maxPool is the maximum over the unmasked tokens; masked tokens count as
// -1e9, as sentence-transformers sets them.
func maxPool(hidden []float32, width, rows int, mask []int64) []float32 {
	out := make([]float32, width)
	for j := range out {
		out[j] = -1e9
	}
	for r := range rows {
		if mask[r] == 0 {
			continue
		}
		for j, x := range hidden[r*width : (r+1)*width] {
			out[j] = max(out[j], x)
		}
	}
	return out
}

// sumPool is the masked (for weightedmean, position-weighted) sum divided
// by the count (mean), its square root (mean_sqrt_len) or the weights' sum,
// each clamped below at 1e-9 as sentence-transformers does.
func sumPool(hidden []float32, width, rows int, mask []int64, m PoolingMode) []float32 {
	sum := make([]float64, width)
	var weights float64
	for r := range rows {
		if mask[r] == 0 {
			continue
		}
		w := 1.0
		if m == PoolWeightedMean {
			w = float64(r + 1)
		}
		weights += w
		for j, x := range hidden[r*width : (r+1)*width] {
			sum[j] += w * float64(x)
		}
	}
	div := math.Max(weights, 1e-9)
	if m == PoolMeanSqrtLen {
		div = math.Sqrt(div)
	}
	out := make([]float32, width)
	for j, s := range sum {
		out[j] = float32(s / div)
	}
	return out
}

func (d *Dense) apply(x []float32) []float32 {
	out := make([]float32, d.Out)
	for o := range out {
		var s float64
		for i, w := range d.Weight[o*d.In : (o+1)*d.In] {
			s += float64(w) * float64(x[i])
		}
		if d.Bias != nil {
			s += float64(d.Bias[o])
		}
		out[o] = d.Activation.Apply(float32(s))
	}
	return out
}

// Cosine is the cosine similarity of a and b (of equal length): the dot
// product and the norms summed in float64 in order, the quotient clamped
// to [-1, 1] against rounding. Two all-zero vectors (a sparse encoder's
// for a text of no weight) are similar, 1, and an all-zero vector and
// another are not, 0, as simsimd (TEI's) has them: the cosine itself is
// undefined there.
func Cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i, x := range a {
		x, y := float64(x), float64(b[i])
		ab += x * y
		aa += x * x
		bb += y * y
	}
	switch {
	case aa == 0 && bb == 0:
		return 1
	case aa == 0 || bb == 0:
		return 0
	}
	return max(-1, min(1, ab/(math.Sqrt(aa)*math.Sqrt(bb))))
}

// normalize divides v by its L2 norm in place (torch.nn.functional.normalize:
// the norm clamped below at 1e-12).
func normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	n := math.Max(math.Sqrt(ss), 1e-12)
	for i, x := range v {
		v[i] = float32(float64(x) / n)
	}
}

// Scores applies act to each logit: a cross-encoder's relevance scores
// (sigmoid of its single logit) or a multi-label classifier's per-label
// probabilities.
func Scores(logits []float32, act Activation) []float32 {
	out := make([]float32, len(logits))
	for i, x := range logits {
		out[i] = act.Apply(x)
	}
	return out
}

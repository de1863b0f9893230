package hf

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// WeightSource supplies a model's parameters by their `transformers` names.
type WeightSource interface {
	// Weight returns the float32 parameter name (e.g.
	// "bert.encoder.layer.0.attention.self.query.weight") in the layout
	// PyTorch stores it (Linear weights [out, in]). shape is what the
	// config implies; a generating source makes that shape, a stored one
	// returns what it holds and Build checks it. A source without the
	// parameter returns an error wrapping compiler.ErrMissingTensor.
	Weight(name string, shape []int64) (*compiler.Tensor, error)
}

// SourceFile names the file behind a WeightSource, for error messages
// ("" for one with no file).
func SourceFile(w WeightSource) string {
	if f, ok := w.(interface{ File() string }); ok {
		return f.File()
	}
	return ""
}

// RandomWeights returns a WeightSource of deterministic pseudo-random
// parameters in the shapes asked for, for benchmarks and tests that need a
// real-sized model without files. Each tensor depends only on seed and its
// name, not on the order of requests. Values follow the `transformers`
// initialisation scale (normal, std 0.02) with LayerNorm weights near 1;
// biases are small but non-zero so that bias paths are exercised.
func RandomWeights(seed uint64) WeightSource { return randomWeights{seed: seed} }

type randomWeights struct{ seed uint64 }

func (r randomWeights) Weight(name string, shape []int64) (*compiler.Tensor, error) {
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(r.seed, h.Sum64()))
	t := compiler.NewTensor(compiler.Float32, shape...)
	mean, std := 0.0, 0.02
	isLayerNorm := strings.Contains(name, "LayerNorm") || strings.Contains(name, "layer_norm")
	switch {
	case isLayerNorm && strings.HasSuffix(name, ".weight"):
		mean = 1
	case strings.HasSuffix(name, ".bias"):
		std = 0.002
	}
	for i := range t.F32 {
		t.F32[i] = float32(mean + std*rng.NormFloat64())
	}
	return t, nil
}

// checkWeight verifies a parameter's shape and values: the graph must be
// built from exactly the tensors the config implies, and a NaN or Inf in a
// weight would silently poison every result and every calibration range.
func checkWeight(file, name string, t *compiler.Tensor, want []int64) error {
	if t == nil {
		return compiler.BadInput(file, name, fmt.Errorf("%w: the weight source returned none", compiler.ErrMissingTensor))
	}
	if !slices.Equal(t.Shape, want) {
		return compiler.BadInput(file, name,
			fmt.Errorf("%w: got %v, want %v (implied by config.json)", compiler.ErrShapeMismatch, t.Shape, want))
	}
	if t.DType != compiler.Float32 || t.Check() != nil {
		return compiler.BadInput(file, name, fmt.Errorf("%w: got %s, want f32", compiler.ErrDTypeMismatch, t.DType))
	}
	for i, v := range t.F32 {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return compiler.BadInput(file, name,
				fmt.Errorf("%w: element %d is %v", compiler.ErrNonFinite, i, v))
		}
	}
	return nil
}

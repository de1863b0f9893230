package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/sqc-dev/sqc/internal/lnstats"
)

// layerNorm is ONNX LayerNormalization (opset 17): normalise over the dims
// from axis on, then scale and shift. Outputs Y and, when asked for, Mean
// and InvStdDev (float32, shape X.shape[:axis] followed by ones). Statistics
// are computed in float64, in internal/lnstats's order; float32 inputs are
// then normalised in float32 as lnstats defines (the engine's bits), wider
// ones in float64.
func layerNorm(c *call) ([]*Tensor, error) {
	x, scale := c.in[0], c.in[1]
	var bias *Tensor
	if len(c.in) > 2 {
		bias = c.in[2]
	}
	if !IsFloat(x.DType) {
		return nil, unsupported(x.DType)
	}
	for _, t := range []*Tensor{scale, bias} {
		if t != nil && t.DType != x.DType {
			return nil, fmt.Errorf("%w: LayerNormalization of %s with %s scale or bias", ErrDTypeMismatch, x.DType, t.DType)
		}
	}
	if st := c.node.Attrs.Int("stash_type", 1); st != 1 {
		return nil, fmt.Errorf("%w: LayerNormalization stash_type %d (only 1, float32)", ErrUnsupportedOp, st)
	}
	rank := len(x.Shape)
	axis, err := normAxis(c.node.Attrs.Int("axis", -1), rank)
	if err != nil {
		return nil, err
	}
	eps := float64(c.node.Attrs.Float("epsilon", 1e-5))
	normShape := x.Shape[axis:]
	n := int(NumElements(normShape))
	rows := int(NumElements(x.Shape[:axis]))

	// Scale and bias as float64 over either one row (the usual case) or
	// the whole input, whichever they broadcast to.
	params := func(t *Tensor) ([]float64, error) {
		if t == nil {
			return nil, nil
		}
		if e, err := expandTo(t, normShape); err == nil {
			return Float64s(e), nil
		}
		e, err := expandTo(t, x.Shape)
		if err != nil {
			return nil, fmt.Errorf("LayerNormalization scale or bias: %w", err)
		}
		return Float64s(e), nil
	}
	sc, err := params(scale)
	if err != nil {
		return nil, err
	}
	bs, err := params(bias)
	if err != nil {
		return nil, err
	}
	xs := Float64s(x)
	y := make([]float64, len(xs))
	means := make([]float32, rows)
	invs := make([]float32, rows)
	for r := range rows {
		row := xs[r*n : (r+1)*n]
		mean, inv := lnstats.Stats(row, eps) // the engine's order (runtime/nn LayerNorm)
		means[r], invs[r] = float32(mean), float32(inv)
		off := 0
		if len(sc) > n {
			off = r * n
		}
		boff := 0
		if len(bs) > n {
			boff = r * n
		}
		out := y[r*n : (r+1)*n]
		if x.DType == Float32 {
			var rowBias []float64
			if bs != nil {
				rowBias = bs[boff:]
			}
			normalizeRow32(out, row, mean, inv, sc[off:], rowBias)
			continue
		}
		for i, v := range row {
			o := (v - mean) * inv * sc[off+i]
			if bs != nil {
				o += bs[boff+i]
			}
			out[i] = o
		}
	}
	yt, _ := Cast(FromSlice(slices.Clone(x.Shape), y), x.DType)
	statShape := slices.Clone(x.Shape)
	for i := axis; i < rank; i++ {
		statShape[i] = 1
	}
	return []*Tensor{yt, FromSlice(statShape, means), FromSlice(slices.Clone(statShape), invs)}, nil
}

// normalizeRow32 is one float32 row of layerNorm in internal/lnstats's
// float32 order, held in float64 (exact) until the output's Cast: the
// row's scale sc and bias bs (nil: none), from their column 0.
func normalizeRow32(out, row []float64, mean, inv float64, sc, bs []float64) {
	st := lnstats.NewRow32(mean, inv)
	for i, v := range row {
		z := st.Normalize(float32(v))
		if bs == nil {
			out[i] = float64(lnstats.Scale(z, float32(sc[i])))
		} else {
			out[i] = float64(lnstats.Affine(z, float32(sc[i]), float32(bs[i])))
		}
	}
}

// softmax is ONNX Softmax. From opset 13 it normalises along one axis
// (default -1); before, it flattens the input to 2-D at axis (default 1) and
// normalises each row of the flattened view. Opset 0 (unset) means the
// newer form.
func softmax(c *call) ([]*Tensor, error) {
	x := c.in[0]
	if !IsFloat(x.DType) {
		return nil, unsupported(x.DType)
	}
	rank := len(x.Shape)
	legacy := c.opset > 0 && c.opset < 13
	def := int64(-1)
	if legacy {
		def = 1
	}
	a := c.node.Attrs.Int("axis", def)
	var outer, dim, inner int
	if rank == 0 {
		outer, dim, inner = 1, 1, 1
	} else if legacy {
		// Axis may equal rank in the coerced form (an empty second factor).
		if a < 0 {
			a += int64(rank)
		}
		if a < 0 || a > int64(rank) {
			return nil, fmt.Errorf("%w: axis %d out of range for rank %d", ErrShapeMismatch, c.node.Attrs.Int("axis", def), rank)
		}
		outer = int(NumElements(x.Shape[:a]))
		dim = int(NumElements(x.Shape[a:]))
		inner = 1
	} else {
		axis, err := normAxis(a, rank)
		if err != nil {
			return nil, err
		}
		outer = int(NumElements(x.Shape[:axis]))
		dim = int(x.Shape[axis])
		inner = int(NumElements(x.Shape[axis+1:]))
	}
	xs := Float64s(x)
	y := make([]float64, len(xs))
	e := make([]float64, dim)
	for o := range outer {
		for in := range inner {
			base := o*dim*inner + in
			m := math.Inf(-1)
			for k := range dim {
				m = math.Max(m, xs[base+k*inner])
			}
			var sum float64
			for k := range dim {
				e[k] = math.Exp(xs[base+k*inner] - m)
				sum += e[k]
			}
			for k := range dim {
				y[base+k*inner] = e[k] / sum
			}
		}
	}
	return one(Cast(FromSlice(slices.Clone(x.Shape), y), x.DType))
}

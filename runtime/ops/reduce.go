package ops

import (
	"slices"
)

// reduce returns the kernel of ReduceSum or ReduceMean. Axes come from the
// second input (ReduceSum from opset 13, ReduceMean from 18) or the "axes"
// attribute; no axes means all of them unless noop_with_empty_axes=1.
// Floats accumulate in float64 and round once.
func reduce(mean bool) kernelFunc {
	return func(c *call) ([]*Tensor, error) {
		x := c.in[0]
		axes, _, err := axesOperand(c)
		if err != nil {
			return nil, err
		}
		if len(axes) == 0 && c.node.Attrs.Int("noop_with_empty_axes", 0) != 0 {
			return []*Tensor{x}, nil
		}
		rank := len(x.Shape)
		var ax []int
		if len(axes) == 0 {
			for i := range rank {
				ax = append(ax, i)
			}
		} else if ax, err = normAxes(axes, rank); err != nil {
			return nil, err
		}
		keep := c.node.Attrs.Int("keepdims", 1) != 0

		// Output index of every input element: strides of the kept shape,
		// 0 on reduced axes.
		kept := slices.Clone(x.Shape)
		count := int64(1)
		for _, a := range ax {
			count *= kept[a]
			kept[a] = 1
		}
		outN := int(NumElements(kept))
		outStr := stridesOf(kept)
		for _, a := range ax {
			outStr[a] = 0
		}
		var shape []int64
		if keep {
			shape = kept
		} else {
			shape = []int64{}
			for i, d := range x.Shape {
				if !slices.Contains(ax, i) {
					shape = append(shape, d)
				}
			}
		}
		switch x.DType {
		case Float32, Float64:
			acc := make([]float64, outN)
			vals := Float64s(x)
			walk(x.Shape, outStr, func(i, o int) { acc[o] += vals[i] })
			if mean {
				for o := range acc {
					acc[o] /= float64(count)
				}
			}
			r, _ := Cast(FromSlice(shape, acc), x.DType)
			return []*Tensor{r}, nil
		case Int64, Int32, Int8, Uint8:
			acc := make([]int64, outN)
			vals, _ := intValues(x, "")
			walk(x.Shape, outStr, func(i, o int) { acc[o] += vals[i] })
			if mean && count > 0 {
				for o := range acc {
					acc[o] /= count
				}
			}
			r, _ := Cast(FromSlice(shape, acc), x.DType)
			return []*Tensor{r}, nil
		}
		return nil, unsupported(x.DType)
	}
}

// walk visits every element of a tensor of shape in row-major order, with
// its flat index i and the index o = sum(pos[d]*str[d]).
func walk(shape []int64, str []int, f func(i, o int)) {
	n := int(NumElements(shape))
	if n == 0 {
		return
	}
	rank := len(shape)
	if rank == 0 {
		f(0, 0)
		return
	}
	pos := make([]int64, rank)
	o := 0
	last, lastStr := int(shape[rank-1]), str[rank-1]
	for i := 0; i < n; i += last {
		for j := range last {
			f(i+j, o+j*lastStr)
		}
		for d := rank - 2; d >= 0; d-- {
			pos[d]++
			o += str[d]
			if pos[d] < shape[d] {
				break
			}
			o -= int(pos[d]) * str[d]
			pos[d] = 0
		}
	}
}

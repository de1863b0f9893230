package ops

import (
	"fmt"
	"slices"
)

// BroadcastShapes is numpy's multidirectional broadcasting: shapes are
// right-aligned, and each dimension pair must be equal or contain a 1.
func BroadcastShapes(shapes ...[]int64) ([]int64, error) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int64, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			o := &out[off+i]
			switch {
			case d == *o || d == 1:
			case *o == 1:
				*o = d
			default:
				return nil, fmt.Errorf("%w: shapes %v are not broadcastable", ErrShapeMismatch, shapes)
			}
		}
	}
	return out, nil
}

// BroadcastIndex returns, for every element of out (in row-major order), the
// flat index of the element of a tensor of shape in that broadcasting maps
// onto it. in must broadcast to out.
func BroadcastIndex(in, out []int64) []int {
	n := int(NumElements(out))
	idx := make([]int, n)
	if n == 0 {
		return idx
	}
	inN := int(NumElements(in))
	switch {
	case inN == 1:
		return idx // all zero
	case inN == n:
		// Same element count and broadcastable means only 1s differ.
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	// Strides of in, aligned to out's rank, 0 where in is broadcast.
	rank := len(out)
	inStr := make([]int, rank)
	s := stridesOf(in)
	off := rank - len(in)
	for i := range in {
		if in[i] != 1 {
			inStr[off+i] = s[i]
		}
	}
	// Odometer over all dims but the last, inner loop over the last.
	last := int(out[rank-1])
	lastStr := inStr[rank-1]
	pos := make([]int64, rank)
	base := 0
	for o := 0; o < n; o += last {
		for j := 0; j < last; j++ {
			idx[o+j] = base + j*lastStr
		}
		for d := rank - 2; d >= 0; d-- {
			pos[d]++
			base += inStr[d]
			if pos[d] < out[d] {
				break
			}
			base -= int(pos[d]) * inStr[d]
			pos[d] = 0
		}
	}
	return idx
}

// binaryApply broadcasts a and b (both of Go type T) and applies f to every
// element pair, producing a tensor of Go type R.
func binaryApply[T, R elem](a, b *Tensor, f func(x, y T) R) (*Tensor, error) {
	shape, err := BroadcastShapes(a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	n, err := CheckedElements(shape)
	if err != nil {
		return nil, err
	}
	av, bv := elems[T](a), elems[T](b)
	r := make([]R, n)
	switch {
	case len(av) == n && len(bv) == n && slices.Equal(a.Shape, b.Shape):
		bv = bv[:len(av)]
		for i := range r {
			r[i] = f(av[i], bv[i])
		}
	case len(av) == n && len(bv) == 1:
		y := bv[0]
		for i := range r {
			r[i] = f(av[i], y)
		}
	case len(bv) == n && len(av) == 1:
		x := av[0]
		for i := range r {
			r[i] = f(x, bv[i])
		}
	case len(av) == n && len(bv) > 0 && isSuffix(b.Shape, shape):
		// A bias or scale along the trailing dims: repeat b per row.
		for o := 0; o < n; o += len(bv) {
			row, ar := r[o:o+len(bv)], av[o:o+len(bv)]
			for i, y := range bv {
				row[i] = f(ar[i], y)
			}
		}
	case len(bv) == n && len(av) > 0 && isSuffix(a.Shape, shape):
		for o := 0; o < n; o += len(av) {
			row, br := r[o:o+len(av)], bv[o:o+len(av)]
			for i, x := range av {
				row[i] = f(x, br[i])
			}
		}
	default:
		ia, ib := BroadcastIndex(a.Shape, shape), BroadcastIndex(b.Shape, shape)
		for i := range r {
			r[i] = f(av[ia[i]], bv[ib[i]])
		}
	}
	return FromSlice(shape, r), nil
}

// unaryApply maps f over t's elements (Go type T) into a new tensor of Go
// type R with the same shape.
func unaryApply[T, R elem](t *Tensor, f func(T) R) *Tensor {
	s := elems[T](t)
	r := make([]R, len(s))
	for i, v := range s {
		r[i] = f(v)
	}
	return FromSlice(slices.Clone(t.Shape), r)
}

// expandTo broadcasts t unidirectionally to shape (used for Expand, Where
// and LayerNormalization's scale and bias).
func expandTo(t *Tensor, shape []int64) (*Tensor, error) {
	got, err := BroadcastShapes(t.Shape, shape)
	if err != nil || !slices.Equal(got, shape) {
		return nil, fmt.Errorf("%w: %v does not broadcast to %v", ErrShapeMismatch, t.Shape, shape)
	}
	if _, err := CheckedElements(shape); err != nil {
		return nil, err
	}
	return take(t, slices.Clone(shape), BroadcastIndex(t.Shape, shape)), nil
}

// isSuffix reports whether in, without leading 1s, equals the trailing dims
// of out: then in repeats whole every NumElements(in) elements of out.
func isSuffix(in, out []int64) bool {
	for len(in) > 0 && in[0] == 1 {
		in = in[1:]
	}
	return len(in) <= len(out) && slices.Equal(in, out[len(out)-len(in):])
}

package qgemm

import (
	"errors"
	"fmt"
)

// ErrInvalidArgument is wrapped by every error this package returns for a
// bad shape, stride, buffer length or option; the message says which.
var ErrInvalidArgument = errors.New("qgemm: invalid argument")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

// PackB packs the weights W, given row-major as K x N (w[k*n+j] = W[k][j],
// the ONNX MatMul layout), into the blocked layout of the package comment
// and computes the column sums.
func PackB(w []int8, k, n int) (*PackedB, error) {
	if err := checkPackArgs("PackB", len(w), k, n); err != nil {
		return nil, err
	}
	return packB(k, n, func(kk, j int) int8 { return w[kk*n+j] }), nil
}

// PackBTransposed packs weights given row-major as N x K (wt[j*k+kk] =
// W[kk][j], the layout of a PyTorch Linear weight or ONNX Gemm with
// transB=1).
func PackBTransposed(wt []int8, n, k int) (*PackedB, error) {
	if err := checkPackArgs("PackBTransposed", len(wt), k, n); err != nil {
		return nil, err
	}
	return packB(k, n, func(kk, j int) int8 { return wt[j*k+kk] }), nil
}

func checkPackArgs(fn string, have, k, n int) error {
	if k < 1 || n < 1 {
		return invalid("%s: shape K=%d, N=%d: both must be >= 1", fn, k, n)
	}
	if have < k*n {
		return invalid("%s: weights have %d elements, K*N = %d*%d = %d", fn, have, k, n, k*n)
	}
	return nil
}

// packB builds the PackedB of the K x N matrix whose element (kk, j) is
// at(kk, j). It walks the destination in order, so the writes stream.
func packB(k, n int, at func(kk, j int) int8) *PackedB {
	kp, np := RoundUp(k, KBlock), RoundUp(n, NBlock)
	p := &PackedB{
		K: k, N: n, Kp: kp, Np: np,
		Data:   make([]int8, np*kp),
		ColSum: make([]int32, np),
	}
	for nb := 0; nb < np/NBlock; nb++ {
		strip := p.Data[nb*kp*NBlock : (nb+1)*kp*NBlock]
		for kk := 0; kk < k; kk++ {
			// Row kk/4 of the strip, byte kk%4 of each column's group.
			row := strip[(kk/4)*NBlock*4:]
			for c := 0; c < NBlock; c++ {
				j := nb*NBlock + c
				if j >= n {
					break
				}
				v := at(kk, j)
				row[c*4+kk%4] = v
				p.ColSum[j] += int32(v)
			}
		}
	}
	return p
}

// Validate checks that p is a well-formed packed matrix: positive shape,
// padded sizes that match it, and enough data.
func (p *PackedB) Validate() error {
	switch {
	case p == nil:
		return invalid("packed B is nil")
	case p.K < 1 || p.N < 1:
		return invalid("packed B has shape K=%d, N=%d", p.K, p.N)
	case p.Kp != RoundUp(p.K, KBlock) || p.Np != RoundUp(p.N, NBlock):
		return invalid("packed B has Kp=%d, Np=%d for K=%d, N=%d (want %d, %d)",
			p.Kp, p.Np, p.K, p.N, RoundUp(p.K, KBlock), RoundUp(p.N, NBlock))
	case len(p.Data) < p.Np*p.Kp:
		return invalid("packed B has %d data bytes, want Np*Kp = %d", len(p.Data), p.Np*p.Kp)
	}
	return nil
}

package ops

import (
	"fmt"
	"slices"
)

// matmul is ONNX MatMul (numpy matmul): 1-D operands are promoted to a row
// (a) or column (b) and the added dim removed again; leading batch dims
// broadcast.
func matmul(c *call) ([]*Tensor, error) {
	a, b := c.in[0], c.in[1]
	if err := sameDType(a, b); err != nil {
		return nil, err
	}
	if a.DType == Bool {
		return nil, unsupported(a.DType)
	}
	if len(a.Shape) == 0 || len(b.Shape) == 0 {
		return nil, fmt.Errorf("%w: MatMul of a scalar (%v x %v)", ErrShapeMismatch, a.Shape, b.Shape)
	}
	as, bs := a.Shape, b.Shape
	if len(as) == 1 {
		as = []int64{1, as[0]}
	}
	if len(bs) == 1 {
		bs = []int64{bs[0], 1}
	}
	m, k := as[len(as)-2], as[len(as)-1]
	kb, n := bs[len(bs)-2], bs[len(bs)-1]
	if k != kb {
		return nil, fmt.Errorf("%w: MatMul %v x %v: inner dims %d and %d differ", ErrShapeMismatch, a.Shape, b.Shape, k, kb)
	}
	aBatch, bBatch := as[:len(as)-2], bs[:len(bs)-2]
	batch, err := BroadcastShapes(aBatch, bBatch)
	if err != nil {
		return nil, fmt.Errorf("MatMul %v x %v: %w", a.Shape, b.Shape, err)
	}
	shape := slices.Clone(batch)
	if len(a.Shape) > 1 {
		shape = append(shape, m)
	}
	if len(b.Shape) > 1 {
		shape = append(shape, n)
	}
	if _, err := CheckedElements(append(slices.Clone(batch), m, n)); err != nil {
		return nil, err
	}
	ia, ib := BroadcastIndex(aBatch, batch), BroadcastIndex(bBatch, batch)
	out := NewTensor(a.DType, shape...)
	M, N, K := int(m), int(n), int(k)
	if len(bBatch) == 0 && len(ia) > 0 {
		// A weight matrix applied to every row: one tall product tiles
		// better than a batch of short ones. a and out are contiguous in
		// batch order, so this only reinterprets them.
		M *= len(ia)
		ia, ib = []int{0}, []int{0}
	}
	switch a.DType {
	case Float32:
		jobs := make([]gemmJob, len(ia))
		for i := range jobs {
			jobs[i] = gemmJob{
				a: a.F32[ia[i]*M*K : (ia[i]+1)*M*K],
				b: b.F32[ib[i]*K*N : (ib[i]+1)*K*N],
				c: out.F32[i*M*N : (i+1)*M*N],
			}
		}
		if err := sgemmBatch(jobs, M, N, K, c.threads); err != nil {
			return nil, err
		}
	case Float64:
		batchedNaive(a.F64, b.F64, out.F64, ia, ib, M, N, K)
	case Int64:
		batchedNaive(a.I64, b.I64, out.I64, ia, ib, M, N, K)
	case Int32:
		batchedNaive(a.I32, b.I32, out.I32, ia, ib, M, N, K)
	case Int8:
		batchedNaive(a.I8, b.I8, out.I8, ia, ib, M, N, K)
	case Uint8:
		batchedNaive(a.U8, b.U8, out.U8, ia, ib, M, N, K)
	}
	return []*Tensor{out}, nil
}

func batchedNaive[T number](a, b, c []T, ia, ib []int, m, n, k int) {
	for i := range ia {
		gemmNaive(a[ia[i]*m*k:(ia[i]+1)*m*k], b[ib[i]*k*n:(ib[i]+1)*k*n], c[i*m*n:(i+1)*m*n], m, n, k)
	}
}

// product2D is x·w for a 2-D x (m×k) and w (k×n) of the same dtype.
func product2D(x, w *Tensor, threads int) (*Tensor, error) {
	m, k, n := int(x.Shape[0]), int(x.Shape[1]), int(w.Shape[1])
	if _, err := CheckedElements([]int64{int64(m), int64(n)}); err != nil {
		return nil, err
	}
	out := NewTensor(x.DType, int64(m), int64(n))
	switch x.DType {
	case Float32:
		if err := sgemmBatch([]gemmJob{{x.F32, w.F32, out.F32}}, m, n, k, threads); err != nil {
			return nil, err
		}
	case Float64:
		gemmNaive(x.F64, w.F64, out.F64, m, n, k)
	case Int64:
		gemmNaive(x.I64, w.I64, out.I64, m, n, k)
	case Int32:
		gemmNaive(x.I32, w.I32, out.I32, m, n, k)
	default:
		return nil, unsupported(x.DType)
	}
	return out, nil
}

// transpose2D returns the transpose of a 2-D tensor.
func transpose2D(t *Tensor) *Tensor {
	r, c := int(t.Shape[0]), int(t.Shape[1])
	idx := make([]int, r*c)
	for i := range c {
		for j := range r {
			idx[i*r+j] = j*c + i
		}
	}
	return take(t, []int64{int64(c), int64(r)}, idx)
}

// gemm is ONNX Gemm: Y = alpha·A'·B' + beta·C, A' and B' optionally
// transposed, C (optional) broadcast to M×N.
func gemm(c *call) ([]*Tensor, error) {
	a, b := c.in[0], c.in[1]
	var bias *Tensor
	if len(c.in) > 2 {
		bias = c.in[2]
	}
	if err := sameDType(a, b); err != nil {
		return nil, err
	}
	if bias != nil {
		if err := sameDType(a, bias); err != nil {
			return nil, err
		}
	}
	if len(a.Shape) != 2 || len(b.Shape) != 2 {
		return nil, fmt.Errorf("%w: Gemm needs 2-D A and B, got %v and %v", ErrShapeMismatch, a.Shape, b.Shape)
	}
	if c.node.Attrs.Int("transA", 0) != 0 {
		a = transpose2D(a)
	}
	if c.node.Attrs.Int("transB", 0) != 0 {
		b = transpose2D(b)
	}
	if a.Shape[1] != b.Shape[0] {
		return nil, fmt.Errorf("%w: Gemm A' %v x B' %v", ErrShapeMismatch, a.Shape, b.Shape)
	}
	y, err := product2D(a, b, c.threads)
	if err != nil {
		return nil, err
	}
	alpha, beta := c.node.Attrs.Float("alpha", 1), c.node.Attrs.Float("beta", 1)
	if bias == nil || beta == 0 {
		bias = nil
	} else if bias, err = expandTo(bias, y.Shape); err != nil {
		return nil, fmt.Errorf("Gemm C: %w", err)
	}
	switch y.DType {
	case Float32:
		scaleAdd(y.F32, bias, alpha, beta, elems[float32])
	case Float64:
		scaleAdd(y.F64, bias, float64(alpha), float64(beta), elems[float64])
	case Int64:
		scaleAdd(y.I64, bias, int64(alpha), int64(beta), elems[int64])
	case Int32:
		scaleAdd(y.I32, bias, int32(alpha), int32(beta), elems[int32])
	}
	return []*Tensor{y}, nil
}

// scaleAdd sets y = alpha*y + beta*c in T's precision, skipping the
// multiplications by 1 so that the common alpha = beta = 1 is a plain add,
// exactly as PyTorch's addmm rounds it.
func scaleAdd[T number](y []T, c *Tensor, alpha, beta T, data func(*Tensor) []T) {
	if alpha != 1 {
		for i := range y {
			y[i] *= alpha
		}
	}
	if c == nil {
		return
	}
	cv := data(c)[:len(y)]
	if beta == 1 {
		for i := range y {
			y[i] += cv[i]
		}
		return
	}
	for i := range y {
		y[i] += beta * cv[i]
	}
}

// linear is sqc's canonical Linear: y = x·W + b with x [..., in], W
// [in, out] (already transposed from PyTorch's [out, in]) and optional
// b [out].
func linear(c *call) ([]*Tensor, error) {
	x, w := c.in[0], c.in[1]
	var bias *Tensor
	if len(c.in) > 2 {
		bias = c.in[2]
	}
	if err := sameDType(x, w); err != nil {
		return nil, err
	}
	if len(x.Shape) == 0 || len(w.Shape) != 2 || x.Shape[len(x.Shape)-1] != w.Shape[0] {
		return nil, fmt.Errorf("%w: Linear x %v with W %v (want x [..., in], W [in, out])", ErrShapeMismatch, x.Shape, w.Shape)
	}
	in, outDim := x.Shape[len(x.Shape)-1], w.Shape[1]
	if bias != nil {
		if err := sameDType(x, bias); err != nil {
			return nil, err
		}
		if bias.Len() != int(outDim) || len(bias.Shape) != 1 {
			return nil, fmt.Errorf("%w: Linear bias %v for %d outputs", ErrShapeMismatch, bias.Shape, outDim)
		}
	}
	rows := int64(x.Len()) / max(in, 1)
	if in == 0 {
		rows = NumElements(x.Shape[:len(x.Shape)-1])
	}
	y, err := product2D(withShape(x, []int64{rows, in}), w, c.threads)
	if err != nil {
		return nil, err
	}
	if bias != nil {
		b, _ := expandTo(bias, y.Shape)
		switch y.DType {
		case Float32:
			scaleAdd(y.F32, b, 1, 1, elems[float32])
		case Float64:
			scaleAdd(y.F64, b, 1, 1, elems[float64])
		case Int64:
			scaleAdd(y.I64, b, 1, 1, elems[int64])
		case Int32:
			scaleAdd(y.I32, b, 1, 1, elems[int32])
		}
	}
	shape := append(slices.Clone(x.Shape[:len(x.Shape)-1]), outDim)
	return []*Tensor{withShape(y, shape)}, nil
}

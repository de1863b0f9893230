package interp

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

func TestMatMulGemmLinear(t *testing.T) {
	a := f32(sh(2, 3), 1, 2, 3, 4, 5, 6)
	aT := f32(sh(3, 2), 1, 4, 2, 5, 3, 6)
	b := f32(sh(3, 2), 7, 8, 9, 10, 11, 12)
	bT := f32(sh(2, 3), 7, 9, 11, 8, 10, 12)
	ab := []float32{58, 64, 139, 154}
	runCases(t, []opCase{
		{name: "matmul 2-D", op: "MatMul", in: []*compiler.Tensor{a, b},
			want: []*compiler.Tensor{f32(sh(2, 2), ab...)}},
		{name: "matmul vector times matrix", op: "MatMul", in: []*compiler.Tensor{f32(sh(3), 1, 2, 3), b},
			want: []*compiler.Tensor{f32(sh(2), 58, 64)}},
		{name: "matmul matrix times vector", op: "MatMul", in: []*compiler.Tensor{a, f32(sh(3), 1, 1, 1)},
			want: []*compiler.Tensor{f32(sh(2), 6, 15)}},
		{name: "matmul vector dot", op: "MatMul", in: []*compiler.Tensor{f32(sh(3), 1, 2, 3), f32(sh(3), 1, 2, 3)},
			want: []*compiler.Tensor{f32(sh(), 14)}},
		{name: "matmul batch times matrix", op: "MatMul", in: []*compiler.Tensor{f32(sh(2, 1, 3), 1, 2, 3, 4, 5, 6), b},
			want: []*compiler.Tensor{f32(sh(2, 1, 2), ab...)}},
		{name: "matmul int64", op: "MatMul",
			in:   []*compiler.Tensor{i64(sh(2, 3), 1, 2, 3, 4, 5, 6), i64(sh(3, 2), 7, 8, 9, 10, 11, 12)},
			want: []*compiler.Tensor{i64(sh(2, 2), 58, 64, 139, 154)}},
		{name: "matmul f64", op: "MatMul",
			in:   []*compiler.Tensor{f64(sh(1, 3), 1, 2, 3), f64(sh(3, 1), 7, 9, 11)},
			want: []*compiler.Tensor{f64(sh(1, 1), 58)}},
		{name: "matmul empty inner dim", op: "MatMul", in: []*compiler.Tensor{f32(sh(2, 0)), f32(sh(0, 2))},
			want: []*compiler.Tensor{f32(sh(2, 2), 0, 0, 0, 0)}},
		{name: "matmul inner mismatch", op: "MatMul", in: []*compiler.Tensor{a, a}, wantErr: compiler.ErrShapeMismatch},
		{name: "matmul batch mismatch", op: "MatMul",
			in: []*compiler.Tensor{compiler.NewTensor(compiler.Float32, 2, 1, 3), compiler.NewTensor(compiler.Float32, 3, 3, 2)}, wantErr: compiler.ErrShapeMismatch},
		{name: "matmul scalar", op: "MatMul", in: []*compiler.Tensor{f32(sh(), 1), b}, wantErr: compiler.ErrShapeMismatch},
		{name: "gemm with vector C", op: "Gemm", in: []*compiler.Tensor{a, b, f32(sh(2), 1, -1)},
			want: []*compiler.Tensor{f32(sh(2, 2), 59, 63, 140, 153)}},
		{name: "gemm transA", op: "Gemm", attrs: attrs{"transA": aInt(1)}, in: []*compiler.Tensor{aT, b},
			want: []*compiler.Tensor{f32(sh(2, 2), ab...)}},
		{name: "gemm transB (a PyTorch Linear)", op: "Gemm", attrs: attrs{"transB": aInt(1)},
			in:   []*compiler.Tensor{a, bT, f32(sh(1, 2), 1, -1)},
			want: []*compiler.Tensor{f32(sh(2, 2), 59, 63, 140, 153)}},
		{name: "gemm both transposed", op: "Gemm", attrs: attrs{"transA": aInt(1), "transB": aInt(1)},
			in: []*compiler.Tensor{aT, bT}, want: []*compiler.Tensor{f32(sh(2, 2), ab...)}},
		{name: "gemm alpha beta scalar C", op: "Gemm", attrs: attrs{"alpha": aFloat(2), "beta": aFloat(0.5)},
			in: []*compiler.Tensor{a, b, f32(sh(), 2)}, want: []*compiler.Tensor{f32(sh(2, 2), 117, 129, 279, 309)}},
		{name: "gemm matrix C, beta 0 ignores it", op: "Gemm", attrs: attrs{"beta": aFloat(0)},
			in: []*compiler.Tensor{a, b, f32(sh(2, 2), 1, 1, 1, 1)}, want: []*compiler.Tensor{f32(sh(2, 2), ab...)}},
		{name: "gemm f64 with omitted C", op: "Gemm",
			in:   []*compiler.Tensor{f64(sh(1, 2), 1, 2), f64(sh(2, 1), 3, 4), nil},
			want: []*compiler.Tensor{f64(sh(1, 1), 11)}},
		{name: "gemm 3-D A", op: "Gemm", in: []*compiler.Tensor{compiler.NewTensor(compiler.Float32, 1, 2, 3), b}, wantErr: compiler.ErrShapeMismatch},
		{name: "gemm C does not broadcast", op: "Gemm",
			in: []*compiler.Tensor{a, b, f32(sh(3), 1, 2, 3)}, wantErr: compiler.ErrShapeMismatch},
		{name: "linear 3-D with bias", op: "Linear",
			in:   []*compiler.Tensor{f32(sh(1, 2, 3), 1, 2, 3, 4, 5, 6), b, f32(sh(2), 1, -1)},
			want: []*compiler.Tensor{f32(sh(1, 2, 2), 59, 63, 140, 153)}},
		{name: "linear without bias", op: "Linear",
			in: []*compiler.Tensor{f32(sh(3), 1, 2, 3), b}, want: []*compiler.Tensor{f32(sh(2), 58, 64)}},
		{name: "linear bias of the wrong size", op: "Linear",
			in: []*compiler.Tensor{a, b, f32(sh(3), 1, 2, 3)}, wantErr: compiler.ErrShapeMismatch},
		{name: "linear wrong weight shape", op: "Linear",
			in: []*compiler.Tensor{a, bT}, wantErr: compiler.ErrShapeMismatch},
	})
}

func randomF32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// TestBatchedMatMulRandom checks broadcast batched MatMul on random data
// against a float64 reference, for odd sizes that leave remainders in every
// tiling dimension, and checks that the thread count does not change a
// single bit.
func TestBatchedMatMulRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shapes := [][2][]int64{
		{{5, 7}, {7, 4}},
		{{1, 1}, {1, 1}},
		{{9, 2}, {2, 300}},
		{{37, 130}, {130, 300}},
		{{2, 1, 5, 7}, {3, 7, 4}},
		{{3, 6, 13}, {1, 13, 3}},
		{{4, 2, 25, 64}, {4, 2, 64, 25}},
		{{70, 1}, {1, 513}},
	}
	for _, s := range shapes {
		t.Run(fmt.Sprintf("%vx%v", s[0], s[1]), func(t *testing.T) {
			a := f32(s[0], randomF32(r, int(compiler.NumElements(s[0])))...)
			b := f32(s[1], randomF32(r, int(compiler.NumElements(s[1])))...)
			var first *compiler.Tensor
			for _, threads := range []int{1, 2, 3, 8} {
				g, feed := nodeGraph("MatMul", 0, nil, 1, a, b)
				res, err := Run(g, feed, &Options{Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				got := res["y0"]
				if first == nil {
					first = got
					want := matmulRef(a, b)
					if msg := diff(got, want, 1e-5); msg != "" {
						t.Fatalf("vs float64 reference: %s", msg)
					}
					continue
				}
				if !slices.Equal(got.F32, first.F32) {
					t.Fatalf("Threads %d changes the result", threads)
				}
			}
		})
	}
}

// matmulRef is batched, broadcasting matmul of rank >= 2 operands in
// float64, written independently of the kernel.
func matmulRef(a, b *compiler.Tensor) *compiler.Tensor {
	ra, rb := len(a.Shape), len(b.Shape)
	m, k, n := a.Shape[ra-2], a.Shape[ra-1], b.Shape[rb-1]
	batch, _ := ops.BroadcastShapes(a.Shape[:ra-2], b.Shape[:rb-2])
	out := compiler.NewTensor(compiler.Float32, append(slices.Clone(batch), m, n)...)
	nb := int(compiler.NumElements(batch))
	for bi := range nb {
		// Batch coordinates, mapped into each operand by broadcasting.
		ia, ib, rem := 0, 0, bi
		sa, sb := 1, 1
		for d := len(batch) - 1; d >= 0; d-- {
			pos := rem % int(batch[d])
			rem /= int(batch[d])
			if da := d - (len(batch) - (ra - 2)); da >= 0 {
				if a.Shape[da] != 1 {
					ia += pos * sa
				}
				sa *= int(a.Shape[da])
			}
			if db := d - (len(batch) - (rb - 2)); db >= 0 {
				if b.Shape[db] != 1 {
					ib += pos * sb
				}
				sb *= int(b.Shape[db])
			}
		}
		for i := range int(m) {
			for j := range int(n) {
				var s float64
				for p := range int(k) {
					s += float64(a.F32[ia*int(m*k)+i*int(k)+p]) * float64(b.F32[ib*int(k*n)+p*int(n)+j])
				}
				out.F32[bi*int(m*n)+i*int(n)+j] = float32(s)
			}
		}
	}
	return out
}

package interp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// fuzzOps are the ops FuzzKernel drives with arbitrary operands.
var fuzzOps = []string{
	"Gather", "MatMul", "Gemm", "Linear", "Add", "Div", "Pow", "Equal", "Where", "Relu",
	"ReduceSum", "ReduceMean", "LayerNormalization", "Softmax", "Transpose", "Reshape",
	"Unsqueeze", "Squeeze", "Concat", "Slice", "Shape", "ConstantOfShape", "Expand",
	"Range", "Cast", "Gelu", "GatherND", "GatherElements", "Max", "And", "IsNaN", "GreaterOrEqual",
}

// byteReader hands out fuzz bytes, then zeros.
type byteReader []byte

func (r *byteReader) next() byte {
	if len(*r) == 0 {
		return 0
	}
	b := (*r)[0]
	*r = (*r)[1:]
	return b
}

// small is a value in [-4, 11]: mostly valid dims and indices, sometimes
// negative.
func (r *byteReader) small() int64 { return int64(r.next()%16) - 4 }

func (r *byteReader) tensor() *compiler.Tensor {
	kind := r.next() % 4
	rank := int(r.next() % 4)
	shape := make([]int64, rank)
	for i := range shape {
		shape[i] = int64(r.next() % 4)
	}
	n := int(compiler.NumElements(shape))
	switch kind {
	case 0, 1:
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.small()) / 2
		}
		return ops.FromSlice(shape, v)
	case 2:
		v := make([]int64, n)
		for i := range v {
			v[i] = r.small()
		}
		return ops.FromSlice(shape, v)
	}
	v := make([]bool, n)
	for i := range v {
		v[i] = r.next()%2 == 1
	}
	return ops.FromSlice(shape, v)
}

// FuzzKernel runs one node of a fuzz-chosen op on fuzz-chosen operands and
// attributes. Bad shapes, indices and dtypes must come back as errors;
// a recovered panic ("internal error") fails.
func FuzzKernel(f *testing.F) {
	f.Add([]byte{0, 0, 2, 3, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 2, 1, 2, 1, 5})
	f.Add([]byte{1, 0, 2, 2, 3, 1, 2, 3, 4, 5, 6, 0, 2, 3, 2, 9, 8, 7, 6, 5, 4})
	f.Add([]byte{15, 2, 3, 1, 2, 3, 9, 9, 9, 9, 9, 9, 2, 1, 3, 4, 12, 0})
	f.Add([]byte{19, 1, 2, 3, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 2, 1, 2, 3, 12, 2, 1, 2, 2, 1, 0, 1, 7})
	f.Add([]byte{12, 0, 3, 2, 2, 2, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2, 1, 2, 0, 1, 1, 3})
	f.Add([]byte{8, 3, 1, 2, 1, 0, 0, 2, 3, 7, 7, 7, 0, 1, 0, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := byteReader(data)
		op := fuzzOps[int(r.next())%len(fuzzOps)]
		opset := []int64{11, 13, 17}[r.next()%3]
		nIn := 1 + int(r.next()%5)
		in := make([]*compiler.Tensor, nIn)
		for i := range in {
			in[i] = r.tensor()
		}
		at := attrs{
			"axis":       aInt(r.small()),
			"keepdims":   aInt(int64(r.next() % 2)),
			"transB":     aInt(int64(r.next() % 2)),
			"allowzero":  aInt(int64(r.next() % 2)),
			"to":         aInt(int64(r.next() % 12)),
			"start":      aInt(r.small()),
			"batch_dims": aInt(r.small()),
		}
		if r.next()%2 == 1 {
			at["perm"] = aInts(r.small(), r.small(), r.small())
			at["axes"] = aInts(r.small(), r.small())
		}
		if r.next()%2 == 1 {
			at["value"] = aTensor(r.tensor())
		}
		spec, _ := kernelFor(op)
		if len(in) < spec.MinIn || (spec.MaxIn >= 0 && len(in) > spec.MaxIn) {
			return // New rejects the arity; that path is tested elsewhere
		}
		g, feed := nodeGraph(op, opset, at, 1, in...)
		_, err := Run(g, feed, &Options{Threads: 2, MaxElements: 1 << 16})
		if err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatalf("%s (opset %d) on %v: %v", op, opset, shapes(in), err)
		}
	})
}

func shapes(ts []*compiler.Tensor) []string {
	var s []string
	for _, t := range ts {
		s = append(s, fmt.Sprintf("%s%v", t.DType, t.Shape))
	}
	return s
}

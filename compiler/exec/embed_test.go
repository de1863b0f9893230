package exec

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
)

// TestEmbeddingsOrder: the embedding step sums in the order its
// sqc.Embeddings names ((word + type) + position, or positions_first) and
// gives the interpreter's bits for each.
func TestEmbeddingsOrder(t *testing.T) {
	const batch, seq, hidden = 2, 5, 8
	ids, types := compiler.NewTensor(compiler.Int64, batch, seq), compiler.NewTensor(compiler.Int64, batch, seq)
	for i := range ids.I64 {
		ids.I64[i], types.I64[i] = int64(i*3%10), int64(i%2)
	}
	in := map[string]*compiler.Tensor{"ids": ids, "types": types}
	var outs [2][]float32
	for first := range 2 {
		t.Run(fmt.Sprintf("positions_first=%d", first), func(t *testing.T) {
			g := compiler.NewGraph("embeddings")
			g.Inputs = []*compiler.Value{
				{Name: "ids", DType: compiler.Int64, Shape: compiler.Shape{{Size: batch}, {Size: seq}}},
				{Name: "types", DType: compiler.Int64, Shape: compiler.Shape{{Size: batch}, {Size: seq}}},
			}
			g.Outputs = []*compiler.Value{{Name: "y", DType: compiler.Float32}}
			// Tables on different grids, so that the two orders round apart.
			g.Initializers["word"] = randF32(1, -1, 1, 10, hidden)
			g.Initializers["pos"] = randF32(2, -0.3, 0.3, 6, hidden)
			g.Initializers["type"] = randF32(3, -0.07, 0.07, 2, hidden)
			g.Nodes = []*compiler.Node{{Name: "emb", Op: "sqc.Embeddings", Inputs: []string{"ids", "word", "pos", "types", "type"}, Outputs: []string{"y"},
				Attrs: map[string]compiler.Attr{"positions_first": compiler.IntAttr(int64(first))}}}
			if err := g.InferShapes(); err != nil {
				t.Fatal(err)
			}
			want, err := interp.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := run(t, compile(t, g, nil, 2), in)
			if !slices.Equal(got["y"].F32, want["y"].F32) {
				t.Error("the engine's embeddings differ from the interpreter's")
			}
			outs[first] = got["y"].F32
		})
	}
	if slices.Equal(outs[0], outs[1]) {
		t.Error("both orders give the same bits: the test cannot tell them apart")
	}
}

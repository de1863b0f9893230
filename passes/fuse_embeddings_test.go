package passes

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// robertaTinyModels are the tiny models whose position ids are offset by
// padding_idx (internal/testmodels).
var robertaTinyModels = []string{testmodels.TinyRobertaCls, testmodels.TinyRobertaBase, testmodels.TinyXLMRCls, testmodels.TinyXLMRBase, testmodels.TinyCamembertCls}

// padPositionInputs are ids batches for a model with padding id pad: the
// reference batch (right-padded with pad), and one with pad ids among the
// real tokens, a row of one token, a row of pads only and a row padded
// with another id (masked out), all of which the position-id chain
// handles its own way.
func padPositionInputs(ref *testmodels.ModelReference, pad int64) []map[string]*compiler.Tensor {
	in := ref.Inputs
	ids, mask := in["input_ids"], in["attention_mask"]
	batch, seq := ids.Shape[0], ids.Shape[1]
	odd := map[string]*compiler.Tensor{"input_ids": ids.Clone(), "attention_mask": mask.Clone()}
	x, m := odd["input_ids"].I64, odd["attention_mask"].I64
	x[1], x[2] = pad, pad // pad ids inside row 0's real tokens (its mask stays 1)
	if batch > 1 {
		row := x[seq : 2*seq]
		for s := range row {
			if s > 0 {
				row[s], m[seq+int64(s)] = pad, 0
			}
		}
	}
	if batch > 2 {
		row := x[2*seq : 3*seq]
		for s := range row {
			row[s] = pad // all padding ids, mask as it was
		}
	}
	if batch > 3 {
		for s := seq / 2; s < seq; s++ {
			x[3*seq+s], m[3*seq+s] = 3, 0 // padded with a non-pad id
		}
	}
	return []map[string]*compiler.Tensor{in, odd}
}

// TestFuseEmbeddingsPadPositions: on the RoBERTa and XLM-R tiny models,
// from both frontends, FuseEmbeddings fuses the embeddings with their
// padding-offset position ids (one sqc.Embeddings with padding_idx, no
// CumSum left) and the FP32 interpreter gives the unfused graph's outputs
// bit for bit.
func TestFuseEmbeddingsPadPositions(t *testing.T) {
	for _, name := range robertaTinyModels {
		dir := testmodels.TinyDir(t, name)
		cfg, err := hf.LoadConfig(filepath.Join(dir, hf.ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		ref, err := testmodels.LoadModelReference(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, frontend := range []string{"hf", "onnx"} {
			t.Run(name+"/"+frontend, func(t *testing.T) {
				load := func() *compiler.Graph {
					var g *compiler.Graph
					var err error
					if frontend == "hf" {
						g, err = hf.Load(dir)
					} else {
						g, err = onnx.Load(filepath.Join(dir, "model.onnx"))
					}
					if err != nil {
						t.Fatal(err)
					}
					return g
				}
				unfused, fused := load(), load()
				if err := Run(unfused, without(Pipeline(), []string{FuseEmbeddings.Name}), Options{CheckIR: true}); err != nil {
					t.Fatal(err)
				}
				if err := RunPipeline(fused, Options{CheckIR: true}); err != nil {
					t.Fatal(err)
				}
				hist := OpHistogram(fused)
				if hist["sqc.Embeddings"] != 1 || hist["CumSum"] != 0 || OpHistogram(unfused)["CumSum"] != 1 {
					t.Fatalf("fused: %s", histogramString(hist))
				}
				for _, n := range fused.Nodes {
					if n.Op != "sqc.Embeddings" {
						continue
					}
					pad, ok := compiler.EmbeddingsPaddingIdx(n)
					if !ok || pad != int64(cfg.PadTokenID) {
						t.Errorf("%s: padding_idx %d (set %v), want %d", n.Name, pad, ok, cfg.PadTokenID)
					}
					if len(n.Inputs) != 5 || n.Inputs[3] != "" || n.Inputs[4] == "" {
						t.Errorf("%s inputs %q, want the type row without type ids", n.Name, n.Inputs)
					}
				}
				sameBitsOn(t, unfused, fused, padPositionInputs(ref, int64(cfg.PadTokenID)))
			})
		}
	}
}

// TestFuseEmbeddingsPadPositionsPattern: a chain that is not
// create_position_ids_from_input_ids (another pad value in the Equal than
// in the Add, an exclusive CumSum, a CumSum along the batch) is left as it
// is.
func TestFuseEmbeddingsPadPositionsPattern(t *testing.T) {
	dir := testmodels.TinyDir(t, testmodels.TinyRobertaBase)
	for _, c := range []struct {
		name string
		edit func(g *compiler.Graph)
	}{
		{"pad values differ", func(g *compiler.Graph) {
			for _, n := range g.Nodes {
				if n.Op == "Equal" {
					g.Initializers["other.pad"] = i64Scalar(2)
					n.Inputs[1] = "other.pad"
				}
			}
		}},
		{"exclusive cumsum", func(g *compiler.Graph) {
			for _, n := range g.Nodes {
				if n.Op == "CumSum" {
					n.Attrs = map[string]compiler.Attr{"exclusive": compiler.IntAttr(1)}
				}
			}
		}},
		{"cumsum along the batch", func(g *compiler.Graph) {
			for _, n := range g.Nodes {
				if n.Op == "CumSum" {
					g.Initializers["axis.0"] = i64Scalar(0)
					n.Inputs[1] = "axis.0"
				}
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := hf.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			c.edit(g)
			if err := RunPipeline(g, Options{CheckIR: true}); err != nil {
				t.Fatal(err)
			}
			if n := OpHistogram(g)["sqc.Embeddings"]; n != 0 {
				t.Errorf("%d sqc.Embeddings, want none", n)
			}
			if !slices.ContainsFunc(g.Nodes, func(n *compiler.Node) bool { return n.Op == "CumSum" }) {
				t.Error("the CumSum is gone")
			}
		})
	}
}

func i64Scalar(v int64) *compiler.Tensor {
	t := compiler.NewTensor(compiler.Int64)
	t.I64[0] = v
	return t
}

// TestFuseEmbeddingsPositionsFirst: BERT's embeddings summed as (word +
// position) + type (older transformers, ONNX Runtime's
// EmbedLayerNormalization) fuse into one sqc.Embeddings with
// positions_first, which gives the unfused graph's bits; the usual order
// fuses without it.
func TestFuseEmbeddingsPositionsFirst(t *testing.T) {
	dir := testmodels.TinyDir(t, testmodels.TinyBertCls)
	ref, err := testmodels.LoadModelReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, reorder := range []bool{false, true} {
		t.Run(fmt.Sprintf("positions_first=%v", reorder), func(t *testing.T) {
			g, err := hf.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if reorder {
				// add_token_types = words + types; add_positions = that + positions
				// becomes add_token_types = words + positions; add_positions = that + types.
				var typesAdd, posAdd *compiler.Node
				for _, n := range g.Nodes {
					switch {
					case strings.HasSuffix(n.Name, "embeddings/add_token_types"):
						typesAdd = n
					case strings.HasSuffix(n.Name, "embeddings/add_positions"):
						posAdd = n
					}
				}
				if typesAdd == nil || posAdd == nil {
					t.Fatal("no embedding sums in the tiny BERT")
				}
				typesAdd.Inputs[1], posAdd.Inputs[1] = posAdd.Inputs[1], typesAdd.Inputs[1]
				g.Nodes = slices.DeleteFunc(g.Nodes, func(n *compiler.Node) bool { return n == typesAdd })
				at := slices.Index(g.Nodes, posAdd)
				g.Nodes = slices.Insert(g.Nodes, at, typesAdd)
			}
			// The pipeline without FuseEmbeddings is the reference: the other
			// fusions round differently from the ops they replace.
			before := g.Clone()
			if err := Run(before, without(Pipeline(), []string{FuseEmbeddings.Name}), Options{CheckIR: true}); err != nil {
				t.Fatal(err)
			}
			if err := RunPipeline(g, Options{CheckIR: true}); err != nil {
				t.Fatal(err)
			}
			var emb *compiler.Node
			for _, n := range g.Nodes {
				if n.Op == "sqc.Embeddings" {
					emb = n
				}
			}
			if emb == nil {
				t.Fatalf("no sqc.Embeddings:\n%s", g.Text())
			}
			if compiler.EmbeddingsPositionsFirst(emb) != reorder || len(emb.Inputs) != 5 {
				t.Errorf("positions_first %v with %d inputs, want %v with the type table", compiler.EmbeddingsPositionsFirst(emb), len(emb.Inputs), reorder)
			}
			sameBitsWithMixedTypes(t, before, g, ref)
		})
	}
}

// sameBitsWithMixedTypes runs the reference batch, and the same with
// token type ids alternating 0 and 1, through the interpreter on
// unfused and fused, and fails unless their outputs have the same bits.
func sameBitsWithMixedTypes(t *testing.T, unfused, fused *compiler.Graph, ref *testmodels.ModelReference) {
	t.Helper()
	types := ref.Inputs["token_type_ids"].Clone()
	for i := range types.I64 {
		types.I64[i] = int64(i % 2)
	}
	mixed := maps.Clone(ref.Inputs)
	mixed["token_type_ids"] = types
	sameBitsOn(t, unfused, fused, []map[string]*compiler.Tensor{ref.Inputs, mixed})
}

// sameBitsOn runs every batch of inputs through the interpreter on
// unfused and fused and fails unless their outputs have the same bits.
func sameBitsOn(t *testing.T, unfused, fused *compiler.Graph, inputs []map[string]*compiler.Tensor) {
	t.Helper()
	for i, in := range inputs {
		want, err := interp.Run(unfused, in, &interp.Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		got, err := interp.Run(fused, in, &interp.Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		wantSameBits(t, fmt.Sprintf("batch %d", i), got, want)
	}
}

// TestFuseEmbeddingsWordAndType: JinaBERT's word + type embeddings, with
// no position term (its positions are ALiBi biases), fuse from both
// frontends into sqc.Embeddings without a position table and with the
// type table, and the interpreter gives the unfused pipeline's outputs bit
// for bit, also with mixed type ids.
func TestFuseEmbeddingsWordAndType(t *testing.T) {
	for _, name := range testmodels.TinyJinaBertModels {
		dir := testmodels.TinyDir(t, name)
		ref, err := testmodels.LoadModelReference(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, frontend := range []string{"hf", "onnx"} {
			t.Run(name+"/"+frontend, func(t *testing.T) {
				var g *compiler.Graph
				if frontend == "hf" {
					g, err = hf.Load(dir)
				} else {
					g, err = onnx.Load(filepath.Join(dir, "model.onnx"))
				}
				if err != nil {
					t.Fatal(err)
				}
				before, emb := pipelineWithoutFuseEmbeddings(t, g)
				if len(emb) != 1 || len(emb[0].Inputs) != 5 || emb[0].Inputs[2] != "" || emb[0].Inputs[3] != "token_type_ids" {
					t.Fatalf("want one sqc.Embeddings of word and type tables without positions, got %d: %v", len(emb), emb)
				}
				sameBitsWithMixedTypes(t, before, g, ref)
			})
		}
	}
}

// TestFuseEmbeddingsArangePositions: position ids written as
// torch.arange(seq)[None] (Gather(pos, Unsqueeze(Range(0, seq, 1))), the
// tiny absolute-position DeBERTa's export) fuse into sqc.Embeddings with
// the position table, giving the unfused graph's outputs bit for bit.
func TestFuseEmbeddingsArangePositions(t *testing.T) {
	dir := testmodels.TinyDir(t, testmodels.TinyDeBERTaAbs)
	ref, err := testmodels.LoadModelReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	before, emb := pipelineWithoutFuseEmbeddings(t, g)
	if len(emb) != 1 || len(emb[0].Inputs) < 3 || emb[0].Inputs[2] != "embeddings.position_embeddings.weight" || OpHistogram(g)["Range"] != 0 {
		t.Fatalf("want one sqc.Embeddings reading the position table and no Range left, got %v:\n%s", emb, g.Text())
	}
	want, err := interp.Run(before, ref.Inputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := interp.Run(g, ref.Inputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if !slices.EqualFunc(w.F32, got[name].F32, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Errorf("%s differs from the unfused graph's", name)
		}
	}
}

// pipelineWithoutFuseEmbeddings runs the pipeline on g and, on a copy of
// g as it was, the pipeline without FuseEmbeddings; it returns that copy
// and g's sqc.Embeddings nodes.
func pipelineWithoutFuseEmbeddings(t *testing.T, g *compiler.Graph) (*compiler.Graph, []*compiler.Node) {
	t.Helper()
	before := g.Clone()
	if err := Run(before, without(Pipeline(), []string{FuseEmbeddings.Name}), Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	if err := RunPipeline(g, Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	var emb []*compiler.Node
	for _, n := range g.Nodes {
		if n.Op == "sqc.Embeddings" {
			emb = append(emb, n)
		}
	}
	return before, emb
}

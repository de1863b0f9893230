package passes

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// Acceptance on the shared SST-2 models: after the pipeline the encoder is
// only canonical ops, and the FP32 logits still match PyTorch's.

// devSentences is how many dev sentences the logit check runs (in batches
// of devBatch, right-padded, so the mask matters).
const (
	devSentences = 64
	devBatch     = 16
	// logitTolerance is the acceptance bound; PyTorch vs ONNX Runtime
	// differ by 1.7e-6 on these models.
	logitTolerance = 1e-4
)

// decomposedOps must not survive canonicalisation anywhere in the graph.
var decomposedOps = []string{"ReduceMean", "Pow", "Sqrt", "Erf", "Softmax", "MatMul", "Gemm", "Transpose", "Reshape", "Where", "Expand", "Equal", "Concat", "Cast", "Div", "Mul", "Sub", "Shape", "Slice", "Unsqueeze"}

func TestSharedModelsCanonicalise(t *testing.T) {
	for _, name := range testmodels.Models {
		t.Run(name, func(t *testing.T) {
			dir := testmodels.ModelDir(t, name)
			g, err := onnx.Load(dir + "/model.onnx")
			if err != nil {
				t.Fatal(err)
			}
			before := OpHistogram(g)
			if err := RunPipeline(g, Options{CheckIR: true}); err != nil {
				t.Fatal(err)
			}
			after := OpHistogram(g)
			t.Logf("before: %s", histogramString(before))
			t.Logf("after:  %s", histogramString(after))
			for _, op := range decomposedOps {
				if after[op] > 0 {
					t.Errorf("%d %s nodes remain after canonicalisation", after[op], op)
				}
			}
			checkEncoderOps(t, g)
			if after["sqc.Embeddings"] != 1 {
				t.Errorf("%d sqc.Embeddings nodes, want 1 (FuseEmbeddings)", after["sqc.Embeddings"])
			}

			ref, err := testmodels.LoadReference(dir)
			if err != nil {
				t.Fatal(err)
			}
			it, err := interp.New(g)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for lo := 0; lo < devSentences; lo += devBatch {
				exs := ref.Examples[lo : lo+devBatch]
				in, err := testmodels.Inputs(g, exs)
				if err != nil {
					t.Fatal(err)
				}
				out, err := it.Run(in, &interp.Options{})
				if err != nil {
					t.Fatal(err)
				}
				logits := out[g.Outputs[0].Name]
				rows := make([][]float32, len(exs))
				for i := range rows {
					rows[i] = logits.F32[i*2 : i*2+2]
				}
				worst = max(worst, testmodels.MaxAbsDiff(rows, ref.Logits[lo:lo+devBatch]))
			}
			t.Logf("max |logit - reference| over %d dev sentences: %.3g", devSentences, worst)
			if worst > logitTolerance {
				t.Errorf("logits differ from the reference by %.3g, want <= %g", worst, logitTolerance)
			}
		})
	}
}

// checkEncoderOps asserts every node between the first and the last
// LayerNormalization of per-token rows (the encoder, as compiler/exec
// bounds it: a pooled head's LayerNorm of [batch, hidden] rows ends none)
// that reads an activation is one of the canonical ops, a residual Add, or
// one of alsoAllowed.
func checkEncoderOps(t *testing.T, g *compiler.Graph, alsoAllowed ...string) {
	t.Helper()
	allowed := append([]string{"sqc.Linear", "LayerNormalization", "sqc.Gelu", "sqc.Silu", "sqc.Attention", "Add"}, alsoAllowed...)
	first, last := -1, -1
	for i, n := range g.Nodes {
		if v := valueInfo(g, n.Inputs[0]); n.Op == "LayerNormalization" && (v == nil || len(v.Shape) >= 3) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		t.Fatal("no LayerNormalization in the canonical graph")
	}
	// The activations: values computed from a LayerNorm's output, through
	// anything but Shape (dims only). Work on dims and on values from the
	// inputs alone (MPNet's position bias, the mask) is not per token.
	activation := map[string]bool{}
	for _, n := range g.Nodes[first:last] {
		reads := slices.ContainsFunc(n.Inputs, func(in string) bool { return activation[in] })
		if n.Op == "LayerNormalization" || reads && n.Op != "Shape" {
			for _, out := range n.Outputs {
				activation[out] = true
			}
		}
		if reads && n.Op != "Shape" && !slices.Contains(allowed, n.Op) {
			t.Errorf("encoder node %q is %s, want one of %v", n.Name, n.Op, allowed)
		}
	}
}

// TestHFGraphCanonicalisesLikeONNX checks both frontends meet in the same
// canonical form: the op histograms of the encoder-relevant ops agree.
func TestHFGraphCanonicalisesLikeONNX(t *testing.T) {
	for _, name := range testmodels.Models {
		t.Run(name, func(t *testing.T) {
			dir := testmodels.ModelDir(t, name)
			fromONNX, err := onnx.Load(dir + "/model.onnx")
			if err != nil {
				t.Fatal(err)
			}
			fromHF, err := hf.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range []*compiler.Graph{fromONNX, fromHF} {
				if err := RunPipeline(g, Options{CheckIR: true}); err != nil {
					t.Fatal(err)
				}
			}
			a, b := canonicalCounts(OpHistogram(fromONNX)), canonicalCounts(OpHistogram(fromHF))
			if !maps.Equal(a, b) {
				t.Errorf("canonical ops differ:\nonnx: %s\nhf:   %s\n(full onnx: %s)\n(full hf:   %s)",
					histogramString(a), histogramString(b), histogramString(OpHistogram(fromONNX)), histogramString(OpHistogram(fromHF)))
			}
		})
	}
}

func canonicalCounts(h map[string]int) map[string]int {
	out := map[string]int{}
	for _, op := range []string{"sqc.Linear", "LayerNormalization", "sqc.Gelu", "sqc.Silu", "sqc.Attention", "sqc.AttentionMask", "sqc.Embeddings", "sqc.Rotary"} {
		out[op] = h[op]
	}
	return out
}

func histogramString(h map[string]int) string {
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(h)) {
		parts = append(parts, fmt.Sprintf("%s %d", op, h[op]))
	}
	return strings.Join(parts, ", ")
}

package passes

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// The canonicalisation pipeline on the tiny random models of every family
// (internal/testmodels): from both frontends it must keep PyTorch's FP32
// outputs, meet in the same canonical ops, and leave only canonical ops in
// the encoder.

// tanhGeluActs are the activations FuseGelu turns into sqc.Gelu
// {approximate: "tanh"}.
var tanhGeluActs = []string{hf.ActGELUNew, hf.ActGELUTanh}

func tinyGraphs(t *testing.T, name string) (hf.Config, *testmodels.ModelReference, map[string]*compiler.Graph) {
	t.Helper()
	dir := testmodels.TinyDir(t, name)
	cfg, err := hf.LoadConfig(filepath.Join(dir, hf.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := testmodels.LoadModelReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	fromHF, err := hf.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	fromONNX, err := onnx.Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	graphs := map[string]*compiler.Graph{"hf": fromHF, "onnx": fromONNX}
	for _, g := range graphs {
		if err := RunPipeline(g, Options{CheckIR: true}); err != nil {
			t.Fatal(err)
		}
	}
	return cfg, ref, graphs
}

func TestTinyModelsCanonicalise(t *testing.T) {
	for _, name := range testmodels.TinyModels {
		t.Run(name, func(t *testing.T) {
			_, ref, graphs := tinyGraphs(t, name)
			for _, frontend := range []string{"hf", "onnx"} {
				g := graphs[frontend]
				t.Logf("%s: %s", frontend, histogramString(OpHistogram(g)))
				it, err := interp.New(g)
				if err != nil {
					t.Fatal(err)
				}
				out, err := it.Run(ref.Inputs, &interp.Options{Threads: 2})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range ref.OutputNames() {
					if d := testmodels.TensorMaxAbsDiff(out[o], ref.Outputs[o]); !(d <= logitTolerance) {
						t.Errorf("%s: canonical %s differs from PyTorch by %.3g > %g", frontend, o, d, logitTolerance)
					}
				}
				// The mask may be computed after the embeddings (the HF
				// frontend, and these exports, do); exec lowers it anywhere.
				allowed := []string{"Relu", "sqc.AttentionMask"}
				if slices.Contains(testmodels.TinyModernBertModels, name) {
					allowed = append(allowed, "sqc.Rotary", "Mul") // its rotary embedding and GLU product
				}
				if slices.Contains(testmodels.TinyJinaBertModels, name) {
					allowed = append(allowed, "Mul") // the gated feed-forward's product
				}
				if slices.Contains(testmodels.TinyGTEModels, name) || slices.Contains(testmodels.TinyNomicModels, name) {
					allowed = append(allowed, "sqc.Rotary", "Mul") // its rotary embedding and GLU product
				}
				checkEncoderOps(t, g, allowed...)
				// BERT and DistilBERT position ids are 0..seq-1, the
				// RoBERTa family's offset by padding_idx: both fuse.
				if n := OpHistogram(g)["sqc.Embeddings"]; n != 1 {
					t.Errorf("%s: %d sqc.Embeddings, want 1", frontend, n)
				}
			}
			a, b := canonicalCounts(OpHistogram(graphs["onnx"])), canonicalCounts(OpHistogram(graphs["hf"]))
			if !maps.Equal(a, b) {
				t.Errorf("canonical ops differ:\nonnx: %s\nhf:   %s", histogramString(a), histogramString(b))
			}
		})
	}
}

// TestTanhGeluFormsOnTinyModels checks that FuseGelu's tanh-form matcher
// recognises every tanh GELU the HF frontend and torch.onnx.export write
// for gelu_new (written out with torch.pow) and gelu_pytorch_tanh
// (F.gelu(approximate="tanh"), decomposed by the exporter): one sqc.Gelu
// {approximate: "tanh"} per layer after the pipeline, and no Tanh left
// that the matcher would take (the pooler's Tanh stays).
func TestTanhGeluFormsOnTinyModels(t *testing.T) {
	for _, name := range testmodels.TinyModels {
		t.Run(name, func(t *testing.T) {
			cfg, _, graphs := tinyGraphs(t, name)
			if !slices.Contains(tanhGeluActs, cfg.HiddenAct) {
				t.Skipf("%s uses %s", name, cfg.HiddenAct)
			}
			for frontend, g := range graphs {
				ix := newIndex(g)
				fused, left := 0, 0
				for _, n := range g.Nodes {
					switch {
					case n.Op == opGelu && compiler.GeluApproximate(n) == compiler.GeluTanh:
						fused++
					case n.Op == "Tanh":
						if _, sink := matchTanhGelu(ix, n); sink != nil {
							left++
						}
					}
				}
				want := cfg.NumLayers
				if slices.Contains(tanhGeluActs, cfg.TokenHeadActivation()) {
					want++ // the per-token head's dense
				}
				if fused != want || left != 0 {
					t.Errorf("%s: %d tanh sqc.Gelu and %d tanh GELUs left unfused, want one per layer and head (%d) and none", frontend, fused, left, want)
				}
			}
		})
	}
}

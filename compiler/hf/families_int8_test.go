package hf

import (
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
)

// The INT8 path (`sqc run --int8`: canonicalisation pipeline, calibration,
// QuantPipeline with SmoothQuant alpha 0.5, the in-process INT8 engine) on
// the tiny models of every family, from both frontends. Random weights
// make accuracy numbers meaningless, so the bar is only that it runs and
// agrees roughly with FP32; the cosines are logged for the report.

// int8MinCosine is "roughly agrees": quantisation noise on these random
// models costs ~1e-3 of cosine; a wrong formula (a position or mask
// mistake, a different activation) falls far below.
const int8MinCosine = 0.98

// calibBatches makes n batches shaped like the reference batch (same
// lengths, special tokens and padding) with fresh random body tokens.
func calibBatches(ref *testmodels.ModelReference, vocab, n int) []calib.Batch {
	rng := rand.New(rand.NewPCG(1, 2))
	ids, mask := ref.Inputs[inInputIDs], ref.Inputs[inAttentionMask]
	seq := int(ids.Shape[1])
	var out []calib.Batch
	for range n {
		b := calib.Batch{}
		for name, t := range ref.Inputs {
			b[name] = t
		}
		fresh := compiler.NewTensor(compiler.Int64, ids.Shape...)
		copy(fresh.I64, ids.I64)
		for r := range int(ids.Shape[0]) {
			real := 0
			for s := range seq {
				real += int(mask.I64[r*seq+s])
			}
			for s := 1; s < real-1; s++ {
				fresh.I64[r*seq+s] = int64(4 + rng.IntN(vocab-4))
			}
		}
		b[inInputIDs] = fresh
		out = append(out, b)
	}
	return out
}

// int8Outputs quantises a copy of g as `sqc run --int8` does and runs the
// reference batch through the INT8 engine; it also returns the canonical
// FP32 graph's outputs and the INT8 program's listing.
func int8Outputs(t *testing.T, g *compiler.Graph, ref *testmodels.ModelReference) (int8Out, fp32Out map[string]*compiler.Tensor, listing string, err error) {
	t.Helper()
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		t.Fatal(err)
	}
	vocab, aerr := strconv.Atoi(g.Meta["vocab_size"])
	if aerr != nil {
		vocab = int(g.Initializers[findWordTable(t, g)].Shape[0])
	}
	stats, err := calib.Collect(g, calibBatches(ref, vocab, 8), calib.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := g.Clone()
	if err := passes.Run(q, passes.QuantPipeline(stats, passes.QuantOptions{Alpha: 0.5}), passes.Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	it, err := interp.New(g)
	if err != nil {
		t.Fatal(err)
	}
	if fp32Out, err = it.Run(ref.Inputs, &interp.Options{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	prog, err := exec.Compile(q, exec.Options{})
	if err != nil {
		return nil, nil, "", err
	}
	defer prog.Close()
	if int8Out, err = prog.Run(ref.Inputs); err != nil {
		t.Fatalf("INT8 engine: %v", err)
	}
	// Positions the mask excludes hold no meaning: zero in the engine's
	// per-token outputs when it runs the batch packed, computed values in
	// the references and in padded runs. Compare the real tokens.
	compiler.ZeroMaskedOutputs(q, int8Out, ref.Inputs["attention_mask"])
	compiler.ZeroMaskedOutputs(q, fp32Out, ref.Inputs["attention_mask"])
	compiler.ZeroMaskedOutputs(q, ref.Outputs, ref.Inputs["attention_mask"])
	return int8Out, fp32Out, prog.String(), nil
}

// ffnEpilogue is the GEMM epilogue activation a hidden_act fuses into
// (qgemm.Act's String).
var ffnEpilogue = map[string]string{ActGELU: "gelu", ActGELUNew: "gelu_tanh", ActGELUTanh: "gelu_tanh", ActRELU: "relu"}

// findWordTable names the embedding table input_ids index (for ONNX
// graphs, whose Meta has no vocab_size).
func findWordTable(t *testing.T, g *compiler.Graph) string {
	t.Helper()
	for _, n := range g.Nodes {
		switch {
		case n.Op == "sqc.Embeddings":
			return n.Inputs[1]
		case n.Op == "Gather" && n.Inputs[1] == inInputIDs:
			return n.Inputs[0]
		}
	}
	t.Fatal("no word embedding table")
	return ""
}

func TestTinyFamiliesINT8(t *testing.T) {
	for _, name := range testmodels.TinyModels {
		t.Run(name, func(t *testing.T) {
			dir, ref := loadTiny(t, name)
			cfg, err := LoadConfig(filepath.Join(dir, ConfigFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, frontend := range []string{"safetensors", "onnx"} {
				var g *compiler.Graph
				var err error
				if frontend == "onnx" {
					g, err = onnx.Load(filepath.Join(dir, "model.onnx"))
				} else {
					g, err = Load(dir)
				}
				if err != nil {
					t.Fatal(err)
				}
				q, f, listing, err := int8Outputs(t, g, ref)
				if err != nil {
					t.Fatalf("%s: INT8 engine: %v", frontend, err)
				}
				// Every layer's FFN activation runs in its GEMM epilogue
				// (ALBERT: every layer of every pass).
				layers := cfg.NumLayers * max(cfg.InnerGroupNum, 1)
				if a := cfg.TokenHeadActivation(); a != "" && ffnEpilogue[a] == ffnEpilogue[cfg.FFNActivation()] {
					layers++ // the per-token head's dense fuses the same activation
				}
				if want := "act=" + ffnEpilogue[cfg.FFNActivation()]; strings.Count(listing, want) != layers {
					t.Errorf("%s: %d GEMMs with %s, want one per layer (%d):\n%s", frontend, strings.Count(listing, want), want, layers, listing)
				}
				for _, out := range ref.OutputNames() {
					cosFP32 := testmodels.Cosine(q[out], f[out])
					cosTorch := testmodels.Cosine(q[out], ref.Outputs[out])
					t.Logf("%s %s (%s): INT8 cosine %.5f vs FP32, %.5f vs PyTorch; max |INT8 - FP32| %.3g",
						frontend, out, cfg.FFNActivation(), cosFP32, cosTorch, testmodels.TensorMaxAbsDiff(q[out], f[out]))
					// The canonical FP32 graph (FFN activation fused into
					// sqc.Gelu) still matches PyTorch.
					d := testmodels.TensorMaxAbsDiff(f[out], ref.Outputs[out])
					t.Logf("%s %s (%s): canonical FP32 max |sqc - torch| %.3g", frontend, out, cfg.FFNActivation(), d)
					if !(d <= referenceTolerance) {
						t.Errorf("%s %s: canonical FP32 differs from PyTorch by %.3g > %g", frontend, out, d, referenceTolerance)
					}
					if !(cosFP32 >= int8MinCosine) {
						t.Errorf("%s %s: INT8 cosine vs FP32 %.5f < %g", frontend, out, cosFP32, int8MinCosine)
					}
				}
			}
		})
	}
}

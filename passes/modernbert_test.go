package passes

import (
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestModernBERTCanonicalises: the tiny ModernBERT models, from the HF
// folder and the ONNX export (rotary
// embeddings, a fused Wqkv split per head, sliding windows on layers 1
// and 2, a GLU feed-forward, no biases) canonicalise into the fused
// vocabulary: per layer three Q/K/V Linears, two sqc.Rotary, one
// sqc.Attention (the local layers' with the window as a bias proved
// position-only), the Wo projection and the GLU's two halves and output;
// the rotary tables proved position-only; the word lookup an
// sqc.Embeddings. The canonical graph keeps PyTorch's outputs at every
// position, padded rows included, which the saturating bias + mask sum
// makes exact for rows every key is masked from.
func TestModernBERTCanonicalises(t *testing.T) {
	const layers, local = 4, 2
	for _, name := range testmodels.TinyModernBertModels {
		t.Run(name, func(t *testing.T) {
			dir := testmodels.TinyDir(t, name)
			ref, err := testmodels.LoadModelReference(dir)
			if err != nil {
				t.Fatal(err)
			}
			cfg, _, graphs := tinyGraphs(t, name)
			for _, frontend := range []string{"hf", "onnx"} {
				g := graphs[frontend]
				t.Logf("%s:", frontend)
				h := OpHistogram(g)
				t.Logf("%s", histogramString(h))
				head, pooled := 0, 0 // the classifier's dense and classifier Linears, its mean pooling's sum
				if len(ref.OutputNames()) == 1 && ref.OutputNames()[0] == "logits" {
					head, pooled = 2, 1
				}
				if cfg.IsTokenClassifier() || cfg.IsMaskedLM() {
					pooled = 0 // the head runs on every token
				}
				squeezes := 0
				if cfg.IsQuestionAnswering() {
					// The prediction head's dense, then classifier's two
					// columns as Linears of their own, on every token;
					// each column squeezed into its output.
					head, squeezes = 3, 2
				}
				for op, want := range map[string]int{"sqc.Linear": 7*layers + head, "sqc.Rotary": 2 * layers, "sqc.Attention": layers,
					"sqc.Embeddings": 1, "sqc.AttentionMask": 1, "Softmax": 0, "Neg": 0, "Squeeze": squeezes, "sqc.MaskedSum": pooled} {
					if h[op] != want {
						t.Errorf("%d %s, want %d", h[op], op, want)
					}
				}
				biased := 0
				for _, n := range g.Nodes {
					switch n.Op {
					case "sqc.Attention":
						if compiler.AttentionBiasByPosition(n) {
							biased++
						}
					case "sqc.Rotary":
						if !compiler.RotaryTablesByPosition(n) {
							t.Errorf("%s: tables not proved position-only", n.Name)
						}
					}
				}
				if biased != local {
					t.Errorf("%d attentions with a position-only bias, want the %d local layers'", biased, local)
				}
				checkEncoderOps(t, g, "Mul", "sqc.Rotary", "sqc.AttentionMask")
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
						t.Errorf("canonical %s differs from PyTorch by %.3g > %g", o, d, logitTolerance)
					} else {
						t.Logf("canonical %s: max |sqc - torch| = %.3g", o, d)
					}
				}
			}
		})
	}
}

package passes

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestModernBERTCanonicalises: the tiny ModernBERT exports (rotary
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
	for _, name := range testmodels.TinyONNXModels {
		t.Run(name, func(t *testing.T) {
			dir := testmodels.TinyDir(t, name)
			ref, err := testmodels.LoadModelReference(dir)
			if err != nil {
				t.Fatal(err)
			}
			g, err := onnx.Load(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			if err := RunPipeline(g, Options{CheckIR: true}); err != nil {
				t.Fatal(err)
			}
			h := OpHistogram(g)
			t.Logf("%s", histogramString(h))
			head := 0 // the classifier's dense and classifier Linears
			if len(ref.OutputNames()) == 1 && ref.OutputNames()[0] == "logits" {
				head = 2
			}
			// The two MatMuls left: the rotary tables' inverse frequencies
			// times the positions (global and local theta).
			for op, want := range map[string]int{"sqc.Linear": 7*layers + head, "sqc.Rotary": 2 * layers, "sqc.Attention": layers,
				"sqc.Embeddings": 1, "sqc.AttentionMask": 1, "Softmax": 0, "Neg": 0, "Squeeze": 0, "MatMul": 2} {
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
			checkPerTokenOps(t, g, "sqc.Linear", "LayerNormalization", "sqc.Gelu", "sqc.Attention", "Add", "Mul", "sqc.Rotary")
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
		})
	}
}

// checkPerTokenOps fails if a node that reads per-token data (a value
// computed from a LayerNorm of [batch, seq, hidden] rows, Shape aside) up
// to the last such LayerNorm is not one of allowed.
func checkPerTokenOps(t *testing.T, g *compiler.Graph, allowed ...string) {
	t.Helper()
	last := -1
	for i, n := range g.Nodes {
		if v := valueInfo(g, n.Inputs[0]); n.Op == "LayerNormalization" && v != nil && len(v.Shape) == 3 {
			last = i
		}
	}
	activation := map[string]bool{}
	for _, n := range g.Nodes[:last+1] {
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

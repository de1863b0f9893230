package exec

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
)

// TestModernBERTMeanPoolingRunsPadded: the ModernBERT classifier with
// classifier_pooling mean pools in the graph (Mul by the mask, ReduceSum,
// Div), which has no packed form: its schedule runs padded, saying why,
// and each sequence of a mixed batch still gets its bits alone, from the
// HF folder and the ONNX export, FP32 and INT8. (The base model packs:
// TestPackedRoBERTaMatchesAlone.)
func TestModernBERTMeanPoolingRunsPadded(t *testing.T) {
	const pad = 0 // make_modernbert.py's pad_token_id
	dir := testmodels.TinyDir(t, testmodels.TinyModernBertCls)
	exs := padIDExamples(pad, 140)
	for _, path := range []string{dir, filepath.Join(dir, "model.onnx")} {
		var g *compiler.Graph
		var err error
		if path == dir {
			g, err = hf.Load(dir)
		} else {
			g, err = onnx.Load(path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := passes.RunPipeline(g, passes.Options{CheckIR: true}); err != nil {
			t.Fatal(err)
		}
		q := quantizeForTest(t, g, &testmodels.Reference{Examples: exs})
		for _, c := range []struct {
			name string
			g    *compiler.Graph
		}{{"fp32", g}, {"int8", q}} {
			t.Run(fmt.Sprintf("%s/%s", filepath.Base(path), c.name), func(t *testing.T) {
				p := compile(t, c.g, nil, 2)
				if r := p.PackingReason(); !strings.Contains(r, "no packed form") {
					t.Fatalf("packing reason %q, want the mean pooling's", r)
				}
				got := run(t, p, padWith(t, c.g, exs, pad))
				for b := range exs {
					sameRealTokens(t, "batch vs alone", exs, got, run(t, p, padWith(t, c.g, exs[b:b+1], pad)), b)
				}
			})
		}
	}
}

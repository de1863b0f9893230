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

// TestPackedModernBERTMatchesAlone: ModernBERT's rotary tables and its
// sliding windows (a bias beside the padding mask) are proved to depend
// on positions only, so the tiny base model, from the HF folder and the
// ONNX export, FP32 and INT8, lowers to a
// packed schedule: a mixed batch runs packed and each sequence gets the
// bits of the padded run and of its run alone. The classifier pools the
// mean of the tokens in the graph (Mul by the mask, ReduceSum, Div),
// which has no packed form: it runs padded, sqc inspect says why, and
// each sequence still gets its bits alone.
func TestPackedModernBERTMatchesAlone(t *testing.T) {
	vs := endVariants()
	const pad = 0 // make_modernbert.py's pad_token_id
	for _, name := range testmodels.TinyModernBertModels {
		dir := testmodels.TinyDir(t, name)
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
				for vi := range vs {
					for _, threads := range []int{1, 3} {
						t.Run(fmt.Sprintf("%s/%s/%s/%v/T=%d", name, filepath.Base(path), c.name, vs[vi].ISA, threads), func(t *testing.T) {
							p := compile(t, c.g, &vs[vi], threads)
							in := padWith(t, c.g, exs, pad)
							got := run(t, p, in)
							if name == testmodels.TinyModernBertCls {
								if r := p.PackingReason(); !strings.Contains(r, "no packed form") {
									t.Fatalf("packing reason %q, want the mean pooling's", r)
								}
							} else {
								if r := p.PackingReason(); r != "" {
									t.Fatalf("schedule runs padded: %s", r)
								}
								if p.run.offsets == nil {
									t.Fatal("the mixed batch ran padded")
								}
								padded, err := Compile(explicitQuant(t, c.g), Options{Variant: &vs[vi], Threads: threads, Padded: true})
								if err != nil {
									t.Fatal(err)
								}
								defer padded.Close()
								sameRealTokens(t, "packed vs padded", exs, got, run(t, padded, in), -1)
							}
							for b := range exs {
								alone := padWith(t, c.g, exs[b:b+1], pad)
								sameRealTokens(t, "batch vs alone", exs, got, run(t, p, alone), b)
							}
						})
					}
				}
			}
		}
	}
}

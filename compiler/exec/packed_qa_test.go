package exec

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
)

// TestPackedQuestionAnswering: a question answerer's start and end logits,
// its qa_outputs' columns squeezed to [batch, seq] by generic steps, run
// packed (the squeezes act on trailing axes: passes.NegateTrailingAxes
// writes the export's axis 2 as -1), and each sequence of the tiny models'
// mixed batch gets the bits it gets alone, its padding positions zero, in
// FP32 and INT8, from the folder and the export.
func TestPackedQuestionAnswering(t *testing.T) {
	for _, name := range testmodels.TinyQAModels {
		dir := testmodels.TinyDir(t, name)
		ref, err := testmodels.LoadModelReference(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, from := range []string{"folder", "onnx"} {
			var g *compiler.Graph
			if from == "onnx" {
				g, err = onnx.Load(filepath.Join(dir, "model.onnx"))
			} else {
				g, err = hf.Load(dir)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := passes.RunPipeline(g, passes.Options{}); err != nil {
				t.Fatal(err)
			}
			q := g.Clone()
			if err := passes.Run(q, passes.QuantPipeline(nil, passes.QuantOptions{Act: compiler.QLinearDynamic}), passes.Options{CheckIR: true}); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				mode string
				g    *compiler.Graph
			}{{"fp32", g}, {"int8", q}} {
				t.Run(fmt.Sprintf("%s/%s/%s", name, from, c.mode), func(t *testing.T) {
					p := compile(t, c.g, nil, 2)
					if r := p.PackingReason(); r != "" {
						t.Fatalf("schedule runs padded: %s", r)
					}
					in := map[string]*compiler.Tensor{}
					for _, v := range c.g.Inputs {
						in[v.Name] = ref.Inputs[v.Name]
					}
					got := run(t, p, in)
					if p.run.offsets == nil {
						t.Fatal("the mixed batch ran padded")
					}
					batch, seq := int(in["input_ids"].Shape[0]), int(in["input_ids"].Shape[1])
					mask := in["attention_mask"].I64
					for b := range batch {
						n := 0
						for n < seq && mask[b*seq+n] != 0 {
							n++
						}
						alone := map[string]*compiler.Tensor{}
						for k, v := range in {
							tt := compiler.NewTensor(compiler.Int64, 1, int64(n))
							copy(tt.I64, v.I64[b*seq:b*seq+n])
							alone[k] = tt
						}
						want := run(t, p, alone)
						for _, out := range []string{"start_logits", "end_logits"} {
							row := got[out].F32[b*seq : (b+1)*seq]
							for i, x := range want[out].F32 {
								if math.Float32bits(row[i]) != math.Float32bits(x) {
									t.Fatalf("sequence %d (%d tokens) %s[%d] = %g in the batch, %g alone", b, n, out, i, row[i], x)
								}
							}
							for i, x := range row[n:] {
								if x != 0 {
									t.Fatalf("sequence %d %s: padding position %d is %g, want 0", b, out, n+i, x)
								}
							}
						}
					}
				})
			}
		}
	}
}

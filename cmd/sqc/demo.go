package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/demomodel"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// demoSentences are classified when `sqc demo` is given no --texts.
var demoSentences = []string{
	"a gorgeous, witty, seductive movie.",
	"the plot is nothing but boilerplate clichés from start to finish.",
	"an utterly charming and hilarious film that reminded me why i love the movies.",
	"it's a dull, lifeless and instantly forgettable affair.",
	"not as bad as i feared, but hardly the triumph its trailer promised.",
	"the performances are strong enough to carry a thin script.",
}

// demoTimedRounds is how many times each engine classifies the sentences
// for the timing; the median round is reported.
const demoTimedRounds = 15

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "compile the embedded default model (" + demomodel.Name + ") to INT8 and classify sentences, FP32 and INT8 side by side",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "texts", Usage: "one text per line, or a .tsv with a `sentence` column"},
		},
		Action: func(c *cli.Context) error {
			w, stderr := c.App.Writer, c.App.ErrWriter
			tmp, err := os.MkdirTemp("", "sqc-demo-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			dir, err := demomodel.Extract(tmp)
			if err != nil {
				return err
			}
			calibPath := filepath.Join(tmp, "calib.txt")
			if err := os.WriteFile(calibPath, []byte(demomodel.Calibration), 0o644); err != nil {
				return err
			}
			var exs []dataio.Example
			if p := c.String("texts"); p != "" {
				if exs, err = dataio.ReadTexts(p); err != nil {
					return err
				}
			} else {
				for i, s := range demoSentences {
					exs = append(exs, dataio.Example{Text: s, Label: -1, Line: i + 1})
				}
			}
			g, err := frontend.Load(dir)
			if err != nil {
				return err
			}
			tok, err := tokenizer.Load(dir)
			if err != nil {
				return err
			}
			enc, err := infer.Encode(tok, exs)
			if err != nil {
				return err
			}

			start := time.Now()
			cfg := &int8Config{calibPath: calibPath, calibSamples: defaultCalibSamples, quant: passes.QuantOptions{Alpha: 0.5, Act: compiler.QLinearStatic}}
			b, err := buildInt8(g, tok, cfg, stderr) // canonicalises g in place
			if err != nil {
				return err
			}
			int8Exec, closeInt8, err := newInt8Executor(b.int8)
			if err != nil {
				return err
			}
			defer closeInt8()
			compileTime := time.Since(start)
			fp32, err := interp.New(g)
			if err != nil {
				return err
			}

			ctx := context.Background()
			run := func(ex infer.Executor) ([]infer.Result, time.Duration, error) {
				var res []infer.Result
				times := make([]time.Duration, demoTimedRounds)
				for i := range times {
					t0 := time.Now()
					if res, err = infer.Run(ctx, g, ex, enc, infer.Options{}); err != nil {
						return nil, 0, err
					}
					times[i] = time.Since(t0)
				}
				slices.Sort(times)
				return res, times[len(times)/2], nil
			}
			fpRes, fpTime, err := run(infer.Interpreter(fp32.Run))
			if err != nil {
				return err
			}
			qRes, qTime, err := run(int8Exec)
			if err != nil {
				return err
			}

			fmt.Fprintf(w, "sqc demo: %s (embedded DistilBERT, 2 layers x 128, SST-2 sentiment)\n", demomodel.Name)
			fmt.Fprintf(w, "INT8 build (canonicalise, calibrate on %d sentences, SmoothQuant alpha 0.5, quantise, fuse, pack): %v\n\n",
				countLines(demomodel.Calibration), compileTime.Round(time.Millisecond))
			fmt.Fprintf(w, "%-22s %-22s %s\n", "FP32 (P)", "INT8 (P)", "sentence")
			for i := range exs {
				fl, fp := classOf(g.Meta, fpRes[i]["logits"].F32)
				ql, qp := classOf(g.Meta, qRes[i]["logits"].F32)
				fmt.Fprintf(w, "%-22s %-22s %s\n", fmt.Sprintf("%s %.3f", fl, fp), fmt.Sprintf("%s %.3f", ql, qp), exs[i].Text)
			}
			fmt.Fprintf(w, "\nmedian of %d rounds, %d sentences per round: FP32 reference interpreter (plain Go) %v, INT8 (%s) %v: %.1fx\n",
				demoTimedRounds, len(exs), fpTime.Round(time.Microsecond), describeInt8(int8Exec), qTime.Round(time.Microsecond),
				float64(fpTime)/float64(qTime))
			fmt.Fprintf(w, "The same INT8 program as a standalone Go package: sqc compile (see examples/sentiment).\n")
			return nil
		},
	}
}

// describeInt8 names the kernels the INT8 engine runs, when it says.
func describeInt8(ex infer.Executor) string {
	if d, ok := ex.(interface{ String() string }); ok {
		first, _, _ := strings.Cut(d.String(), "\n")
		return first
	}
	return "INT8 engine"
}

func countLines(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

// classOf names the argmax class from the model's id2label metadata and
// gives its softmax probability.
func classOf(meta map[string]string, logits []float32) (string, float64) {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	sum := 0.0
	for _, v := range logits {
		sum += math.Exp(float64(v - logits[best]))
	}
	label := fmt.Sprintf("class %d", best)
	if l, ok := meta[fmt.Sprintf("id2label.%d", best)]; ok {
		label = l
	}
	return label, 1 / sum
}

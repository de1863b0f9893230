package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/demomodel"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// demoSentences are classified when `sqc demo` is given no --texts.
var demoSentences = []string{
	"a gorgeous, witty, seductive movie.",
	"the plot is nothing but boilerplate clichés from start to finish.",
	"an utterly charming and hilarious film that reminded me why i love the movies.",
	"it's a dull, lifeless and instantly forgettable affair.",
}

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "classify sentences with the embedded default model (" + demomodel.Name + ")",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "texts", Usage: "one text per line, or a .tsv with a `sentence` column"},
		},
		Action: func(c *cli.Context) error {
			tmp, err := os.MkdirTemp("", "sqc-demo-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			dir, err := demomodel.Extract(tmp)
			if err != nil {
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
			ex, err := interp.New(g)
			if err != nil {
				return err
			}
			start := time.Now()
			res, err := infer.Run(context.Background(), g, infer.Interpreter(ex.Run), enc, infer.Options{})
			if err != nil {
				return err
			}
			el := time.Since(start)
			w := c.App.Writer
			fmt.Fprintf(w, "model %s (embedded), FP32 reference interpreter: %d sentences in %v\n", demomodel.Name, len(exs), el.Round(time.Microsecond))
			for i, r := range res {
				logits := r["logits"].F32
				label := labelOf(g.Meta, logits)
				fmt.Fprintf(w, "%-9s %+.3f %+.3f  %s\n", label, logits[0], logits[1], exs[i].Text)
			}
			return nil
		},
	}
}

// labelOf names the argmax class from the model's id2label metadata.
func labelOf(meta map[string]string, logits []float32) string {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	if l, ok := meta[fmt.Sprintf("id2label.%d", best)]; ok {
		return l
	}
	return fmt.Sprintf("class %d", best)
}

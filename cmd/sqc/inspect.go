package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:  "inspect",
		Usage: "show a model's op histogram, parameter count and input/output shapes, as loaded or after sqc's passes",
		Description: "Without pass flags, inspect shows the model as loaded. --after, --dump-all, --check-ir and --int8 run the\n" +
			"passes first: canonicalisation, then with --int8 calibration, SmoothQuant, quantisation and fusion; and\n" +
			"report the activation memory of the result (exec.PlanMemory of its lowered schedule at --max-batch x --max-seq:\n" +
			"the one arena the in-process engine and a generated package allocate).",
		ArgsUsage: "MODEL (an .onnx file or a HuggingFace directory)",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "graph", Usage: "print the whole graph in sqc's textual IR"},
			&cli.StringFlag{Name: "after", Usage: "run the passes up to and including the first one named `PASS`, and show that graph"},
			&cli.StringFlag{Name: "dump-all", Usage: "write the graph after every pass to `DIR` as NN-Pass.txt (00-Input.txt: as loaded)"},
			&cli.BoolFlag{Name: "check-ir", Usage: "verify the graph after every pass, naming the pass that broke it"},
			&cli.BoolFlag{Name: "int8", Usage: "calibrate, SmoothQuant, quantise and fuse: the graph sqc compile generates code from"},
			&cli.IntFlag{Name: "max-batch", Value: defaultMaxBatch, Usage: "sequences per forward pass, for the activation memory plan"},
			&cli.IntFlag{Name: "max-seq", Value: defaultMaxSeq, Usage: "tokens per sequence, for the activation memory plan"},
			vocabFlag(),
		}, int8Flags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError{"inspect takes one MODEL argument"}
			}
			model := c.Args().First()
			g, err := frontend.Load(model)
			if err != nil {
				return err
			}
			if err := g.InferShapes(); err != nil {
				return err
			}
			w := c.App.Writer
			ran := c.IsSet("after") || c.IsSet("dump-all") || c.Bool("check-ir") || c.Bool("int8")
			if ran {
				if g, err = inspectPasses(c, model, g); err != nil {
					return err
				}
			}
			if c.Bool("graph") {
				_, err := fmt.Fprint(w, g.Text())
				return err
			}
			if _, err := fmt.Fprint(w, g.Summary().String()); err != nil {
				return err
			}
			if ran {
				_, err := fmt.Fprintln(w, memoryLine(g, c.Int("max-batch"), c.Int("max-seq")))
				return err
			}
			return nil
		},
	}
}

// memoryLine is inspect's summary of g's lowered schedule: whether it
// runs batches packed, and its memory plan: the arena the in-process engine carves its buffers from at
// those bounds and a generated package allocates (u8 copies of quantised
// activations included; the attention scratch, which depends on the
// number of workers, not). A graph part way through canonicalisation may
// not lower, or have values of unknown size.
func memoryLine(g *compiler.Graph, maxBatch, maxSeq int) string {
	s, err := exec.Lower(g)
	var p *exec.MemoryPlan
	if err == nil {
		p, err = exec.PlanMemory(s, maxBatch, maxSeq)
	}
	if err != nil {
		return "activations: not planned: " + err.Error()
	}
	line := fmt.Sprintf("activations at batch %d x sequence %d: peak %s (%d bytes) in one arena, naive sum of all %d intermediates %s (%d bytes)",
		maxBatch, maxSeq, binaryBytes(p.ArenaBytes), p.ArenaBytes, len(p.Slots), binaryBytes(p.NaiveBytes), p.NaiveBytes)
	if n := len(p.Unplanned); n > 0 {
		line += fmt.Sprintf("; %d of unknown size not planned (first: %s)", n, s.Slots()[p.Unplanned[0]])
	}
	if why := s.PackingReason(); why != "" {
		return line + "\nbatches: padded to the longest sequence (" + why + ")"
	}
	return line + "\nbatches: packed (padding-free: real tokens only, attention per sequence)"
}

// binaryBytes writes a byte count in KiB, MiB or GiB.
func binaryBytes(n int64) string {
	v, unit := float64(n), "B"
	for _, u := range []string{"KiB", "MiB", "GiB"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	if unit == "B" {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

// inspectPasses runs the pipeline on g under inspect's flags and returns
// the graph to show.
//
// The stages are those of `sqc compile`: passes.Pipeline(); with --int8,
// buildInt8 (calibration, then passes.QuantPipeline: SmoothQuant,
// Quantize, the fusions, a sweep; verified after every pass always).
// --after may name a pass of any stage (the first pass
// of that name). buildInt8 keeps the graphs after SmoothQuant and after
// Quantize, which --after and --dump-all show; the passes after Quantize
// need no statistics, so for --after and --dump-all they are run again
// from buildInt8's quantised graph, one by one (and must reproduce its
// final graph). The memory plan is not a pass: memoryLine plans the
// schedule the result lowers to.
func inspectPasses(c *cli.Context, model string, g *compiler.Graph) (*compiler.Graph, error) {
	int8 := c.Bool("int8")
	var cfg *int8Config
	if int8 {
		var err error
		if cfg, err = parseInt8Flags(c, "", c.App.ErrWriter); err != nil {
			return nil, err
		}
	}
	maxBatch, maxSeq := c.Int("max-batch"), c.Int("max-seq")
	if maxBatch < 1 || maxSeq < 1 {
		return nil, usageError{"--max-seq and --max-batch must be at least 1"}
	}
	canonical := passes.Pipeline()
	var quant []passes.Pass
	if int8 {
		quant = passes.QuantPipeline(nil, cfg.quant)
	}
	after := c.String("after")
	if after != "" && !hasPassNamed(canonical, after) && !hasPassNamed(quant, after) {
		var names []string
		for _, list := range [][]passes.Pass{canonical, quant} {
			for _, p := range list {
				names = append(names, p.Name)
			}
		}
		return nil, usageError{fmt.Sprintf("--after %q: no such pass (passes in order: %s)", after, strings.Join(names, ", "))}
	}
	r := &stageRunner{checkIR: c.Bool("check-ir"), after: after, dir: c.String("dump-all")}
	if r.dir != "" {
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return nil, fmt.Errorf("--dump-all: %w", err)
		}
	}
	if err := r.run(g, canonical); err != nil || r.stopped {
		return g, err
	}
	if int8 {
		return inspectINT8(c, model, g, cfg, quant, r)
	}
	return g, nil
}

// inspectINT8 is inspectPasses' INT8 stage on the canonical graph g.
func inspectINT8(c *cli.Context, model string, g *compiler.Graph, cfg *int8Config, quant []passes.Pass, r *stageRunner) (*compiler.Graph, error) {
	var tok *tokenizer.Tokenizer
	if cfg.needsTokenizer() {
		var err error
		if tok, err = loadTokenizer(model, c.String("vocab")); err != nil {
			return nil, err
		}
	}
	// g is canonical already: buildInt8's own run of the pipeline finds
	// nothing to do.
	b, err := buildInt8(g, tok, cfg, c.App.ErrWriter)
	if err != nil {
		return nil, err
	}
	for _, st := range []struct {
		pass string
		g    *compiler.Graph
	}{{"SmoothQuant", b.smoothed}, {"Quantize", b.quantized}} {
		if err := r.dumpGraph(st.g, st.pass); err != nil {
			return nil, err
		}
		if r.after == st.pass {
			r.stopped = true
			return st.g, nil
		}
	}
	i := slices.IndexFunc(quant, func(p passes.Pass) bool { return p.Name == "Quantize" })
	rest := quant[i+1:]
	if r.dir == "" && !hasPassNamed(rest, r.after) {
		return b.int8, nil
	}
	g = b.quantized.Clone()
	if err := r.run(g, rest); err != nil || r.stopped {
		return g, err
	}
	if g.Text() != b.int8.Text() {
		return nil, fmt.Errorf("internal error: the passes after Quantize, run again, did not reproduce the INT8 graph")
	}
	return g, nil
}

func hasPassNamed(list []passes.Pass, name string) bool {
	return slices.ContainsFunc(list, func(p passes.Pass) bool { return p.Name == name })
}

// stageRunner runs the pipeline's stages one after another with inspect's
// options: one dump directory numbered across the stages, and --after
// honoured in whichever stage holds the pass.
type stageRunner struct {
	checkIR bool
	level   compiler.VerifyLevel // what the graph meets before the stage (passes.Options.Level)
	after   string
	dir     string
	next    int  // number of the next dump file
	stopped bool // --after's pass has run
}

func (r *stageRunner) run(g *compiler.Graph, list []passes.Pass) error {
	opts := passes.Options{CheckIR: r.checkIR, Level: r.level}
	if hasPassNamed(list, r.after) {
		opts.StopAfter = r.after
	}
	if r.dir != "" {
		// passes.Run numbers its dumps from 00; a scratch directory beside
		// the dumps lets this stage's files be renumbered to follow the
		// previous stage's.
		tmp, err := os.MkdirTemp(r.dir, ".stage-")
		if err != nil {
			return fmt.Errorf("--dump-all: %w", err)
		}
		defer os.RemoveAll(tmp)
		opts.DumpDir = tmp
	}
	err := passes.Run(g, list, opts)
	if r.dir != "" {
		if err := r.collectDumps(opts.DumpDir, list); err != nil {
			return err
		}
	}
	r.stopped = opts.StopAfter != "" && err == nil
	return err
}

// collectDumps moves a stage's dump files into the dump directory with
// the running numbers; the stage's 00-Input.txt is kept only for the first
// stage (later ones start from the previous stage's last graph).
func (r *stageRunner) collectDumps(tmp string, list []passes.Pass) error {
	for i := 0; i <= len(list); i++ {
		name := "Input"
		if i > 0 {
			name = list[i-1].Name
		}
		src := filepath.Join(tmp, fmt.Sprintf("%02d-%s.txt", i, name))
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			continue // not reached (--after) or not written (an error)
		}
		if i == 0 && r.next > 0 {
			continue
		}
		if err := os.Rename(src, filepath.Join(r.dir, fmt.Sprintf("%02d-%s.txt", r.next, name))); err != nil {
			return fmt.Errorf("--dump-all: %w", err)
		}
		r.next++
	}
	return nil
}

// dumpGraph writes g as the next dump file, after the named pass (a pass
// run elsewhere, by buildInt8).
func (r *stageRunner) dumpGraph(g *compiler.Graph, pass string) error {
	if r.dir == "" {
		return nil
	}
	path := filepath.Join(r.dir, fmt.Sprintf("%02d-%s.txt", r.next, pass))
	if err := os.WriteFile(path, []byte(g.Text()), 0o644); err != nil {
		return fmt.Errorf("--dump-all: %w", err)
	}
	r.next++
	return nil
}

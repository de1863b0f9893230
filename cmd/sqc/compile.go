package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/codegen"
	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// Defaults of `sqc compile`'s size limits: 128 tokens covers sentence
// classification (the longest SST-2 sentence is 66 tokens), and 16
// sequences of 128 tokens keep one workspace of a BERT-base-sized model
// under ~100 MB.
const (
	defaultMaxSeq   = 128
	defaultMaxBatch = 16
)

func compileCommand() *cli.Command {
	return &cli.Command{
		Name:  "compile",
		Usage: "compile a model into a standalone Go package (INT8 schedule, embedded weights)",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Usage: "an .onnx file or a HuggingFace directory"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "directory of the generated package (replaced as a whole; refused if it holds files sqc did not generate)"},
			&cli.StringFlag{Name: "package", Usage: "Go package name (default: the base name of --out)"},
			&cli.IntFlag{Name: "max-seq", Value: defaultMaxSeq, Usage: "longest sequence the package accepts, in tokens"},
			&cli.IntFlag{Name: "max-batch", Value: defaultMaxBatch, Usage: "sequences per forward pass (Run splits larger batches)"},
			&cli.StringFlag{Name: "target", Value: "auto", Usage: "kernel family ceiling: auto (fastest the CPU allows at run time), amx, vnni, avx2 or go"},
			&cli.BoolFlag{Name: "check-ir", Usage: "verify the graph after every pass, naming the pass that broke it"},
			vocabFlag(),
		}, int8Flags()...),
		Action: func(c *cli.Context) error {
			out := c.String("out")
			pkgName := c.String("package")
			if pkgName == "" {
				pkgName = filepath.Base(filepath.Clean(out))
			}
			target := c.String("target")
			if !slicesContains(codegen.Targets, target) {
				return usageError{fmt.Sprintf("--target %q: want one of %s", target, strings.Join(codegen.Targets, ", "))}
			}
			if c.Int("max-seq") < 1 || c.Int("max-batch") < 1 {
				return usageError{"--max-seq and --max-batch must be at least 1"}
			}
			cfg, err := parseInt8Flags(c, "", c.App.ErrWriter)
			if err != nil {
				return err
			}
			model := c.String("model")
			g, err := frontend.Load(model)
			if err != nil {
				return err
			}
			tok, tokSrc, err := compileTokenizer(model, c.String("vocab"))
			if err != nil {
				return err
			}
			head, err := loadModelHead(model, "", g)
			if err != nil {
				return err
			}
			if tok, err = head.tokenizer(tok); err != nil {
				return err
			}
			checkIR := c.Bool("check-ir")
			if checkIR {
				// buildInt8 verifies the passes after canonicalisation
				// (SmoothQuant, quantisation, fusion) always, but
				// canonicalises unchecked; canonical already, g passes
				// through its pipeline unchanged.
				if err := passes.RunPipeline(g, passes.Options{CheckIR: true}); err != nil {
					return err
				}
			}
			b, err := buildInt8(g, tok, cfg, c.App.ErrWriter)
			if err != nil {
				return err
			}
			// Lowering only: generating code starts no engine.
			prog, err := exec.Lower(b.int8)
			if err != nil {
				return err
			}
			summary := cfg.describe()
			if cfg.calibPath != "" {
				summary += fmt.Sprintf(", calibrated on up to %d inputs of %s", cfg.calibSamples, filepath.Base(cfg.calibPath))
			}
			pkg, err := codegen.Generate(prog, codegen.Options{
				Package: pkgName, ModelName: g.Name, Summary: summary, Target: target,
				MaxBatch: c.Int("max-batch"), MaxSeq: head.maxSeq(c.Int("max-seq"), c.IsSet("max-seq"), c.App.ErrWriter),
				Labels: labels(g), Tokenizer: tokSrc, MaxTokens: head.maxTokens(), Head: head.codegen(),
			})
			if err != nil {
				if errors.Is(err, compiler.ErrInvalidRequest) {
					return usageError{err.Error()}
				}
				return err
			}
			if err := codegen.Write(out, pkg); err != nil {
				return err
			}
			total := 0
			for _, data := range pkg.Files {
				total += len(data)
			}
			fmt.Fprintf(c.App.Writer, "sqc: wrote package %s to %s: %d files, %d bytes, %d schedule steps (%s)\n",
				pkgName, out, len(pkg.Files), total, pkg.Steps, summary)
			return nil
		},
	}
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// labels returns the class names of config.json's id2label (graph meta
// "id2label.N"), by index; nil when they are absent or have gaps.
func labels(g *compiler.Graph) []string {
	byIndex := map[int]string{}
	for k, v := range g.Meta {
		if rest, ok := strings.CutPrefix(k, "id2label."); ok {
			if i, err := strconv.Atoi(rest); err == nil && i >= 0 {
				byIndex[i] = v
			}
		}
	}
	idx := make([]int, 0, len(byIndex))
	for i := range byIndex {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]string, len(idx))
	for j, i := range idx {
		if i != j {
			return nil
		}
		out[j] = byIndex[i]
	}
	return out
}

// compileTokenizer reads the model's tokenizer for the generated package:
// vocab (--vocab) if given, else the file `sqc run` loads beside the model
// (tokenizer.json, vocab.txt, a SentencePiece model or vocab.json with
// merges.txt, with tokenizer_config.json's settings), which the package
// embeds and rebuilds identically. A model without one gets a package without the text API
// (Run on token ids only).
func compileTokenizer(model, vocab string) (*tokenizer.Tokenizer, *tokenizer.Source, error) {
	var src *tokenizer.Source
	var err error
	dir := frontend.Dir(model)
	switch {
	case vocab != "":
		src, err = tokenizer.ReadSourceFile(vocab)
	case tokenizer.HasSource(dir):
		src, err = tokenizer.ReadSource(dir)
	default:
		return nil, nil, nil // tok nil: calibration then needs token ids
	}
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenizer.FromSource(src) // what the package rebuilds
	if err != nil {
		where := dir // FromSource's errors name the file by its base name
		if vocab != "" {
			where = filepath.Dir(vocab)
		}
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	return tok, src, nil
}

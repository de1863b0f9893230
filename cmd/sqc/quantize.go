package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// The INT8 build shared by `sqc run --int8` and `sqc eval`: canonicalise,
// calibrate on --calib with the FP32 interpreter, SmoothQuant, quantise.

// Calibration defaults.
const (
	// defaultCalibSamples sentences, half of the 512 SmoothQuant's paper
	// calibrates on. Measured on SST-2 dev (alpha 0.5): agreement stays
	// 100% for both models and modes, but static ranges from 256 train
	// sentences clip a few distilbert-tiny dev sentences (mean logits
	// cosine 0.99948, min 0.55, against 0.999988 and 0.993 with 512):
	// give --calib-samples 512 for static activations where it matters.
	defaultCalibSamples = 256
	// calibBatch sentences per interpreter run (length-sorted, so padding
	// is small; padded tokens are left out of the statistics anyway).
	calibBatch = 32
	// searchRows tokens of every activation are kept for --alpha auto: the
	// search replays them through the INT8 Linear for each alpha.
	searchRows = 512
	// defaultCalibFile is looked for beside the data file when --calib is
	// absent: the training split of the GLUE layout, never the data being
	// evaluated.
	defaultCalibFile = "train.tsv"
)

// int8Flags are the flags of every command that builds an INT8 graph.
func int8Flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "calib", Usage: "calibration inputs: one text per line, a .tsv with a `sentence` column, or a .jsonl of token ids (default: train.tsv beside the input file)"},
		&cli.IntFlag{Name: "calib-samples", Value: defaultCalibSamples, Usage: "calibrate on the first N inputs of --calib"},
		&cli.StringFlag{Name: "alpha", Value: "0.5", Usage: "SmoothQuant migration strength in [0, 1] (0: no smoothing), or `auto` for a per-layer search"},
		&cli.StringFlag{Name: "act", Value: compiler.QLinearStatic, Usage: "activation quantisation: static (per tensor, from calibration) or dynamic (per token)"},
		attentionCLIFlag(),
		&cli.Float64Flag{Name: "percentile", Usage: "static ranges from the central P% of each activation's histogram (default: min/max)"},
		&cli.StringFlag{Name: "keep-fp32", Usage: "regular expression: Linear nodes whose name or output matches stay FP32 (the classifier head always does)"},
	}
}

// int8Config is what the INT8 flags say.
type int8Config struct {
	calibPath    string
	calibSamples int
	quant        passes.QuantOptions
}

// parseInt8Flags reads the INT8 flags; inputPath is the file holding the
// inputs to run or evaluate, beside which the default calibration file is
// looked for.
func parseInt8Flags(c *cli.Context, inputPath string, stderr io.Writer) (*int8Config, error) {
	cfg := &int8Config{calibPath: c.String("calib"), calibSamples: c.Int("calib-samples")}
	switch a := c.String("alpha"); a {
	case "auto":
		cfg.quant.AutoAlpha = true
	default:
		v, err := strconv.ParseFloat(a, 64)
		if err != nil || v < 0 || v > 1 {
			return nil, usageError{fmt.Sprintf("--alpha %q: want a number in [0, 1] or auto", a)}
		}
		cfg.quant.Alpha = v
	}
	switch act := c.String("act"); act {
	case compiler.QLinearStatic, compiler.QLinearDynamic:
		cfg.quant.Act = act
	default:
		return nil, usageError{fmt.Sprintf("--act %q: want static or dynamic", act)}
	}
	var err error
	if cfg.quant.Attention, err = attentionFlag(c); err != nil {
		return nil, err
	}
	if p := c.Float64("percentile"); p < 0 || p > 100 {
		return nil, usageError{fmt.Sprintf("--percentile %g: want a value in (0, 100]", p)}
	} else {
		cfg.quant.Percentile = p
	}
	cfg.quant.KeepFP32 = c.String("keep-fp32")
	if _, err := regexp.Compile(cfg.quant.KeepFP32); err != nil {
		return nil, usageError{fmt.Sprintf("--keep-fp32 %q: %v", cfg.quant.KeepFP32, err)}
	}
	if cfg.calibSamples <= 0 {
		return nil, usageError{fmt.Sprintf("--calib-samples %d: want at least 1", cfg.calibSamples)}
	}
	if cfg.calibPath == "" && cfg.needsCalibration() {
		guess := filepath.Join(filepath.Dir(inputPath), defaultCalibFile)
		if inputPath == "" || !fileExists(guess) {
			return nil, usageError{"INT8 needs calibration data: give --calib FILE (sentences like the ones the model will see, e.g. the first 256 of the training split; " +
				"no " + defaultCalibFile + " beside the input file to default to)"}
		}
		cfg.calibPath = guess
		fmt.Fprintf(stderr, "sqc: calibrating on the first %d inputs of %s (give --calib to choose)\n", cfg.calibSamples, guess)
	}
	return cfg, nil
}

// needsCalibration: only dynamic quantisation without smoothing uses no
// statistics.
func (cfg *int8Config) needsCalibration() bool {
	return cfg.quant.Act != compiler.QLinearDynamic || cfg.quant.AutoAlpha || cfg.quant.Alpha != 0
}

// needsTokenizer reports whether the calibration file holds texts.
func (cfg *int8Config) needsTokenizer() bool {
	return cfg.needsCalibration() && !strings.EqualFold(filepath.Ext(cfg.calibPath), ".jsonl")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// describe is a one-line summary, e.g. "alpha 0.5, static activations".
func (cfg *int8Config) describe() string {
	alpha := strconv.FormatFloat(cfg.quant.Alpha, 'g', -1, 64)
	switch {
	case cfg.quant.AutoAlpha:
		alpha = "auto"
	case cfg.quant.Alpha == 0:
		alpha = "0 (no smoothing)"
	}
	act := "static per-tensor"
	if cfg.quant.Act == compiler.QLinearDynamic {
		act = "dynamic per-token"
	}
	return fmt.Sprintf("SmoothQuant alpha %s, %s activations", alpha, act)
}

// readCalibration reads the first n inputs of a calibration file: .jsonl
// token ids, else texts (.tsv or one per line).
func readCalibration(path string, n int) ([]dataio.Example, error) {
	var exs []dataio.Example
	var err error
	if strings.EqualFold(filepath.Ext(path), ".jsonl") {
		exs, err = dataio.ReadIDs(path)
	} else {
		exs, err = dataio.ReadTexts(path)
	}
	if err != nil {
		return nil, fmt.Errorf("calibration data: %w", err)
	}
	return exs[:min(n, len(exs))], nil
}

// calibBatches tokenises the calibration inputs and cuts them into
// length-sorted padded batches of g's inputs.
func calibBatches(g *compiler.Graph, tok *tokenizer.Tokenizer, exs []dataio.Example) ([]calib.Batch, error) {
	enc, err := infer.Encode(tok, exs)
	if err != nil {
		return nil, err
	}
	order := make([]int, len(enc))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(enc[order[a]].IDs) < len(enc[order[b]].IDs) })
	var out []calib.Batch
	for lo := 0; lo < len(order); lo += calibBatch {
		feeds, _, err := infer.MakeBatch(g, enc, order[lo:min(lo+calibBatch, len(order))])
		if err != nil {
			return nil, err
		}
		out = append(out, feeds)
	}
	return out, nil
}

// progress returns a calibration progress callback drawing a bar on
// stderr when it is a terminal, else nil.
func progress(stderr io.Writer, what string) func(done, total int) {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	var bar *progressbar.ProgressBar
	return func(done, total int) {
		if bar == nil {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(what),
				progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionSetWidth(30))
		}
		_ = bar.Set(done)
		if done == total {
			_ = bar.Finish()
			bar = nil // a recalibration draws a new bar
		}
	}
}

// calibrator collects statistics of graphs over one set of batches.
type calibrator struct {
	batches  []calib.Batch
	opts     calib.Options
	progress func(done, total int)
}

func newCalibrator(g *compiler.Graph, tok *tokenizer.Tokenizer, cfg *int8Config, stderr io.Writer) (*calibrator, error) {
	exs, err := readCalibrationPairs(cfg.calibPath, cfg.calibSamples, tok)
	if err != nil {
		return nil, err
	}
	if tok == nil && !exs[0].HasIDs {
		return nil, compiler.BadInput(cfg.calibPath, "", fmt.Errorf("calibration texts need a vocabulary (vocab.txt beside the model, or --vocab)"))
	}
	batches, err := calibBatches(g, tok, exs)
	if err != nil {
		return nil, compiler.BadInput(cfg.calibPath, "", err)
	}
	c := &calibrator{batches: batches, progress: progress(stderr, "calibrating")}
	c.opts = calib.Options{Percentile: cfg.quant.Percentile, Progress: c.progress}
	if cfg.quant.AutoAlpha {
		c.opts.SampleRows = searchRows
	}
	return c, nil
}

func (c *calibrator) collect(g *compiler.Graph) (*calib.Stats, error) {
	return calib.Collect(g, c.batches, c.opts)
}

// int8Build is the result of buildInt8.
type int8Build struct {
	// smoothed is the FP32 graph after SmoothQuant: the same function as
	// the canonical graph, with the weights and activations the INT8 graph
	// quantises (per-layer errors are measured against it).
	smoothed *compiler.Graph
	// quantized is the graph right after Quantize, before the fusions
	// that follow it merge or rename QLinears: one sqc.QLinear per
	// quantised Linear, under the Linear's node and output names.
	quantized *compiler.Graph
	// int8 is the finished INT8 graph, what runs.
	int8   *compiler.Graph
	report *passes.QuantReport
}

// buildInt8 canonicalises g in place (if it is not already), calibrates
// and quantises a copy. tok may be nil when the calibration file holds
// token ids.
func buildInt8(g *compiler.Graph, tok *tokenizer.Tokenizer, cfg *int8Config, stderr io.Writer) (*int8Build, error) {
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		return nil, err
	}
	var cal *calibrator
	var stats *calib.Stats
	if cfg.needsCalibration() {
		var err error
		if cal, err = newCalibrator(g, tok, cfg, stderr); err != nil {
			return nil, err
		}
		if stats, err = cal.collect(g); err != nil {
			return nil, fmt.Errorf("calibrating on %s: %w", cfg.calibPath, err)
		}
	}
	return quantizeCanonical(g, stats, cal, cfg.quant)
}

// quantizeCanonical runs QuantPipeline on a copy of the canonical graph g
// with statistics of g (nil when none are needed); cal, if set, serves
// recalibration.
func quantizeCanonical(g *compiler.Graph, stats *calib.Stats, cal *calibrator, opts passes.QuantOptions) (*int8Build, error) {
	if cal != nil {
		opts.Recalibrate = cal.collect
	}
	b := &int8Build{report: &passes.QuantReport{}}
	opts.Report = b.report
	if opts.AutoAlpha && opts.Kernels == nil { // the search runs the INT8 path on an engine of ours
		k, err := passes.NewKernels(0)
		if err != nil {
			return nil, err
		}
		defer k.Close()
		opts.Kernels = k
	}
	list := passes.QuantPipeline(stats, opts)
	// Run it in three stages to keep the graphs after SmoothQuant and
	// after Quantize for analysis.
	named := func(name string) int {
		return slices.IndexFunc(list, func(p passes.Pass) bool { return p.Name == name })
	}
	smooth, quant := named("SmoothQuant"), named("Quantize")
	if smooth < 0 || quant < smooth {
		return nil, fmt.Errorf("internal error: the quantisation pipeline lacks SmoothQuant or Quantize")
	}
	// level is what the stage's input meets (the passes from Quantize on
	// are verified at compiler.VerifyQuantized).
	stage := func(from *compiler.Graph, passList []passes.Pass, level compiler.VerifyLevel) (*compiler.Graph, error) {
		out := from.Clone()
		return out, passes.Run(out, passList, passes.Options{CheckIR: true, Level: level})
	}
	var err error
	if b.smoothed, err = stage(g, list[:smooth+1], compiler.VerifyStructure); err != nil {
		return nil, err
	}
	if b.quantized, err = stage(b.smoothed, list[smooth+1:quant+1], compiler.VerifyStructure); err != nil {
		return nil, err
	}
	if b.int8, err = stage(b.quantized, list[quant+1:], compiler.VerifyQuantized); err != nil {
		return nil, err
	}
	return b, nil
}

// newInt8Executor compiles the INT8 graph with the in-process INT8 engine
// (compiler/exec: the runtime kernels generated packages call, so results
// are what users get). close releases its worker pool.
func newInt8Executor(q *compiler.Graph) (ex infer.Executor, close func(), err error) {
	prog, err := exec.Compile(q, exec.Options{})
	if err != nil {
		return nil, nil, err
	}
	return prog, prog.Close, nil
}

// attentionCLIFlag is --attention, of every command that builds an INT8
// graph.
func attentionCLIFlag() cli.Flag {
	return &cli.StringFlag{Name: "attention", Value: passes.AttentionINT8,
		Usage: "attention matmuls: int8 (u8 x s8 GEMMs with dynamic scales on the Linears' kernels, bitwise identical on every ISA) or fp32"}
}

// attentionFlag reads --attention: the precision of the attention matmuls.
func attentionFlag(c *cli.Context) (string, error) {
	a, err := passes.AttentionPrecision(c.String("attention"))
	if err != nil {
		return "", usageError{fmt.Sprintf("--attention %q: want %s or %s", c.String("attention"), passes.AttentionINT8, passes.AttentionFP32)}
	}
	return a, nil
}

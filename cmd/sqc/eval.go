package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

func evalCommand() *cli.Command {
	return &cli.Command{
		Name:  "eval",
		Usage: "compare INT8 with FP32 on a labelled data set: accuracy, agreement, logits cosine",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Usage: "an .onnx file or a HuggingFace directory"},
			&cli.StringFlag{Name: "data", Required: true, Usage: "labelled inputs: a .tsv with `sentence` and `label` columns, or a .jsonl of token ids with \"label\"; a .tsv of pairs (`sentence1`, `sentence2`, `score`) for sentence-embedding models (STS) and cross-encoders; texts for sentence-embedding models"},
			vocabFlag(),
			&cli.IntFlag{Name: "batch", Value: 32, Usage: "inputs per forward pass"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of the table"},
			&cli.BoolFlag{Name: "layers", Usage: "add a per-layer table: SQNR of every quantised Linear and its smoothing scales"},
			promptFlag(),
		}, int8Flags()...),
		Action: func(c *cli.Context) error {
			data := c.String("data")
			cfg, err := parseInt8Flags(c, data, c.App.ErrWriter)
			if err != nil {
				return err
			}
			model := c.String("model")
			g, err := frontend.Load(model)
			if err != nil {
				return err
			}
			if usesHeadEval(model, data, g) {
				// Sentence embeddings (sparse too), STS pairs, cross-encoders.
				return evalHead(c, cfg, g)
			}
			exs, err := readLabelled(data)
			if err != nil {
				return err
			}
			tok, err := tokenizerFor(model, c.String("vocab"), exs, cfg)
			if err != nil {
				return err
			}
			res, err := evaluate(context.Background(), g, tok, exs, cfg, evalOptions{batch: c.Int("batch"), layers: c.Bool("layers"), stderr: c.App.ErrWriter})
			if err != nil {
				return err
			}
			res.Model, res.Data, res.Calibration = model, data, cfg.calibPath
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			return res.print(c.App.Writer)
		},
	}
}

// readLabelled reads an evaluation file and checks that every input has a
// label.
func readLabelled(path string) ([]dataio.Example, error) {
	var exs []dataio.Example
	var err error
	if strings.EqualFold(filepath.Ext(path), ".jsonl") {
		exs, err = dataio.ReadIDs(path)
	} else {
		exs, err = dataio.ReadTexts(path)
	}
	if err != nil {
		return nil, err
	}
	for _, ex := range exs {
		if !ex.HasLabel {
			return nil, compiler.BadInput(path, "", fmt.Errorf("%w: line %d has no label (eval needs a `label` column or \"label\" field)", compiler.ErrMalformed, ex.Line))
		}
	}
	return exs, nil
}

// tokenizerFor loads the vocabulary when the data or the calibration file
// holds texts.
func tokenizerFor(model, vocab string, exs []dataio.Example, cfg *int8Config) (*tokenizer.Tokenizer, error) {
	if exs[0].HasIDs && !cfg.needsTokenizer() {
		return nil, nil
	}
	return loadTokenizer(model, vocab)
}

type evalOptions struct {
	batch  int
	layers bool
	stderr io.Writer
}

// evalResult is what `sqc eval` reports; the JSON field names are stable.
type evalResult struct {
	Model        string  `json:"model"`
	Data         string  `json:"data"`
	Sentences    int     `json:"sentences"`
	Calibration  string  `json:"calibration,omitempty"`
	CalibSamples int     `json:"calibration_samples,omitempty"`
	Config       string  `json:"config"`
	Alpha        string  `json:"alpha"`
	Act          string  `json:"act"`
	FP32Accuracy float64 `json:"fp32_accuracy"`
	INT8Accuracy float64 `json:"int8_accuracy"`
	// Difference is INT8 minus FP32 accuracy in percentage points.
	Difference    float64       `json:"difference_points"`
	Agreement     float64       `json:"agreement"`
	Disagreements int           `json:"disagreements"`
	MeanCosine    float64       `json:"mean_cosine"`
	MinCosine     float64       `json:"min_cosine"`
	Layers        []layerResult `json:"layers,omitempty"`
}

// layerResult is one quantised Linear: the SQNR of its output in the INT8
// graph against the FP32 graph's (errors accumulated from every earlier
// layer), and the smoothing of its input.
type layerResult struct {
	Node     string  `json:"node"`
	SQNR     float64 `json:"sqnr_db"`
	Absorber string  `json:"smoothing_absorber"`
	Alpha    float64 `json:"alpha"`
	MinScale float32 `json:"min_scale"`
	MaxScale float32 `json:"max_scale"`
}

// evaluate builds the INT8 graph from g and runs both on exs.
func evaluate(ctx context.Context, g *compiler.Graph, tok *tokenizer.Tokenizer, exs []dataio.Example, cfg *int8Config, opts evalOptions) (*evalResult, error) {
	enc, err := infer.Encode(tok, exs)
	if err != nil {
		return nil, err
	}
	b, err := buildInt8(g, tok, cfg, opts.stderr)
	if err != nil {
		return nil, err
	}
	q := b.int8
	fp32, err := interp.New(g)
	if err != nil {
		return nil, err
	}
	int8, closeInt8, err := newInt8Executor(q)
	if err != nil {
		return nil, err
	}
	defer closeInt8()
	runOpts := infer.Options{BatchSize: opts.batch, SortByLength: true}
	want, err := infer.Run(ctx, g, infer.Interpreter(fp32.Run), enc, runOpts)
	if err != nil {
		return nil, err
	}
	got, err := infer.Run(ctx, q, int8, enc, runOpts)
	if err != nil {
		return nil, err
	}
	res := compare(g.Outputs[0].Name, want, got, exs)
	res.Config, res.Act, res.CalibSamples = cfg.describe(), cfg.quant.Act, cfg.calibSamples
	res.Alpha = fmt.Sprint(cfg.quant.Alpha)
	if cfg.quant.AutoAlpha {
		res.Alpha = "auto"
	}
	if !cfg.needsCalibration() {
		res.CalibSamples = 0
	}
	if opts.layers {
		if res.Layers, err = layerSQNR(b.smoothed, b.quantized, b.report, enc, opts.batch); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// compare scores INT8 results against FP32 ones on the labelled inputs.
func compare(output string, want, got []infer.Result, exs []dataio.Example) *evalResult {
	res := &evalResult{Sentences: len(exs), MinCosine: 1}
	var fpOK, qOK, agree int
	var cosSum float64
	for i, ex := range exs {
		a, b := want[i][output].F32, got[i][output].F32
		pa, pb := argmax(a), argmax(b)
		if pa == ex.Label {
			fpOK++
		}
		if pb == ex.Label {
			qOK++
		}
		if pa == pb {
			agree++
		}
		c := modelrt.Cosine(a, b)
		cosSum += c
		res.MinCosine = math.Min(res.MinCosine, c)
	}
	n := float64(len(exs))
	res.FP32Accuracy, res.INT8Accuracy = float64(fpOK)/n, float64(qOK)/n
	res.Difference = 100 * (res.INT8Accuracy - res.FP32Accuracy)
	res.Agreement, res.Disagreements = float64(agree)/n, len(exs)-agree
	res.MeanCosine = cosSum / n
	return res
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// layerSQNR runs the smoothed FP32 graph and the INT8 graph as Quantize
// left it (before fusions merge QLinears, which keep its bits) in the
// interpreter, whose sqc.QLinear computes the INT8 engine's integer
// arithmetic, and measures for every quantised Linear the SQNR of its
// output over the real (non-padding) tokens. The reference is the smoothed
// graph because smoothing into the V projection rescales its output
// channels.
func layerSQNR(g, q *compiler.Graph, rep *passes.QuantReport, enc []infer.Encoded, batch int) ([]layerResult, error) {
	type acc struct{ signal, noise float64 }
	sums := map[string]*acc{}
	for _, r := range rep.Quantized {
		sums[r.Output] = &acc{}
	}
	fp, err := interp.New(g)
	if err != nil {
		return nil, err
	}
	qi, err := interp.New(q)
	if err != nil {
		return nil, err
	}
	for lo := 0; lo < len(enc); lo += batch {
		idx := make([]int, 0, batch)
		for i := lo; i < min(lo+batch, len(enc)); i++ {
			idx = append(idx, i)
		}
		feeds, seq, err := infer.MakeBatch(g, enc, idx)
		if err != nil {
			return nil, err
		}
		ref := map[string]*compiler.Tensor{}
		if _, err := fp.Run(feeds, &interp.Options{OnValue: func(name string, t *compiler.Tensor) error {
			if sums[name] != nil {
				ref[name] = t.Clone()
			}
			return nil
		}}); err != nil {
			return nil, err
		}
		mask := feeds["attention_mask"]
		if _, err := qi.Run(feeds, &interp.Options{OnValue: func(name string, t *compiler.Tensor) error {
			s, r := sums[name], ref[name]
			if s == nil || r == nil {
				return nil
			}
			width := int(t.Shape[len(t.Shape)-1])
			perToken := len(t.Shape) == 3 && int(t.Shape[1]) == seq && mask != nil
			for i, v := range t.F32 {
				if perToken && mask.I64[i/width] == 0 {
					continue
				}
				d := float64(v) - float64(r.F32[i])
				s.signal += float64(r.F32[i]) * float64(r.F32[i])
				s.noise += d * d
			}
			return nil
		}}); err != nil {
			return nil, err
		}
	}
	smooth := map[string]passes.SmoothReport{}
	for _, s := range rep.Smooth {
		for _, n := range s.Nodes {
			smooth[n] = s
		}
	}
	var out []layerResult
	for _, r := range rep.Quantized {
		s := sums[r.Output]
		lr := layerResult{Node: r.Node, SQNR: 10 * math.Log10(s.signal/math.Max(s.noise, math.SmallestNonzeroFloat64)), Absorber: "none", MinScale: 1, MaxScale: 1}
		if sm, ok := smooth[r.Node]; ok {
			lr.Absorber, lr.Alpha, lr.MinScale, lr.MaxScale = sm.Absorber, sm.Alpha, sm.MinScale, sm.MaxScale
		}
		out = append(out, lr)
	}
	return out, nil
}

func (r *evalResult) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s\n", r.Model)
	fmt.Fprintf(tw, "data\t%s (%d inputs)\n", r.Data, r.Sentences)
	if r.CalibSamples > 0 {
		fmt.Fprintf(tw, "calibration\tfirst %d inputs of %s\n", r.CalibSamples, r.Calibration)
	}
	fmt.Fprintf(tw, "INT8\t%s\n", r.Config)
	fmt.Fprintf(tw, "FP32 accuracy\t%.2f%%\n", 100*r.FP32Accuracy)
	fmt.Fprintf(tw, "INT8 accuracy\t%.2f%%\t(%+.2f points)\n", 100*r.INT8Accuracy, r.Difference)
	fmt.Fprintf(tw, "agreement\t%.2f%%\t(%d predictions differ)\n", 100*r.Agreement, r.Disagreements)
	fmt.Fprintf(tw, "logits cosine\tmean %.5f\tmin %.5f\n", r.MeanCosine, r.MinCosine)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Layers) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "node\tSQNR dB\talpha\tscale min\tscale max\tsmoothed into")
	for _, l := range r.Layers {
		fmt.Fprintf(tw, "%s\t%5.1f\t%4.2f\t%8.3g\t%8.3g\t%s\n", l.Node, l.SQNR, l.Alpha, l.MinScale, l.MaxScale, l.Absorber)
	}
	return tw.Flush()
}

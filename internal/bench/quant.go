package bench

import (
	"fmt"
	"time"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/passes"
)

// QuantOptions control Model.Quantize. The zero value calibrates on
// DefaultCalibSequences random sequences of DefaultCalibSeq tokens and
// quantises with static per-tensor activations and SmoothQuant alpha
// DefaultAlpha.
type QuantOptions struct {
	// Sequences and Seq are the calibration set: Sequences random token
	// sequences of Seq tokens, run in batches of CalibBatch.
	Sequences, Seq, CalibBatch int
	// Seed seeds the calibration token ids (distinct from the weights' and
	// the timed inputs' seeds).
	Seed uint64
	// Threads bounds the interpreter's goroutines during calibration.
	Threads int
	// Passes are the options of passes.QuantPipeline; Alpha 0 here means
	// DefaultAlpha (set NoSmoothing to turn SmoothQuant off).
	Passes      passes.QuantOptions
	NoSmoothing bool
}

// Calibration defaults: random ids have no structure to learn, so a small
// set suffices for ranges (speed does not depend on them); 4 x 64 tokens
// keep calibration, which runs the FP32 interpreter (~6 GFLOP/s on 2
// cores), to about 2 s for minilm-l6 and 10 s for bert-base.
const (
	DefaultCalibSequences = 4
	DefaultCalibSeq       = 64
	DefaultCalibBatch     = 4
	DefaultCalibSeed      = 0xca1b
	// DefaultAlpha is SmoothQuant's migration strength from the paper
	// (0.5 for BERT-sized encoders).
	DefaultAlpha = 0.5
)

// QuantInfo says what Quantize did.
type QuantInfo struct {
	CalibSequences, CalibSeq int
	QLinears, KeptFP32       int
	Calibration, Passes      time.Duration
}

func (o QuantOptions) withDefaults() QuantOptions {
	if o.Sequences <= 0 {
		o.Sequences = DefaultCalibSequences
	}
	if o.Seq <= 0 {
		o.Seq = DefaultCalibSeq
	}
	if o.CalibBatch <= 0 {
		o.CalibBatch = DefaultCalibBatch
	}
	if o.Seed == 0 {
		o.Seed = DefaultCalibSeed
	}
	if o.Passes.Alpha == 0 && !o.NoSmoothing {
		o.Passes.Alpha = DefaultAlpha
	}
	if o.NoSmoothing {
		o.Passes.Alpha = 0
		o.Passes.AutoAlpha = false
	}
	return o
}

// Quantize turns m's canonical FP32 graph into sqc's INT8 graph in place,
// the way sqc quantises a real model, except that the calibration inputs
// are random token ids (Model.Inputs): calib.Collect on the FP32
// interpreter, then passes.QuantPipeline (SmoothQuant, Quantize). Clone
// m.Graph first to keep the FP32 graph.
func (m *Model) Quantize(opts QuantOptions) (*QuantInfo, error) {
	opts = opts.withDefaults()
	info := &QuantInfo{CalibSequences: opts.Sequences, CalibSeq: opts.Seq}
	var batches []calib.Batch
	for done, i := 0, 0; done < opts.Sequences; i++ {
		b := min(opts.CalibBatch, opts.Sequences-done)
		in, err := m.Inputs(b, opts.Seq, opts.Seed+uint64(i))
		if err != nil {
			return nil, err
		}
		batches = append(batches, in)
		done += b
	}
	copts := calib.Options{Threads: opts.Threads}
	if opts.Passes.AutoAlpha {
		copts.SampleRows = 512
	}
	start := time.Now()
	stats, err := calib.Collect(m.Graph, batches, copts)
	if err != nil {
		return nil, fmt.Errorf("%s: calibration: %w", m.Name, err)
	}
	info.Calibration = time.Since(start)
	report := &passes.QuantReport{}
	popts := opts.Passes
	popts.Report = report
	if popts.AutoAlpha && popts.Kernels == nil {
		k, err := passes.NewKernels(opts.Threads)
		if err != nil {
			return nil, err
		}
		defer k.Close()
		popts.Kernels = k
	}
	start = time.Now()
	if err := passes.Run(m.Graph, passes.QuantPipeline(stats, popts), passes.Options{}); err != nil {
		return nil, fmt.Errorf("%s: quantisation: %w", m.Name, err)
	}
	info.Passes = time.Since(start)
	info.QLinears = len(report.Quantized)
	info.KeptFP32 = len(report.KeptFP32)
	if info.QLinears == 0 {
		return nil, fmt.Errorf("%s: %w: quantisation found no Linear to quantise", m.Name, compiler.ErrInvalidRequest)
	}
	return info, nil
}

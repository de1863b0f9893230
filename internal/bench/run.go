package bench

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Options describe one `sqc bench` measurement.
type Options struct {
	Source     Source
	Batch, Seq int
	Threads    int    // engine threads (<= 0: GOMAXPROCS)
	ISA        string // INT8 kernel ceiling; "" = fastest available
	FP32       bool   // time the FP32 reference interpreter instead of INT8
	Quant      QuantOptions
	Measure    MeasureOptions
	// Progress, if set, receives a line per build stage (stderr in the CLI).
	Progress io.Writer
}

// Validate checks the options that do not need the model.
func (o Options) Validate() error {
	if err := o.Source.Validate(); err != nil {
		return err
	}
	if o.Batch < 1 || o.Seq < 1 {
		return fmt.Errorf("%w: --batch %d --seq %d: both must be at least 1", compiler.ErrInvalidRequest, o.Batch, o.Seq)
	}
	if o.Threads < 0 {
		return fmt.Errorf("%w: --threads %d < 0", compiler.ErrInvalidRequest, o.Threads)
	}
	if o.ISA != "" {
		if o.FP32 {
			return fmt.Errorf("%w: --isa selects INT8 kernels; it does not apply with --fp32", compiler.ErrInvalidRequest)
		}
		if err := qgemm.CheckISAName(o.ISA); err != nil {
			return fmt.Errorf("%w: --isa: %v", compiler.ErrInvalidRequest, err)
		}
	}
	return o.Measure.Validate()
}

// Build times the stages of Prepare.
type Build struct {
	LoadS      float64    `json:"load_s"`
	CalibrateS float64    `json:"calibrate_s,omitempty"`
	QuantizeS  float64    `json:"quantize_s,omitempty"`
	CompileS   float64    `json:"compile_s"`
	Quant      *QuantInfo `json:"-"`
}

// Prepared is a model built, quantised (unless FP32) and compiled.
type Prepared struct {
	Model  *Model
	Engine Engine
	Build  Build
}

// Prepare loads the model of o.Source, quantises it unless o.FP32, and
// compiles it into an Engine.
func Prepare(o Options) (*Prepared, error) {
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	start := time.Now()
	m, err := Load(o.Source)
	if err != nil {
		return nil, err
	}
	if m.MaxSeq > 0 && o.Seq > m.MaxSeq {
		return nil, compiler.BadInput(o.Source.Model, "--seq", fmt.Errorf("%w: %d tokens exceed the model's %d positions", compiler.ErrInvalidRequest, o.Seq, m.MaxSeq))
	}
	p := &Prepared{Model: m}
	p.Build.LoadS = time.Since(start).Seconds()
	progress("built %s in %.1f s", m.Name, p.Build.LoadS)
	eopts := EngineOptions{Threads: o.Threads, ISA: o.ISA}
	start = time.Now()
	if o.FP32 {
		p.Engine, err = NewFP32(m.Graph, eopts)
	} else {
		q := o.Quant
		if q.Threads == 0 {
			q.Threads = o.Threads
		}
		info, qerr := m.Quantize(q)
		if qerr != nil {
			return nil, qerr
		}
		p.Build.Quant = info
		p.Build.CalibrateS, p.Build.QuantizeS = info.Calibration.Seconds(), info.Passes.Seconds()
		progress("calibrated on %d random sequences of %d tokens in %.1f s; %d Linears quantised, %d kept FP32",
			info.CalibSequences, info.CalibSeq, p.Build.CalibrateS, info.QLinears, info.KeptFP32)
		start = time.Now()
		p.Engine, err = NewINT8(m.Graph, eopts)
	}
	if err != nil {
		return nil, err
	}
	p.Build.CompileS = time.Since(start).Seconds()
	return p, nil
}

// Result is one benchmark's outcome (`sqc bench --json` prints it).
type Result struct {
	Model         string  `json:"model"`
	RandomWeights bool    `json:"random_weights"`
	Seed          uint64  `json:"seed,omitempty"`
	Precision     string  `json:"precision"` // "int8" or "fp32"
	Engine        string  `json:"engine"`
	Batch         int     `json:"batch"`
	Seq           int     `json:"seq"`
	Threads       int     `json:"threads"`
	Warmup        int     `json:"warmup"`
	Runs          int     `json:"runs"`
	LatencyMs     Summary `json:"latency_ms"`
	SeqPerS       Summary `json:"seq_per_s"`
	AllocsPerRun  float64 `json:"allocs_per_run"`
	// CPUMsPerRun is the process's CPU time per timed run (ms; -1 where
	// unknown), and SeqPerCPUS the sequences per CPU second it gives: on a
	// machine shared with other work, these move less than latency.
	CPUMsPerRun float64 `json:"cpu_ms_per_run"`
	SeqPerCPUS  float64 `json:"seq_per_cpu_s,omitempty"`
	BytesPerRun float64 `json:"alloc_bytes_per_run"`
	// PeakRSSBytes is the whole process's peak RSS, the build (FP32
	// model, calibration, quantisation) included; Memory is the runs'.
	PeakRSSBytes int64      `json:"peak_rss_bytes,omitempty"`
	Memory       *RunMemory `json:"memory,omitempty"`
	// LoadAvg is the 1-minute load average after the runs (-1: unknown);
	// above CPUs, other work competed for the cores.
	LoadAvg float64   `json:"load_avg"`
	CPUs    int       `json:"cpus"`
	Build   Build     `json:"build"`
	TimesMs []float64 `json:"times_ms"`
}

// intoRunner is an Engine that can write its outputs into reused tensors.
type intoRunner interface {
	RunInto(in, out map[string]*compiler.Tensor) error
}

// Run prepares the model and measures it: o.Measure's warm-up and timed
// forward passes of one batch of o.Batch x o.Seq random token ids.
func Run(o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Threads == 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	p, err := Prepare(o)
	if err != nil {
		return nil, err
	}
	defer p.Engine.Close()
	in, err := p.Model.Inputs(o.Batch, o.Seq, InputSeed)
	if err != nil {
		return nil, err
	}
	run := func() error {
		_, err := p.Engine.Run(in)
		return err
	}
	if e, ok := p.Engine.(intoRunner); ok {
		// Outputs written into the same tensors every run, as a caller
		// that keeps its buffers (or a generated package) would.
		out := map[string]*compiler.Tensor{}
		run = func() error { return e.RunInto(in, out) }
	}
	// The runs are measured without the build's memory: only the
	// compiled program, the inputs and the outputs stay.
	p.releaseBuild(o.FP32)
	mem := startRunMemory(o.FP32)
	meas, err := Measure(run, o.Measure)
	if err != nil {
		return nil, err
	}
	var prog *exec.Program
	if e, ok := p.Engine.(*int8Engine); ok {
		prog = e.Program()
	}
	mem.finish(prog, o.Batch, o.Seq)
	r := &Result{
		Model: p.Model.Name, RandomWeights: p.Model.Random, Seed: p.Model.Seed,
		Precision: "int8", Engine: p.Engine.Describe(),
		Batch: o.Batch, Seq: o.Seq, Threads: o.Threads,
		Warmup: meas.Warmup, Runs: len(meas.TimesMs),
		LatencyMs: meas.LatencyMs, SeqPerS: Throughput(meas.LatencyMs, o.Batch),
		AllocsPerRun: meas.AllocsPerRun, BytesPerRun: meas.BytesPerRun,
		CPUMsPerRun: meas.CPUMsPerRun,
		Build:       p.Build, TimesMs: meas.TimesMs, Memory: mem,
	}
	if meas.CPUMsPerRun > 0 {
		r.SeqPerCPUS = float64(o.Batch) * 1000 / meas.CPUMsPerRun
	}
	if o.FP32 {
		r.Precision = "fp32"
	}
	if rss, ok := PeakRSS(); ok {
		r.PeakRSSBytes = max(rss, mem.BuildPeakRSSBytes)
	}
	r.LoadAvg, r.CPUs = LoadAverage(), runtime.NumCPU()
	return r, nil
}

// WriteText prints r for people.
func (r *Result) WriteText(w io.Writer) error {
	model := r.Model
	if r.RandomWeights {
		model += fmt.Sprintf(" (random weights, seed %d)", r.Seed)
	}
	l := r.LatencyMs
	s := r.SeqPerS
	_, err := fmt.Fprintf(w, `model      %s, %s
engine     %s
shape      batch %d x sequence %d, --threads %d
runs       %d timed after %d warm-up
latency    median %.2f ms   min %.2f   max %.2f   (p25-p75 %.2f-%.2f)
throughput median %.1f seq/s   min %.1f   max %.1f
allocs     %.1f per run (%s per run)
cpu        %s
%smachine    %s
build      load %.1f s, calibrate %.1f s, quantise %.1f s, compile %.1f s
`, model, r.Precision, r.Engine, r.Batch, r.Seq, r.Threads, r.Runs, r.Warmup,
		l.Median, l.Min, l.Max, l.P25, l.P75, s.Median, s.Min, s.Max,
		r.AllocsPerRun, byteSize(r.BytesPerRun), cpuText(r.CPUMsPerRun, r.SeqPerCPUS), r.memoryText(), LoadText(r.LoadAvg, r.CPUs),
		r.Build.LoadS, r.Build.CalibrateS, r.Build.QuantizeS, r.Build.CompileS)
	return err
}

// memoryText is the report's memory lines, each ending in a newline.
func (r *Result) memoryText() string {
	if r.Memory == nil {
		return fmt.Sprintf("peak RSS   %s\n", rssText(r.PeakRSSBytes))
	}
	return r.Memory.text(r.PeakRSSBytes)
}

// LoadText describes the machine's load for a report: the load average
// against the CPU count, with a warning when other work competed.
func LoadText(load float64, cpus int) string {
	switch {
	case load < 0:
		return fmt.Sprintf("%d CPUs, load unknown", cpus)
	case load > float64(cpus)+0.5:
		return fmt.Sprintf("%d CPUs, load average %.1f: other work competed for the cores, figures are low", cpus, load)
	}
	return fmt.Sprintf("%d CPUs, load average %.1f", cpus, load)
}

func cpuText(ms, seqPerCPUS float64) string {
	if ms < 0 {
		return "unknown on this system"
	}
	return fmt.Sprintf("%.2f ms per run (%.1f seq per CPU second)", ms, seqPerCPUS)
}

func rssText(b int64) string {
	if b <= 0 {
		return "unknown on this system"
	}
	return byteSize(float64(b))
}

// byteSize formats a byte count with a binary unit.
func byteSize(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

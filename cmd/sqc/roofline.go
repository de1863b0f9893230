package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/internal/bench"
	"github.com/sqc-dev/sqc/internal/bench/roofline"
	"github.com/sqc-dev/sqc/runtime/cpu"
)

func rooflineCommand() *cli.Command {
	return &cli.Command{
		Name:  "roofline",
		Usage: "measure this machine's ceilings and place each fused op of an INT8 model under them",
		Description: `Measures the compute ceilings (register-only AMX, VNNI and FP32 loops) and the
L2 and DRAM read bandwidths with --threads threads, compiles the model to INT8
(--model FILE, or --config NAME with random weights), times each distinct step
of the program (GEMMs per shape and epilogue, attention, LayerNorm, ...) at
--batch x --seq, and prints each op's operational intensity, achieved GOP/s
and its roof, then each GEMM's time split into kernel, epilogue (or the two
fused, on AMX) and row finish (the fused LayerNorm), from a twin program whose
GEMM engine times them. --svg FILE draws the roofline figure; --json prints
one object (a GEMM's split as gemm_split).`,
		Flags: append(benchModelFlags(8),
			&cli.StringFlag{Name: "svg", Usage: "write the roofline figure to this file"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
			&cli.DurationFlag{Name: "budget", Value: 2 * time.Second, Usage: "time spent timing whole forward passes"},
			&cli.DurationFlag{Name: "per-op", Value: roofline.DefaultPerOp, Usage: "timing budget per distinct op"},
			&cli.DurationFlag{Name: "pass-budget", Value: 2 * time.Second, Usage: "time spent on passes timed step by step (at least 5; 0 skips them), which split the time between steps"},
			&cli.DurationFlag{Name: "ceiling-budget", Value: roofline.DefaultCeilingBudget, Usage: "timing budget per ceiling"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError{fmt.Sprintf("roofline takes no arguments, got %q", c.Args().Slice())}
			}
			o, err := benchOptionsFrom(c)
			if err != nil {
				return err
			}
			o.Measure = bench.MeasureOptions{Warmup: bench.DefaultWarmup, Budget: c.Duration("budget")}
			if c.Duration("per-op") <= 0 || c.Duration("ceiling-budget") <= 0 || c.Duration("pass-budget") < 0 {
				return usageError{"--per-op and --ceiling-budget must be positive, --pass-budget not negative"}
			}
			if err := o.Validate(); err != nil {
				return usageError{err.Error()}
			}
			if o.Threads > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(o.Threads)) // restored for in-process callers (tests)
			}
			o.Threads = runtime.GOMAXPROCS(0)
			if !c.Bool("json") {
				o.Progress = c.App.ErrWriter
			}
			return runRoofline(c, o)
		},
	}
}

// rooflineReport is `sqc roofline --json`.
type rooflineReport struct {
	Model      string              `json:"model"`
	Engine     string              `json:"engine"`
	GEMMKernel string              `json:"gemm_kernel"`
	CPU        string              `json:"cpu"`
	Batch      int                 `json:"batch"`
	Seq        int                 `json:"seq"`
	Threads    int                 `json:"threads"`
	ForwardMs  bench.Summary       `json:"forward_ms"`
	ReplayMs   float64             `json:"replayed_ms"`
	Whole      roofline.WholeModel `json:"whole_model"`
	Ceilings   []roofline.Ceiling  `json:"ceilings"`
	Ops        []roofline.Row      `json:"ops"`
	LoadAvg    float64             `json:"load_avg"`
	CPUs       int                 `json:"cpus"`
}

func runRoofline(c *cli.Context, o bench.Options) error {
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	p, err := bench.Prepare(o)
	if err != nil {
		return err
	}
	defer p.Engine.Close()
	prog, err := programOf(p.Engine)
	if err != nil {
		return err
	}
	in, err := p.Model.Inputs(o.Batch, o.Seq, bench.InputSeed)
	if err != nil {
		return err
	}
	progress("timing the forward pass ...")
	meas, err := bench.Measure(func() error { _, err := p.Engine.Run(in); return err }, o.Measure)
	if err != nil {
		return err
	}
	progress("profiling %d steps ...", len(prog.Steps()))
	prof, err := roofline.ProfileProgram(prog, in, roofline.ProfileOptions{Batch: o.Batch, Seq: o.Seq, PerOp: c.Duration("per-op"), PassBudget: c.Duration("pass-budget")})
	if err != nil {
		return err
	}
	progress("splitting the GEMMs' time (kernel, epilogue, finish) ...")
	if err := splitGEMMs(prof, p.Model.Graph, o, in, c.Duration("per-op")); err != nil {
		return err
	}
	progress("measuring ceilings on %d threads ...", o.Threads)
	cs, err := roofline.MeasureCeilings(roofline.CeilingOptions{Threads: o.Threads, Budget: c.Duration("ceiling-budget")})
	if err != nil {
		return err
	}
	isa := prog.Engine().ISA().String()
	rows := roofline.Rows(prof.Points, cs, isa)
	rep := rooflineReport{
		Model: p.Model.Name, Engine: p.Engine.Describe(), GEMMKernel: isa, CPU: cpu.Detect().String(),
		Batch: o.Batch, Seq: o.Seq, Threads: o.Threads,
		ForwardMs: meas.LatencyMs, ReplayMs: prof.ReplayedSeconds * 1e3,
		Whole:    roofline.Whole(prof, cs, meas.LatencyMs.Median/1e3),
		Ceilings: cs, Ops: rows,
		LoadAvg: bench.LoadAverage(), CPUs: runtime.NumCPU(),
	}
	if path := c.String("svg"); path != "" {
		if err := writeRooflineSVG(path, rep, prof); err != nil {
			return err
		}
		progress("wrote %s", path)
	}
	if c.Bool("json") {
		return json.NewEncoder(c.App.Writer).Encode(rep)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "model %s, INT8, batch %d x sequence %d, %d threads\nengine %s\ncpu features: %s\nmachine: %s\n",
		rep.Model, o.Batch, o.Seq, o.Threads, rep.Engine, rep.CPU, bench.LoadText(rep.LoadAvg, rep.CPUs))
	fmt.Fprintf(w, "forward pass: median %.2f ms (%d runs); the replayed steps add up to %.2f ms (%.0f%%), the other %.0f%% is between steps\n",
		meas.LatencyMs.Median, meas.LatencyMs.N, rep.ReplayMs, 100*rep.ReplayMs/meas.LatencyMs.Median, 100*rep.Whole.Between)
	if wm := rep.Whole; prof.Passes > 0 {
		fmt.Fprintf(w, "  between steps, from %d passes timed step by step: within a pass the steps take %.2f ms (%.0f%%), %+.2f ms (%+.0f%% of the pass) against replayed alone (caches refilled between steps, helpers waking); outside the steps (copying the outputs; whole passes minus those timed step by step, pass by pass) %.2f ms (%.0f%%)\n",
			prof.Passes, prof.InPassSeconds*1e3, 100*wm.InPass, wm.Refill*wm.Forward*1e3, 100*wm.Refill, wm.Outside*wm.Forward*1e3, 100*wm.Outside)
		fmt.Fprintf(w, "  parallel loops: %.0f per pass; their callers wait %.2f ms per pass (%.1f%%) for a helper's last block (the imbalance one parallel region per layer could save; the rest is caches)\n",
			wm.Loops, wm.LoopWait*wm.Forward*1e3, 100*wm.LoopWait)
	}
	fmt.Fprintf(w, "whole model: %.1f GOP per pass at %.0f GOP/s = %.1f%% of the %s peak on %d threads\n\n",
		rep.Whole.Ops/1e9, rep.Whole.GOPS, 100*rep.Whole.Share, rep.Whole.Ceiling, o.Threads)
	return roofline.WriteTable(w, cs, rows)
}

func writeRooflineSVG(path string, rep rooflineReport, prof *roofline.Profile) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	chart := roofline.Chart{
		Title: fmt.Sprintf("sqc roofline: %s INT8, batch %d x %d tokens, %d threads", rep.Model, rep.Batch, rep.Seq, rep.Threads),
		Subtitle: fmt.Sprintf("forward pass %.1f ms (median)  |  GEMM kernel: %s  |  CPU: %s  |  load avg %.1f on %d CPUs",
			rep.ForwardMs.Median, rep.GEMMKernel, rep.CPU, rep.LoadAvg, rep.CPUs),
		Ceilings: rep.Ceilings, Points: prof.Points,
		Notes: []string{
			fmt.Sprintf("Ceilings measured here with %d threads, per CPU-second: compute = register-only loops (runtime/qgemm.PeakLoops), bandwidth = read sweeps.", rep.Threads),
			fmt.Sprintf("Op times: each distinct step replayed alone, median (they add up to %.1f ms). Ops: 2 per multiply-add; bytes: each operand once.", rep.ReplayMs),
		},
	}
	if err := roofline.WriteSVG(f, chart); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// programOf returns the exec.Program behind an INT8 engine.
func programOf(e bench.Engine) (*exec.Program, error) {
	withProg, ok := e.(interface{ Program() *exec.Program })
	if !ok {
		return nil, fmt.Errorf("roofline: engine %q has no exec.Program", e.Describe())
	}
	return withProg.Program(), nil
}

// splitGEMMs fills prof's GEMM points' Split from a twin of the profiled
// program that times its GEMM engine's parts (exec.Options.ProfileGEMM),
// compiled from the same quantised graph g: the profiled program itself
// runs untimed, so its figures carry no profiling cost.
func splitGEMMs(prof *roofline.Profile, g *compiler.Graph, o bench.Options, in map[string]*compiler.Tensor, perOp time.Duration) error {
	twin, err := bench.NewINT8(g, bench.EngineOptions{Threads: o.Threads, ISA: o.ISA, ProfileGEMM: true})
	if err != nil {
		return err
	}
	defer twin.Close()
	prog, err := programOf(twin)
	if err != nil {
		return err
	}
	if perOp <= 0 {
		perOp = roofline.DefaultPerOp
	}
	splits, err := roofline.SplitGEMMs(prog, in, perOp/2)
	if err != nil {
		return err
	}
	for i := range prof.Points {
		if s, ok := splits[prof.Points[i].Label]; ok {
			prof.Points[i].Split = &s
		}
	}
	return nil
}

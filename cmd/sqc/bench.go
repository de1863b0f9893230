package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/internal/bench"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "time forward passes of a model (INT8, or FP32 with --fp32), or serve the peer harness's worker protocol",
		Description: `Builds the model (--model FILE, or --config NAME with deterministic random
weights in the real shapes, so no checkpoint is needed), quantises it (calibration
on random token ids), warms up, then times forward passes of one batch of random
token ids: a time budget (--budget) or an exact count (--runs). Prints median,
min and max latency and sequences per second and heap allocations per run;
--json prints one object.

Memory: after compiling, the FP32 graph and everything else only the build
used is released and returned to the OS, and the kernel's peak RSS is reset
(/proc/self/clear_refs, Linux; elsewhere the output says the run's peak is
unknown). The report gives what the compiled program holds (weights by kind,
activation arena), the peak RSS of warm-up and timed runs, its ratio to
weights + arena, and the whole process's peak, build included.

With --serve it is a worker for ../shared/bench/peers (coord.py): JSON lines on
stdin/stdout, modes int8 (fastest kernels), int8-vnni (AMX off), int8-attn32
(int8 with FP32 attention; with --attention fp32, int8-attn8: with INT8 attention)
and, where int8 applies the GEMM epilogues inside the AMX kernel call, int8-sepepi
(the same with them outside, as SQC_EPILOGUE=separate does); where int8 runs AMX
kernels, int8-fincol and int8-finrow (the GEMMs that end in a fused LayerNorm
in column-major or row-major block order, as SQC_FINISH_ORDER=column|row do).

--threads also sets GOMAXPROCS, so the process uses at most that many cores.`,
		Flags: append(benchModelFlags(1),
			&cli.BoolFlag{Name: "fp32", Usage: "time the FP32 reference interpreter instead"},
			&cli.IntFlag{Name: "runs", Usage: "exact number of timed runs (default: as many as --budget allows, at least 3)"},
			&cli.DurationFlag{Name: "budget", Value: bench.DefaultBudget, Usage: "time spent on timed runs when --runs is not given"},
			&cli.IntFlag{Name: "warmup", Value: bench.DefaultWarmup, Usage: "untimed runs first"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
			&cli.BoolFlag{Name: "serve", Usage: "be a worker of the peer harness (JSON lines on stdin/stdout)"},
			&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a pprof CPU profile of the timed runs to this file"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError{fmt.Sprintf("bench takes no arguments, got %q", c.Args().Slice())}
			}
			o, err := benchOptionsFrom(c)
			if err != nil {
				return err
			}
			o.FP32 = c.Bool("fp32")
			o.Measure = bench.MeasureOptions{Runs: c.Int("runs"), Budget: c.Duration("budget"), Warmup: c.Int("warmup")}
			if c.Bool("serve") {
				if c.IsSet("cpuprofile") {
					return usageError{"--cpuprofile does not apply with --serve"}
				}
				return serveBench(c, o)
			}
			if err := o.Validate(); err != nil {
				return usageError{err.Error()}
			}
			if o.Threads > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(o.Threads)) // restored for in-process callers (tests)
			}
			if !c.Bool("json") {
				o.Progress = c.App.ErrWriter
			}
			if path := c.String("cpuprofile"); path != "" {
				f, err := os.Create(path)
				if err != nil {
					return usageError{fmt.Sprintf("--cpuprofile: %v", err)}
				}
				defer f.Close()
				o.Measure.CPUProfile = f
			}
			r, err := bench.Run(o)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return json.NewEncoder(c.App.Writer).Encode(r)
			}
			return r.WriteText(c.App.Writer)
		},
	}
}

// serveBench runs the peer-harness worker on stdin/stdout.
func serveBench(c *cli.Context, o bench.Options) error {
	for _, f := range []string{"batch", "seq", "isa", "fp32", "runs", "budget", "warmup", "json"} {
		if c.IsSet(f) {
			return usageError{fmt.Sprintf("--%s does not apply with --serve: the coordinator sends shapes and modes", f)}
		}
	}
	if err := o.Source.Validate(); err != nil {
		return usageError{err.Error()}
	}
	if o.Threads < 0 {
		return usageError{fmt.Sprintf("--threads %d < 0", o.Threads)}
	}
	if o.Threads > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(o.Threads)) // restored for in-process callers (tests)
	}
	start := time.Now()
	w, err := bench.NewWorker(bench.WorkerOptions{Source: o.Source, Threads: o.Threads, Quant: o.Quant, Log: c.App.ErrWriter})
	if err != nil {
		return err
	}
	defer w.Close()
	w.Load = time.Since(start)
	return w.Serve(c.App.Reader, c.App.Writer)
}

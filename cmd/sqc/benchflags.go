package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/internal/bench"
)

// benchModelFlags are the flags `sqc bench` and `sqc roofline` share: the
// model (a file or a random-weight shape), the input shape with
// defaultBatch sequences, the threads, the kernel ceiling and the
// quantisation.
func benchModelFlags(defaultBatch int) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "model", Usage: "an .onnx file or a HuggingFace directory"},
		&cli.StringFlag{Name: "config", Usage: "a model shape with random weights: bert-base, bert-large, distilbert, minilm-l6 (or an hf preset)"},
		&cli.Uint64Flag{Name: "seed", Value: bench.DefaultSeed, Usage: "random-weight seed for --config"},
		&cli.IntFlag{Name: "batch", Value: defaultBatch, Usage: "sequences per forward pass"},
		&cli.IntFlag{Name: "seq", Value: 128, Usage: "tokens per sequence"},
		&cli.IntFlag{Name: "threads", Usage: "worker threads (default: GOMAXPROCS); also sets GOMAXPROCS, so the process uses at most that many cores"},
		&cli.StringFlag{Name: "isa", Usage: "cap the INT8 kernels: amx, vnni, avx2 or go; or amx-emulated (AMX tiles emulated in AVX512-VNNI, slow: to check AMX outputs elsewhere) (default: fastest available)"},
		&cli.StringFlag{Name: "act", Value: "static", Usage: "activation quantisation: static (per tensor) or dynamic (per token)"},
		attentionCLIFlag(),
	}
}

// benchOptionsFrom reads benchModelFlags into bench.Options (timing
// settings left to the caller) and checks the quantisation flags.
func benchOptionsFrom(c *cli.Context) (bench.Options, error) {
	o := bench.Options{
		Source:  bench.Source{Model: c.String("model"), Config: c.String("config"), Seed: c.Uint64("seed")},
		Batch:   c.Int("batch"),
		Seq:     c.Int("seq"),
		Threads: c.Int("threads"),
		ISA:     c.String("isa"),
	}
	o.Quant.Passes.Act = c.String("act")
	if a := o.Quant.Passes.Act; a != "static" && a != "dynamic" {
		return o, usageError{fmt.Sprintf("--act %q: want static or dynamic", a)}
	}
	var err error
	o.Quant.Passes.Attention, err = attentionFlag(c)
	return o, err
}

// Command genworker builds a peer-harness worker around a package that
// `sqc compile` generates from a model shape with random weights (see
// internal/bench/genworker), and prints the worker binary's path. The
// real-length comparison then times the generated package's Run:
//
//	w=$(go run ./bench/genworker --config bert-base --out /tmp/gen-bert-base)
//	go run ./bench/realbatch ... --worker "sqc-gen=$w --threads {threads}" ...
//
// bench/peers.sh does this for each config. The weights are those of
// `sqc bench --config NAME --seed S`, quantised the same way (--act,
// --attention); the build takes about a minute for bert-base.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sqc-dev/sqc/internal/bench"
	"github.com/sqc-dev/sqc/internal/bench/genworker"
	"github.com/sqc-dev/sqc/passes"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("genworker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := genworker.Options{Log: stderr}
	fs.StringVar(&o.Config, "config", "", "model shape with random weights: one of bench's configs (bert-base, minilm-l6, ...)")
	fs.Uint64Var(&o.Seed, "seed", bench.DefaultSeed, "random-weight seed, as sqc bench --seed")
	fs.StringVar(&o.Quant.Passes.Act, "act", "static", "activation quantisation: static or dynamic")
	fs.StringVar(&o.Quant.Passes.Attention, "attention", passes.AttentionINT8, "attention matmuls: int8 or fp32")
	fs.IntVar(&o.MaxBatch, "max-batch", genworker.DefaultMaxBatch, "sequences per forward pass of the generated package")
	fs.IntVar(&o.MaxSeq, "max-seq", genworker.DefaultMaxSeq, "longest sequence of the generated package, in tokens")
	fs.StringVar(&o.Dir, "out", "", "directory for the module and the binary (new, empty, or an earlier build of genworker's)")
	repo := fs.String("repo", "", "the sqc checkout to build against (default: the one around the working directory)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	usage := func(msg string) int {
		fmt.Fprintln(stderr, "genworker:", msg)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return usage(fmt.Sprintf("no arguments expected, got %q", fs.Args()))
	case o.Config == "" || o.Dir == "":
		return usage("--config and --out are required")
	case o.Quant.Passes.Act != "static" && o.Quant.Passes.Act != "dynamic":
		return usage(fmt.Sprintf("--act %q: want static or dynamic", o.Quant.Passes.Act))
	case o.Quant.Passes.Attention != passes.AttentionINT8 && o.Quant.Passes.Attention != passes.AttentionFP32:
		return usage(fmt.Sprintf("--attention %q: want %s or %s", o.Quant.Passes.Attention, passes.AttentionINT8, passes.AttentionFP32))
	}
	o.Repo = *repo
	if o.Repo == "" {
		wd, err := os.Getwd()
		if err == nil {
			o.Repo, err = genworker.FindRepo(wd)
		}
		if err != nil {
			return usage(fmt.Sprintf("%v (give --repo)", err))
		}
	}
	res, err := genworker.Build(o)
	if err != nil {
		fmt.Fprintln(stderr, "genworker:", err)
		return 1
	}
	fmt.Fprintf(stderr, "genworker: built %s in %.1f s\n", res.Binary, res.Elapsed.Seconds())
	fmt.Fprintln(stdout, res.Binary)
	return 0
}

// Command pairs prints the medians of paired ratios of the peer harness's
// fixed-shape run: for every shape, each sqc mode against ONNX Runtime
// INT8 (with and without AMX), PyTorch FP32 and, on AMX, sqc with the
// GEMM epilogue outside the kernel call and with either block order of the
// GEMMs with a fused LayerNorm forced, from results.jsonl (see
// internal/bench/pairs). bench/peers.sh runs it after the harness and
// writes pairs.txt beside the results.
//
//	go run ./bench/pairs /tmp/peers-results/20261205-063448/results.jsonl
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sqc-dev/sqc/internal/bench/pairs"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pairs:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pairs", flag.ContinueOnError)
	targets := fs.String("targets", "sqc/int8,sqc/int8-vnni,sqc/int8-attn32,sqc/int8-sepepi", "comma-separated system/mode to rate")
	// sqc/int8-sepepi, where the worker offers it (AMX), makes
	// sqc/int8 against it the gain of the epilogue fused in the AMX kernel;
	// sqc/int8-fincol and sqc/int8-finrow (AMX too) rate the planner's
	// block order of the GEMMs with a fused LayerNorm against either order
	// forced (sqc/int8 against them: above 1x, the planner's is faster).
	refs := fs.String("references", "ort/int8,ort/int8-noamx,torch/fp32,sqc/int8-sepepi,sqc/int8-fincol,sqc/int8-finrow", "comma-separated system/mode to rate against")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: pairs [--targets T,...] [--references R,...] results.jsonl")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	ratios, err := pairs.Read(f, strings.Split(*targets, ","), strings.Split(*refs, ","))
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	if len(ratios) == 0 {
		return fmt.Errorf("%s: no paired calls of %s against %s", fs.Arg(0), *targets, *refs)
	}
	return pairs.Write(stdout, ratios)
}

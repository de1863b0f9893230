// Command pairs prints the medians of paired ratios of the peer harness's
// fixed-shape run: for every shape, each sqc mode against ONNX Runtime
// INT8 (with and without AMX) and PyTorch FP32, and sqc/int8 against the
// worker's comparison modes where it offers them (AMX): the GEMM epilogue
// outside the kernel call, and either block order of the GEMMs with a
// fused LayerNorm forced; from results.jsonl (see internal/bench/pairs).
// bench/peers.sh runs it after the harness and writes pairs.txt beside the
// results.
//
//	go run ./bench/pairs /tmp/peers-results/20261205-063448/results.jsonl
package main

import (
	"bytes"
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
	targets := fs.String("targets", "sqc/int8,sqc/int8-vnni,sqc/int8-attn32,sqc/int8-attn8", "comma-separated system/mode to rate against the references")
	refs := fs.String("references", "ort/int8,ort/int8-noamx,torch/fp32", "comma-separated system/mode to rate the targets against")
	// Each variant is the base with one setting changed, offered by the
	// worker where it compares something (AMX): the base against it is what
	// the default gains over it (above 1x, the default is faster):
	// int8-sepepi the GEMM epilogue fused in the AMX kernel call,
	// int8-fincol and int8-finrow the planner's block order of the GEMMs
	// with a fused LayerNorm against either order forced.
	base := fs.String("base", "sqc/int8", "system/mode rated against the variants")
	variants := fs.String("variants", "sqc/int8-sepepi,sqc/int8-fincol,sqc/int8-finrow", "comma-separated system/mode to rate the base against")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: pairs [--targets T,...] [--references R,...] [--base B --variants V,...] results.jsonl")
	}
	path := fs.Arg(0)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var ratios []pairs.Ratio
	for _, set := range [][2]string{{*targets, *refs}, {*base, *variants}} {
		r, err := pairs.Read(bytes.NewReader(data), strings.Split(set[0], ","), strings.Split(set[1], ","))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		ratios = append(ratios, r...)
	}
	if len(ratios) == 0 {
		return fmt.Errorf("%s: no paired calls of %s against %s, nor of %s against %s", path, *targets, *refs, *base, *variants)
	}
	pairs.Sort(ratios)
	return pairs.Write(stdout, ratios)
}

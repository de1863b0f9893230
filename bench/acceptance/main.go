// Command acceptance prints issue 12's acceptance bars against a
// bench/peers.sh results folder: each bar's figure (medians of paired
// ratios, % of peak, logits cosine), pass or FAIL, or which file would
// have held it (see internal/bench/acceptance). bench/peers.sh runs it at
// the end with ACCEPTANCE=1 (the default on AMX CPUs), after timing the
// AMX GEMMs and the roofline into the same folder.
//
//	go run ./bench/acceptance [--config bert-base] [--threads 2] /tmp/peers-results/20261205-063448
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sqc-dev/sqc/internal/bench/acceptance"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "acceptance:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("acceptance", flag.ContinueOnError)
	config := fs.String("config", "bert-base", "the model configuration the bars are stated for")
	threads := fs.Int("threads", 2, "the thread count the bars are stated for")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: acceptance [--config C] [--threads T] RESULTS_DIR")
	}
	dir := fs.Arg(0)
	if st, err := os.Stat(dir); err != nil {
		return err
	} else if !st.IsDir() {
		return fmt.Errorf("%s is not a folder (give bench/peers.sh's $OUT)", dir)
	}
	bars, err := acceptance.Evaluate(dir, *config, *threads)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "issue 12 acceptance, %s, %d threads, from %s:\n", *config, *threads, dir)
	return acceptance.Write(stdout, bars)
}

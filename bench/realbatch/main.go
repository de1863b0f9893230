// Command realbatch times encoders on real sentence lengths side by side:
// the sentences of a file (GLUE SST-2's dev.tsv), tokenized, in batches
// of --batch in arrival order, every batch sent to every target in turn
// (see internal/bench/realbatch). bench/peers.sh runs it after the
// fixed-shape table, with ONNX Runtime INT8 padding each batch to its
// longest as the reference and sqc running the real tokens only.
//
//	go run ./bench/realbatch --text ../shared/data/glue-sst2/dev.tsv \
//	  --vocab ../shared/data/vocab/bert-base-uncased-vocab.txt \
//	  --config bert-base --threads 2 --cache /tmp/peers-cache \
//	  --worker 'ort=NODE_PATH=/tmp/peers-cache/node/node_modules node ../shared/bench/peers/bench_ort.js --serve --config {config} --threads {threads} --dir {cache} --modes int8' \
//	  --worker 'sqc=sqc bench --serve --config {config} --threads {threads}' \
//	  --padded sqc/int8 --reference ort/int8 --out /tmp/realbatch
//
// Every mode of every worker is a target (sent the lengths); --padded
// adds a target that is sent none. Results: table.txt, summary.json and
// calls.jsonl (every timed call) in --out; the workers' stderr goes to
// --out/workers.log.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sqc-dev/sqc/internal/bench/realbatch"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "realbatch:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("realbatch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	text := fs.String("text", "", "sentences: a .tsv with a sentence column, or one per line")
	vocab := fs.String("vocab", "", "a vocab.txt (uncased WordPiece) to count tokens with")
	batch := fs.Int("batch", 32, "sentences per batch")
	maxLen := fs.Int("max-len", 128, "longest encoding, special tokens included (longer sentences are truncated)")
	config := fs.String("config", "", "substituted for {config} in worker commands")
	threads := fs.Int("threads", 1, "substituted for {threads}")
	cache := fs.String("cache", "/tmp/peers-cache", "substituted for {cache}")
	rounds := fs.Int("rounds", 3, "timed passes over all batches")
	warmup := fs.Bool("warmup", true, "one untimed pass first")
	gap := fs.Duration("gap", -1, "pause before each call (default 50ms with more than one thread, else 0)")
	reference := fs.String("reference", "", "the target the ratios divide (worker/mode [padded]); default the first")
	out := fs.String("out", "", "directory for table.txt, summary.json, calls.jsonl and workers.log (required)")
	var workers, padded listFlag
	fs.Var(&workers, "worker", "name=COMMAND of a peer-protocol worker (repeatable)")
	fs.Var(&padded, "padded", "worker/mode also timed without lengths (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *text == "" || *vocab == "" || *out == "":
		return errors.New("--text, --vocab and --out are required")
	case len(workers) == 0:
		return errors.New("give at least one --worker name=COMMAND")
	}
	if *gap < 0 {
		*gap = 0
		if *threads > 1 {
			*gap = 50 * time.Millisecond // as run.sh: ONNX Runtime's spinning threads park first
		}
	}
	tok, err := tokenizer.FromVocabFile(*vocab, tokenizer.Options{Lowercase: true, MaxLength: *maxLen})
	if err != nil {
		return err
	}
	lengths, err := realbatch.Lengths(*text, tok)
	if err != nil {
		return err
	}
	batches, err := realbatch.Batches(lengths, *batch)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(*out, "workers.log"))
	if err != nil {
		return err
	}
	defer logf.Close()

	subst := strings.NewReplacer("{config}", *config, "{threads}", fmt.Sprint(*threads), "{cache}", *cache)
	var procs []*realbatch.Process
	defer func() {
		for _, p := range procs {
			if err := p.Close(); err != nil {
				fmt.Fprintln(stderr, "realbatch:", err)
			}
		}
	}()
	var targets []realbatch.Target
	for _, w := range workers {
		name, cmd, ok := strings.Cut(w, "=")
		if !ok || name == "" || cmd == "" {
			return fmt.Errorf("--worker %q: want name=COMMAND", w)
		}
		fmt.Fprintf(stderr, "realbatch: starting %s: %s\n", name, subst.Replace(cmd))
		p, err := realbatch.Start(name, subst.Replace(cmd), logf)
		if err != nil {
			return err
		}
		procs = append(procs, p)
		for _, m := range p.Modes {
			targets = append(targets, realbatch.Target{Worker: p, Mode: m})
		}
	}
	for _, pm := range padded {
		name, mode, _ := strings.Cut(pm, "/")
		i := slices.IndexFunc(procs, func(p *realbatch.Process) bool { return p.Name == name })
		if i < 0 || !procs[i].HasMode(mode) {
			return fmt.Errorf("--padded %q: no such worker/mode", pm)
		}
		targets = append(targets, realbatch.Target{Worker: procs[i], Mode: mode, Padded: true})
	}
	if *reference == "" {
		*reference = targets[0].Label()
	}
	if !slices.ContainsFunc(targets, func(t realbatch.Target) bool { return t.Label() == *reference }) {
		return fmt.Errorf("--reference %q is not one of the targets", *reference)
	}

	calls, err := os.Create(filepath.Join(*out, "calls.jsonl"))
	if err != nil {
		return err
	}
	defer calls.Close()
	enc := json.NewEncoder(calls)
	var recErr error
	times, err := realbatch.Run(realbatch.Options{
		Batches: batches, Targets: targets, Rounds: *rounds, Warmup: *warmup, Gap: *gap, Progress: stderr,
		Record: func(c realbatch.Call) {
			if err := enc.Encode(c); err != nil && recErr == nil {
				recErr = err
			}
		},
	})
	if err != nil {
		return err
	}
	if recErr != nil {
		return recErr
	}
	sum, err := realbatch.Summarize(times, batches, *reference)
	if err != nil {
		return err
	}
	var table strings.Builder
	fmt.Fprintf(&table, "real-length batches: %s, config %s, %d threads, %d rounds (median of paired ratios over batches x rounds)\n",
		*text, *config, *threads, *rounds)
	if err := sum.WriteText(&table); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "table.txt"), []byte(table.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "summary.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	_, err = io.WriteString(stdout, table.String())
	return err
}

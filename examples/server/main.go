// Command server serves sqc's demo model (internal/demomodel: a 2-layer
// DistilBERT SST-2 sentiment classifier) over the HTTP API of
// text-embeddings-inference, from one static binary: the model is the
// generated package ../sentiment/sentimentmodel (INT8 weights and
// vocabulary embedded, no cgo, nothing read at run time).
//
//	CGO_ENABLED=0 go build -o sentiment-server . && ./sentiment-server --port 3000
//	curl -s localhost:3000/predict -H 'Content-Type: application/json' -d '{"inputs":"a gorgeous film"}'
//
// The flags are runtime/serve's (TEI's names: --hostname, --port,
// --max-batch-tokens, --max-concurrent-requests, ...; see -help).
// SIGTERM or SIGINT drains in-flight requests, then exits 0.
package main

// The generated package is ../sentiment's; `go generate` here regenerates it.
//go:generate go generate ../sentiment

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sqc-dev/sqc/examples/sentiment/sentimentmodel"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/serve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var flags serve.Flags
	flags.Register(fs)
	threads := fs.Int("threads", 0, "model worker threads (0: GOMAXPROCS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, err := sentimentmodel.NewWithOptions(sentimentmodel.Options{Threads: *threads})
	if err != nil {
		return err
	}
	defer m.Close()
	return serve.ListenAndServe(ctx, model(m), &flags, stderr)
}

// model adapts the generated package to serve.Model.
func model(m *sentimentmodel.Model) serve.Model {
	return serve.Func{
		Meta: serve.Info{
			ID: "sst2-distilbert-tiny", Kind: serve.Classifier,
			MaxSequence: sentimentmodel.MaxSequence, MaxBatch: sentimentmodel.MaxBatch,
			TypeVocab: sentimentmodel.TypeVocabSize, Labels: sentimentmodel.Labels(), Kernel: m.Describe(),
			Packed: sentimentmodel.Packed,
		},
		Tok: m.Tokenizer(),
		RunFunc: func(ctx context.Context, b modelrt.Batch) ([][]float32, error) {
			out, err := m.Run(ctx, b)
			return out.Logits, err
		},
	}
}

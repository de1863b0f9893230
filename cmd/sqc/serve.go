package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/runtime/serve"
)

func serveCommand() *cli.Command {
	var sf serve.Flags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	sf.Register(fs)
	flags := append([]cli.Flag{
		&cli.StringFlag{Name: "model", Required: true, Usage: "an .onnx file or a HuggingFace directory (TEI's --model-id, local only)"},
		vocabFlag(),
		&cli.IntFlag{Name: "threads", Usage: "INT8 engine worker threads (0: GOMAXPROCS)"},
		&cli.IntFlag{Name: "max-batch", Value: defaultMaxBatch, Usage: "sequences per engine call (a forward pass of more is chunked by length)"},
	}, int8Flags()...)
	flags = append(flags, stdFlags(fs)...)
	return &cli.Command{
		Name:  "serve",
		Usage: "compile a model to INT8 in process and serve it over the text-embeddings-inference HTTP API",
		Flags: flags,
		Action: func(c *cli.Context) error {
			if err := sf.Check(); err != nil {
				return usageError{err.Error()}
			}
			if c.Int("max-batch") < 1 {
				return usageError{"--max-batch must be at least 1"}
			}
			cfg, err := parseInt8Flags(c, "", c.App.ErrWriter)
			if err != nil {
				return err
			}
			path := c.String("model")
			m, err := loadEngineModel(path, c.String("vocab"), cfg, c.Int("threads"), c.Int("max-batch"), c.App.ErrWriter)
			if err != nil {
				return err
			}
			defer m.Close()
			if sf.ServedModelName == "" {
				sf.ServedModelName = path
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return serve.ListenAndServe(ctx, m, &sf, c.App.ErrWriter)
		},
	}
}

// loadEngineModel loads the model at path with its own head, as sqc run
// applies it (embedding pooling, prompts, max_seq_length, scoring),
// compiles it to INT8 with cfg and returns it ready to serve.
func loadEngineModel(path, vocab string, cfg *int8Config, threads, maxBatch int, stderr io.Writer) (*engineModel, error) {
	g, err := frontend.Load(path)
	if err != nil {
		return nil, err
	}
	head, err := loadModelHead(path, "", g)
	if err != nil {
		return nil, err
	}
	tok, err := loadTokenizer(path, vocab)
	if err != nil {
		return nil, err
	}
	if tok, err = head.tokenizer(tok); err != nil {
		return nil, err
	}
	b, err := buildInt8(g, tok, cfg, stderr) // canonicalises g in place
	if err != nil {
		return nil, err
	}
	return newEngineModel(g, b.int8, tok, head, threads, maxBatch)
}

// stdFlags turns a flag.FlagSet into urfave/cli flags that set the same
// values, so `sqc serve` and a generated package's server (which use the
// standard flag package) take one set of flags with one set of defaults.
func stdFlags(fs *flag.FlagSet) []cli.Flag {
	var out []cli.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			out = append(out, &cli.BoolFlag{Name: f.Name, Usage: f.Usage, Action: func(_ *cli.Context, v bool) error {
				return f.Value.Set(fmt.Sprint(v))
			}})
			return
		}
		out = append(out, &cli.GenericFlag{Name: f.Name, Usage: f.Usage, Value: f.Value, DefaultText: f.DefValue})
	})
	return out
}

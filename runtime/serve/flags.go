package serve

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"time"
)

// Flags are the command-line settings of a server: TEI's names and
// defaults where TEI has the setting. Register them on a flag.FlagSet
// (cmd/sqc turns the same set into its CLI's flags, so both servers take
// the same ones).
type Flags struct {
	Config
	Hostname  string
	Port      int
	LogFormat string // text or json
	LogLevel  string // debug, info, warn, error
	JSON      bool   // TEI's --json-output: --log-format json
}

// Register defines the flags on fs, with their defaults.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Hostname, "hostname", "0.0.0.0", "the IP address to listen on")
	fs.IntVar(&f.Port, "port", 3000, "the port to listen on (0: any free port, logged)")
	fs.IntVar(&f.MaxConcurrentRequests, "max-concurrent-requests", DefaultMaxConcurrentRequests, "requests in the server at once; more get 429 with Retry-After")
	fs.IntVar(&f.MaxBatchTokens, "max-batch-tokens", DefaultMaxBatchTokens, "tokens per forward pass")
	fs.IntVar(&f.MaxBatchRequests, "max-batch-requests", 0, "sequences per forward pass (0: bounded by --max-batch-tokens only)")
	fs.IntVar(&f.MaxClientBatchSize, "max-client-batch-size", DefaultMaxClientBatchSize, "inputs one request may carry; more get 413")
	fs.DurationVar(&f.MaxWait, "max-wait", DefaultMaxWait, "longest a queued input waits for others to share its forward pass")
	fs.IntVar(&f.TokenizationWorkers, "tokenization-workers", 0, "goroutines tokenizing requests (0: one per CPU)")
	fs.BoolVar(&f.AutoTruncate, "auto-truncate", false, "truncate inputs longer than the model takes when a request does not say (else 422)")
	fs.Int64Var(&f.PayloadLimit, "payload-limit", DefaultPayloadLimit, "request body limit in bytes; larger bodies get 413")
	fs.StringVar(&f.ServedModelName, "served-model-name", "", "the model name of /info and OpenAI answers (default: the model's)")
	fs.DurationVar(&f.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "time to read a request's headers")
	fs.DurationVar(&f.ReadTimeout, "read-timeout", 30*time.Second, "time to read a whole request")
	fs.DurationVar(&f.WriteTimeout, "write-timeout", 60*time.Second, "time to answer a request once read")
	fs.DurationVar(&f.IdleTimeout, "idle-timeout", 120*time.Second, "time a keep-alive connection may stay idle")
	fs.DurationVar(&f.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM, time for in-flight requests to finish")
	fs.StringVar(&f.LogFormat, "log-format", "text", "log format: text or json")
	fs.BoolVar(&f.JSON, "json-output", false, "same as --log-format json (TEI's flag)")
	fs.StringVar(&f.LogLevel, "log-level", "info", "log level: debug (every request), info, warn or error")
}

// Logger builds the slog.Logger the flags ask for, writing to w.
func (f *Flags) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	format := f.LogFormat
	if f.JSON {
		format = "json"
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", f.LogFormat)
}

// Check rejects settings no server can run with.
func (f *Flags) Check() error {
	switch {
	case f.Port < 0 || f.Port > 65535:
		return fmt.Errorf("--port %d: want 0..65535", f.Port)
	case f.MaxConcurrentRequests < 1:
		return fmt.Errorf("--max-concurrent-requests %d: want at least 1", f.MaxConcurrentRequests)
	case f.MaxBatchTokens < 1:
		return fmt.Errorf("--max-batch-tokens %d: want at least 1", f.MaxBatchTokens)
	case f.MaxBatchRequests < 0, f.MaxClientBatchSize < 1, f.TokenizationWorkers < 0, f.PayloadLimit < 1:
		return fmt.Errorf("--max-batch-requests, --tokenization-workers must be >= 0; --max-client-batch-size and --payload-limit >= 1")
	case f.MaxWait < 0:
		return fmt.Errorf("--max-wait %s: want a duration >= 0", f.MaxWait)
	}
	if _, err := f.Logger(io.Discard); err != nil {
		return err
	}
	return nil
}

// ListenAndServe serves model on the flags' address with logs on logw
// until ctx ends (wire it to SIGTERM and SIGINT with signal.NotifyContext),
// then drains: see Server.Serve. It closes nothing of the model's.
func ListenAndServe(ctx context.Context, model Model, f *Flags, logw io.Writer) error {
	if err := f.Check(); err != nil {
		return err
	}
	log, err := f.Logger(logw)
	if err != nil {
		return err
	}
	cfg := f.Config
	cfg.Logger = log
	s, err := New(model, cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(f.Hostname, strconv.Itoa(f.Port)))
	if err != nil {
		s.Close()
		return fmt.Errorf("serve: %w", err)
	}
	return s.Serve(ctx, ln)
}

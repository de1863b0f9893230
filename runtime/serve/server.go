package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config are the server's limits. Zero fields take the defaults (TEI's
// where TEI has the setting).
type Config struct {
	MaxConcurrentRequests int           // requests in the server at once, then 429 (512)
	MaxBatchTokens        int           // tokens per forward pass (16384)
	MaxBatchRequests      int           // sequences per forward pass (0: no bound but MaxBatchTokens)
	MaxClientBatchSize    int           // inputs per request, then 413 (32)
	MaxWait               time.Duration // longest a queued sequence waits for company (2ms)
	TokenizationWorkers   int           // goroutines tokenizing (GOMAXPROCS)
	AutoTruncate          bool          // truncate long inputs when a request does not say
	PayloadLimit          int64         // request body bytes, then 413 (2000000)
	ServedModelName       string        // the model name of /info and OpenAI answers (Info().ID)
	Version               string        // reported by /info ("dev")

	ReadHeaderTimeout time.Duration // 10s
	ReadTimeout       time.Duration // whole request, body included (30s)
	WriteTimeout      time.Duration // from the end of the headers to the end of the response (60s)
	IdleTimeout       time.Duration // keep-alive connections (120s)
	ShutdownTimeout   time.Duration // for in-flight requests to finish on shutdown (30s)

	Logger *slog.Logger // nil: slog.Default()
}

// Defaults.
const (
	DefaultMaxConcurrentRequests = 512
	DefaultMaxBatchTokens        = 16384
	DefaultMaxClientBatchSize    = 32
	DefaultMaxWait               = 2 * time.Millisecond
	DefaultPayloadLimit          = 2000000
)

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MaxConcurrentRequests, DefaultMaxConcurrentRequests)
	def(&c.MaxBatchTokens, DefaultMaxBatchTokens)
	def(&c.MaxClientBatchSize, DefaultMaxClientBatchSize)
	def(&c.TokenizationWorkers, runtime.GOMAXPROCS(0))
	defDur(&c.MaxWait, DefaultMaxWait)
	defDur(&c.ReadHeaderTimeout, 10*time.Second)
	defDur(&c.ReadTimeout, 30*time.Second)
	defDur(&c.WriteTimeout, 60*time.Second)
	defDur(&c.IdleTimeout, 120*time.Second)
	defDur(&c.ShutdownTimeout, 30*time.Second)
	if c.PayloadLimit <= 0 {
		c.PayloadLimit = DefaultPayloadLimit
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Server serves one Model. Its handler is safe for concurrent use; Close
// it (or let Serve return) to stop its goroutines.
type Server struct {
	cfg     Config
	info    Info
	model   Model
	enc     *encoder
	batch   *batcher
	m       *metrics
	log     *slog.Logger
	handler http.Handler

	closeOnce sync.Once
	admit     chan struct{} // a token per admitted request
	draining  atomic.Bool
	accepted  atomic.Int64 // requests admitted
	answered  atomic.Int64 // admitted requests answered (any status)
}

// New checks the model and the configuration and starts the batcher and
// the tokenization workers.
func New(model Model, cfg Config) (*Server, error) {
	info, err := checkInfo(model)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.MaxBatchTokens < info.MaxSequence {
		return nil, fmt.Errorf("serve: max batch tokens %d is less than the model's max input length %d: its longest inputs could never run", cfg.MaxBatchTokens, info.MaxSequence)
	}
	if cfg.ServedModelName == "" {
		cfg.ServedModelName = info.ID
	}
	enc, err := newEncoder(model.Tokenizer(), info.MaxSequence, cfg.TokenizationWorkers)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, info: info, model: model, enc: enc, m: newMetrics(), log: cfg.Logger,
		admit: make(chan struct{}, cfg.MaxConcurrentRequests)}
	s.batch = newBatcher(model, info, &cfg, s.m)
	s.handler = s.routes()
	return s, nil
}

// Handler serves the API.
func (s *Server) Handler() http.Handler { return s.handler }

// Close stops the batcher (after the queued sequences ran) and the
// tokenization workers. Requests still arriving get 503.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.draining.Store(true)
		s.batch.close()
		s.enc.close()
	})
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /embed", s.endpoint("embed", false, s.embed))
	mux.HandleFunc("POST /embed_sparse", s.endpoint("embed_sparse", false, s.embedSparse))
	mux.HandleFunc("POST /predict", s.endpoint("predict", false, s.predict))
	mux.HandleFunc("POST /rerank", s.endpoint("rerank", false, s.rerank))
	mux.HandleFunc("POST /classify_tokens", s.endpoint("classify_tokens", false, s.classifyTokens))
	mux.HandleFunc("POST /answer", s.endpoint("answer", false, s.answer))
	mux.HandleFunc("POST /tokenize", s.endpoint("tokenize", false, s.tokenize))
	mux.HandleFunc("POST /similarity", s.endpoint("similarity", false, s.similarity))
	mux.HandleFunc("POST /v1/embeddings", s.endpoint("openai", true, s.openAI))
	// OpenAI's path without /v1, which TEI serves too.
	mux.HandleFunc("POST /embeddings", s.endpoint("embeddings", true, s.openAI))
	mux.HandleFunc("POST /vertex", s.endpoint("vertex", false, s.vertex))
	// POST / answers as the model's own endpoint, as TEI's does, and so
	// does SageMaker's POST /invocations.
	mux.HandleFunc("POST /{$}", s.endpoint("root", false, s.own()))
	mux.HandleFunc("POST /invocations", s.endpoint("invocations", false, s.own()))
	// GET / is the Inference API's health check, GET /ping SageMaker's.
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /{$}", s.health)
	mux.HandleFunc("GET /ping", s.health)
	mux.HandleFunc("GET /info", s.infoHandler)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	return mux
}

// own is the model's own endpoint: what POST / answers as, and a /vertex
// instance that is not a /rerank request.
func (s *Server) own() handlerFunc {
	switch s.info.Kind {
	case Embedder:
		return s.embed
	case SparseEmbedder:
		return s.embedSparse
	case TokenClassifier:
		return s.classifyTokens
	case QuestionAnswerer:
		return s.answer
	}
	return s.predict // classifiers and cross-encoders
}

// Serve answers on ln until ctx ends, then shuts down gracefully: it
// stops accepting, fails /health (503), waits up to ShutdownTimeout for
// the accepted requests, and stops the batcher. It returns nil when every
// accepted request was answered in time.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("listening", "addr", ln.Addr().String(), "model", s.cfg.ServedModelName, "kind", string(s.info.Kind),
		"max_input_length", s.info.MaxSequence, "max_batch_tokens", s.cfg.MaxBatchTokens,
		"max_concurrent_requests", s.cfg.MaxConcurrentRequests, "kernel", s.info.Kernel)
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: draining in-flight requests", "timeout", s.cfg.ShutdownTimeout.String(), "in_flight", s.accepted.Load()-s.answered.Load())
	s.draining.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		err = fmt.Errorf("serve: shutdown: %d requests still in flight after %s: %w", s.accepted.Load()-s.answered.Load(), s.cfg.ShutdownTimeout, err)
		srv.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	s.Close()
	s.log.Info("stopped", "requests_accepted", s.accepted.Load(), "requests_answered", s.answered.Load())
	return err
}

// Counts returns the requests admitted and the admitted requests
// answered so far.
func (s *Server) Counts() (accepted, answered int64) { return s.accepted.Load(), s.answered.Load() }

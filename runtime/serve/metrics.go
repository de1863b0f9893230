package serve

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are a Server's Prometheus collectors, in a registry of its own
// (no global state: two servers in one process count apart).
type metrics struct {
	reg *prometheus.Registry

	requests     *prometheus.CounterVec   // endpoint, status
	latency      *prometheus.HistogramVec // endpoint: whole request
	queueTime    prometheus.Histogram
	tokenizeTime prometheus.Histogram
	inferTime    prometheus.Histogram // per forward pass
	batchSeqs    prometheus.Histogram
	batchTokens  prometheus.Histogram
	padding      prometheus.Histogram // padded / real tokens of a pass
	queueDepth   prometheus.Gauge     // sequences waiting for a pass
	inFlight     prometheus.Gauge     // requests admitted and not answered
	tokens       prometheus.Counter   // tokens computed (rate: tokens per second)
	tokensPerSec prometheus.Gauge     // of the last forward pass
	dropped      prometheus.Counter   // queued sequences whose request went away
}

func newMetrics() *metrics {
	const ns = "sqc_serve"
	secs := prometheus.ExponentialBuckets(0.0005, 2, 16) // 0.5 ms .. 16 s
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "requests_total",
			Help: "HTTP requests by endpoint and status code."}, []string{"endpoint", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "request_duration_seconds",
			Help: "Time from admission to the response, by endpoint.", Buckets: secs}, []string{"endpoint"}),
		queueTime: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "queue_duration_seconds",
			Help: "Time a request's sequences waited for their first forward pass.", Buckets: secs}),
		tokenizeTime: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "tokenization_duration_seconds",
			Help: "Time to tokenize a request, waiting for a worker included.", Buckets: secs}),
		inferTime: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "inference_duration_seconds",
			Help: "Time of one forward pass.", Buckets: secs}),
		batchSeqs: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "batch_sequences",
			Help: "Sequences (request inputs, or windows of a question answering input) per forward pass.", Buckets: prometheus.ExponentialBuckets(1, 2, 11)}),
		batchTokens: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "batch_tokens",
			Help: "Tokens per forward pass, before padding.", Buckets: prometheus.ExponentialBuckets(8, 2, 13)}),
		padding: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "batch_padding_ratio",
			Help: "Token positions computed per real token in a forward pass (1: no padding).", Buckets: []float64{1, 1.05, 1.1, 1.25, 1.5, 2, 3, 4}}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "queue_depth",
			Help: "Sequences waiting for a forward pass."}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "requests_in_flight",
			Help: "Requests admitted and not yet answered."}),
		tokens: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "tokens_total",
			Help: "Tokens computed by forward passes (its rate is the tokens per second)."}),
		tokensPerSec: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "tokens_per_second",
			Help: "Tokens per second of the last forward pass."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "dropped_sequences_total",
			Help: "Queued sequences not computed because their request had gone (client disconnected)."}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.queueTime, m.tokenizeTime, m.inferTime, m.batchSeqs, m.batchTokens,
		m.padding, m.queueDepth, m.inFlight, m.tokens, m.tokensPerSec, m.dropped,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observeBatch records one forward pass of seqs sequences and tokens
// real tokens, padded computes padded token positions.
func (m *metrics) observeBatch(seqs, tokens, padded int, took time.Duration) {
	m.inferTime.Observe(took.Seconds())
	m.batchSeqs.Observe(float64(seqs))
	m.batchTokens.Observe(float64(tokens))
	if tokens > 0 {
		m.padding.Observe(float64(padded) / float64(tokens))
	}
	m.tokens.Add(float64(tokens))
	if s := took.Seconds(); s > 0 {
		m.tokensPerSec.Set(float64(tokens) / s)
	}
}

package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/examples/sentiment/sentimentmodel"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/serve"
)

// recorder is a serve.Model that keeps the batches Run is given.
type recorder struct {
	serve.Model
	mu      sync.Mutex
	batches []modelrt.Batch
}

func (r *recorder) Run(ctx context.Context, b modelrt.Batch) ([][]float32, error) {
	r.mu.Lock()
	r.batches = append(r.batches, b)
	r.mu.Unlock()
	return r.Model.Run(ctx, b)
}

// BenchmarkBatching: does dynamic batching pay? One-sentence /predict
// requests from 64 concurrent clients ("concurrent64") against the same
// requests sent one at a time ("sequential"), and against calling the
// model's Run directly on the batches the server formed in concurrent64
// ("direct": the ceiling, no HTTP, JSON or tokenization). Each reports
// sentences/s; compare medians over -count runs:
//
//	go test -run '^$' -bench Batching -count 5 ./examples/server
func BenchmarkBatching(b *testing.B) {
	m, err := sentimentmodel.New()
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	texts := sentences(b, 256)
	bodies := make([][]byte, len(texts))
	for i, t := range texts {
		bodies[i] = predictBody(t)
	}
	rec := &recorder{Model: model(m)}
	s, err := serve.New(rec, serve.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxConcurrentRequests: 1024})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	send := func(i int) {
		resp, err := client.Post(srv.URL+"/predict", "application/json", bytes.NewReader(bodies[i%len(bodies)]))
		if err != nil {
			b.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Errorf("status %d", resp.StatusCode)
		}
	}
	perSec := func(b *testing.B, sentences int, d time.Duration) {
		b.ReportMetric(float64(sentences)/d.Seconds(), "sentences/s")
	}

	b.Run("sequential", func(b *testing.B) {
		start := time.Now()
		for i := range b.N {
			send(i)
		}
		perSec(b, b.N, time.Since(start))
	})
	var formed []modelrt.Batch
	b.Run("concurrent64", func(b *testing.B) {
		rec.mu.Lock()
		rec.batches = nil
		rec.mu.Unlock()
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
					send(i)
				}
			}()
		}
		wg.Wait()
		perSec(b, b.N, time.Since(start))
		rec.mu.Lock()
		formed = rec.batches
		rec.mu.Unlock()
		n := 0
		for _, fb := range formed {
			n += fb.Len()
		}
		if len(formed) > 0 {
			b.ReportMetric(float64(n)/float64(len(formed)), "sentences/pass")
		}
	})
	b.Run("direct", func(b *testing.B) {
		if len(formed) == 0 {
			b.Skip("concurrent64 formed no batches")
		}
		ctx := context.Background()
		n := 0
		start := time.Now()
		for i := range b.N {
			fb := formed[i%len(formed)]
			if _, err := m.Run(ctx, fb); err != nil {
				b.Fatal(err)
			}
			n += fb.Len()
		}
		perSec(b, n, time.Since(start))
	})
}

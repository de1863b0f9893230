// Package servebench is the benchmark behind the acceptance "batching
// pays": one-input requests to a runtime/serve server from 64 concurrent
// clients, against the same requests sent one at a time, and against
// calling the model's Run directly on the batches the server formed. Both
// the generated demo server (examples/server) and `sqc serve`'s
// in-process engine (cmd/sqc, with a realistic model) run it, so their
// figures are measured the same way.
package servebench

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/serve"
)

// Clients is the number of concurrent clients of "concurrent64".
const Clients = 64

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

func (r *recorder) take() []modelrt.Batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.batches
	r.batches = nil
	return out
}

// Batching runs four sub-benchmarks on m, each reporting sentences/s
// (compare medians over -count runs): "sequential" POSTs bodies to path
// one at a time, "concurrent64" from Clients goroutines at once, and
// "direct" calls m.Run on the batches the server formed in concurrent64
// (the ceiling: no HTTP, JSON or tokenization); "client64" times the
// load generator alone (its cpu-us/sentence, subtracted from
// concurrent64's, is what the server itself costs). Every body is one input.
// The client runs in the same process, on the same cores, over loopback.
func Batching(b *testing.B, m serve.Model, path string, bodies [][]byte) {
	rec := &recorder{Model: m}
	s, err := serve.New(rec, serve.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxConcurrentRequests: 1024})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	// client64's server answers every request with the same /predict-sized
	// JSON. Like srv it lives as long as the benchmark, so that its runs
	// reuse their keep-alive connections as concurrent64's do.
	answer := []byte(`[{"score":0.99786586,"label":"positive"},{"score":0.0021341354,"label":"negative"}]`)
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	defer stub.Close()
	// Keep-alive connections, about one per client and server (the
	// clients' first requests may dial a few more): MaxIdleConnsPerHost
	// above Clients and no MaxIdleConns (0: no bound), so none is closed
	// and dialled again between requests or runs; dials counts them. No
	// gzip negotiation: the server never compresses.
	var dials atomic.Int64
	dialer := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 2 * Clients, DisableCompression: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
	}}
	defer client.CloseIdleConnections()
	// sendTo POSTs body i to url with one client's request, req (nil: a
	// new one); it returns the status (0 on error) and the request, to
	// reuse for the client's next POST. Each POST still sends its headers
	// and body over the connection; reusing the request only saves
	// parsing the URL and building the header map every time.
	sendTo := func(req *http.Request, url string, i int) (int, *http.Request) {
		body := bodies[i%len(bodies)]
		if req == nil {
			var err error
			if req, err = http.NewRequest(http.MethodPost, url+path, nil); err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
		}
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil } // for a retry on a stale connection
		req.Body, _ = req.GetBody()
		resp, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return 0, nil
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close() // the request may be reused from here on
		return resp.StatusCode, req
	}
	send := func(req *http.Request, i int) *http.Request {
		code, req := sendTo(req, srv.URL, i)
		if code != 200 && code != 0 {
			b.Errorf("status %d", code)
		}
		return req
	}
	// fromClients sends bodies 0..n-1 from Clients goroutines at once,
	// each reusing its request.
	fromClients := func(n int, send func(*http.Request, int) *http.Request) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range Clients {
			wg.Go(func() {
				var req *http.Request
				for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
					req = send(req, i)
				}
			})
		}
		wg.Wait()
	}
	// perSec reports throughput, the connections dialled since the last
	// report (0 once every client has its keep-alive connection), and the
	// process's CPU time per sentence since cpu0 (server, client and model
	// together): on a machine shared with other work the wall-clock figure
	// swings with the load, the CPU cost much less.
	perSec := func(b *testing.B, sentences int, d time.Duration, cpu0 time.Duration) {
		b.ReportMetric(float64(sentences)/d.Seconds(), "sentences/s")
		b.ReportMetric(float64(dials.Swap(0)), "dials")
		if cpu1, ok := cpuTime(); ok && sentences > 0 {
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(sentences), "cpu-us/sentence")
		}
	}

	b.Run("sequential", func(b *testing.B) {
		cpu0, _ := cpuTime()
		start := time.Now()
		var req *http.Request
		for i := range b.N {
			req = send(req, i)
		}
		perSec(b, b.N, time.Since(start), cpu0)
	})
	var formed []modelrt.Batch
	b.Run("concurrent64", func(b *testing.B) {
		rec.take()
		cpu0, _ := cpuTime()
		start := time.Now()
		fromClients(b.N, send)
		perSec(b, b.N, time.Since(start), cpu0)
		formed = rec.take()
		n := 0
		for _, fb := range formed {
			n += fb.Len()
		}
		if len(formed) > 0 {
			b.ReportMetric(float64(n)/float64(len(formed)), "sentences/pass")
		}
	})
	// client64 is concurrent64's load generator alone: the same clients
	// and bodies against a handler that reads the body and answers a fixed
	// /predict-sized JSON. Its CPU per request is the part of
	// concurrent64's that a load generator on other cores would not cost
	// the server.
	b.Run("client64", func(b *testing.B) {
		cpu0, _ := cpuTime()
		start := time.Now()
		fromClients(b.N, func(req *http.Request, i int) *http.Request {
			_, req = sendTo(req, stub.URL, i)
			return req
		})
		perSec(b, b.N, time.Since(start), cpu0)
	})
	b.Run("direct", func(b *testing.B) {
		if len(formed) == 0 {
			b.Skip("concurrent64 formed no batches")
		}
		ctx := context.Background()
		n := 0
		cpu0, _ := cpuTime()
		start := time.Now()
		for i := range b.N {
			fb := formed[i%len(formed)]
			if _, err := m.Run(ctx, fb); err != nil {
				b.Fatal(err)
			}
			n += fb.Len()
		}
		perSec(b, n, time.Since(start), cpu0)
	})
}

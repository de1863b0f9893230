package serve

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// post sends body to path on s's handler and returns status and body.
func post(s *Server, ctx context.Context, path, body string) (int, string) {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)).WithContext(ctx)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

var sentences = []string{
	"a good movie", "the film was very bad!", "i love it", "what is deep learning?", "it is not great",
	"the movies", "a film", "i hate the long text", "good", "bad bad bad bad", "search query text", "it was good, it was great",
}

// TestBatchingMergesAndMatchesAlone: concurrent requests share forward
// passes, and each answer is byte for byte the one it gets alone.
func TestBatchingMergesAndMatchesAlone(t *testing.T) {
	m := newFake(t, Classifier)
	s := newTestServer(t, m, Config{MaxWait: 20 * time.Millisecond})
	alone := map[string]string{}
	for _, text := range sentences {
		body := fmt.Sprintf(`{"inputs":%q}`, text)
		code, resp := post(s, context.Background(), "/predict", body)
		if code != 200 {
			t.Fatalf("%s: %d %s", body, code, resp)
		}
		alone[text] = resp
	}
	before := len(m.batchSizes())
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(sentences))
	for round := range 8 {
		for _, text := range sentences {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, resp := post(s, context.Background(), "/predict", fmt.Sprintf(`{"inputs":%q}`, text))
				if code != 200 || resp != alone[text] {
					errs <- fmt.Sprintf("round %d %q: %d %s, alone %s", round, text, code, resp, alone[text])
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	sizes := m.batchSizes()[before:]
	if len(sizes) >= 8*len(sentences) || slices.Max(sizes) < 2 {
		t.Errorf("%d concurrent requests ran in %d passes of %v: no batching", 8*len(sentences), len(sizes), sizes)
	}
}

// TestBatchBounds: no pass exceeds MaxBatchTokens or MaxBatchRequests,
// and a request of many inputs is split across passes.
func TestBatchBounds(t *testing.T) {
	m := newFake(t, Embedder)
	s := newTestServer(t, m, Config{MaxBatchTokens: 20, MaxBatchRequests: 3, MaxWait: 10 * time.Millisecond})
	inputs := `["` + strings.Join(sentences, `","`) + `"]`
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, resp := post(s, context.Background(), "/embed", `{"inputs":`+inputs+`}`); code != 200 {
				t.Errorf("%d %s", code, resp)
			}
		}()
	}
	wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.batches {
		if m.batches[i] > 3 || m.tokens[i] > 20 {
			t.Errorf("pass %d: %d sequences, %d tokens; bounds 3 and 20", i, m.batches[i], m.tokens[i])
		}
	}
}

// TestDisconnectCancels: a request whose client goes away stops waiting;
// its queued sequences never run, and a pass whose every request has
// gone is cancelled.
func TestDisconnectCancels(t *testing.T) {
	m := newFake(t, Embedder)
	m.block = make(chan struct{})
	s := newTestServer(t, m, Config{MaxWait: time.Millisecond})
	ctx1, cancel1 := context.WithCancel(context.Background())
	done1 := make(chan int)
	go func() { code, _ := post(s, ctx1, "/embed", `{"inputs":"a good movie"}`); done1 <- code }()
	waitFor(t, func() bool { return len(m.batchSizes()) == 1 }) // running, blocked
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan int)
	go func() { code, _ := post(s, ctx2, "/embed", `{"inputs":["i love it","the film"]}`); done2 <- code }()
	waitFor(t, func() bool { s.batch.mu.Lock(); defer s.batch.mu.Unlock(); return len(s.batch.queue) == 2 })
	cancel2()
	if code := <-done2; code != 499 {
		t.Errorf("cancelled queued request: status %d, want 499", code)
	}
	cancel1() // the running pass has no live request left: Run's ctx ends
	if code := <-done1; code != 499 {
		t.Errorf("cancelled running request: status %d, want 499", code)
	}
	m.mu.Lock()
	m.block = nil
	m.mu.Unlock()
	if code, resp := post(s, context.Background(), "/embed", `{"inputs":"a"}`); code != 200 {
		t.Fatalf("after cancellations: %d %s", code, resp)
	}
	if sizes := m.batchSizes(); len(sizes) != 2 || sizes[1] != 1 {
		t.Errorf("passes %v: want the blocked one and the last request's, without the cancelled sequences", sizes)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("timed out waiting")
}

// TestOverload429: beyond MaxConcurrentRequests, requests get 429 with
// Retry-After at once; the admitted ones still succeed.
func TestOverload429(t *testing.T) {
	m := newFake(t, Embedder)
	m.block = make(chan struct{})
	s := newTestServer(t, m, Config{MaxConcurrentRequests: 2})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, resp := post(s, context.Background(), "/embed", `{"inputs":"a"}`); code != 200 {
				t.Errorf("admitted request: %d %s", code, resp)
			}
		}()
	}
	waitFor(t, func() bool { a, _ := s.Counts(); return a == 2 })
	for range 5 {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/embed", strings.NewReader(`{"inputs":"a"}`)))
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
			t.Errorf("over the limit: %d (Retry-After %q), want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	close(m.block)
	wg.Wait()
}

// TestServeDrainsOnShutdown: cancelling Serve's context stops new
// connections, lets every accepted request finish, then returns nil.
func TestServeDrainsOnShutdown(t *testing.T) {
	m := newFake(t, Embedder)
	m.block = make(chan struct{})
	s := newTestServer(t, m, Config{ShutdownTimeout: 10 * time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- s.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	results := make(chan string, 6)
	for i := range 6 {
		go func() {
			resp, err := http.Post(url+"/embed", "application/json", strings.NewReader(fmt.Sprintf(`{"inputs":%q}`, sentences[i])))
			if err != nil {
				results <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			results <- fmt.Sprintf("%d %s", resp.StatusCode, b)
		}()
	}
	waitFor(t, func() bool { a, _ := s.Counts(); return a == 6 })
	stop()
	waitFor(t, func() bool { return s.draining.Load() })
	close(m.block)
	for range 6 {
		if r := <-results; !strings.HasPrefix(r, "200 ") {
			t.Errorf("accepted request: %s", r)
		}
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if a, b := s.Counts(); a != 6 || b != 6 {
		t.Errorf("accepted %d, answered %d; want 6 and 6", a, b)
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("the server still accepts connections after shutdown")
	}
}

// TestMetrics: /metrics exposes the server's series.
func TestMetrics(t *testing.T) {
	s := newTestServer(t, newFake(t, Classifier), Config{})
	post(s, context.Background(), "/predict", `{"inputs":"a good movie"}`)
	post(s, context.Background(), "/predict", `{"inputs":`)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`sqc_serve_requests_total{endpoint="predict",status="200"} 1`,
		`sqc_serve_requests_total{endpoint="predict",status="400"} 1`,
		"sqc_serve_request_duration_seconds_bucket", "sqc_serve_queue_duration_seconds_count 1",
		"sqc_serve_tokenization_duration_seconds_count 1", "sqc_serve_inference_duration_seconds_count 1",
		"sqc_serve_batch_sequences_count 1", "sqc_serve_batch_tokens_sum 5", "sqc_serve_batch_padding_ratio_count 1",
		"sqc_serve_queue_depth 0", "sqc_serve_requests_in_flight 0", "sqc_serve_tokens_total 5", "sqc_serve_tokens_per_second",
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestPaddingMetricOfPackedModels: a model that computes real tokens only
// (Info.Packed) reports no padding; one that pads each pass to its
// longest sequence reports the positions it computes per real token.
func TestPaddingMetricOfPackedModels(t *testing.T) {
	for _, packed := range []bool{false, true} {
		m := newFake(t, Classifier)
		m.info.Packed = packed
		s := newTestServer(t, m, Config{})
		// One request of two inputs (a list of two strings would be a
		// pair), one forward pass: [CLS] a [SEP] (3 tokens) and [CLS] a
		// good movie [SEP] (5), 8 real tokens; padded, 2 x 5.
		if code, body := post(s, context.Background(), "/predict", `{"inputs":[["a"],["a good movie"]]}`); code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		want := "sqc_serve_batch_padding_ratio_sum 1.25"
		if packed {
			want = "sqc_serve_batch_padding_ratio_sum 1\n"
		}
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("packed=%v: /metrics lacks %q:\n%s", packed, want, grepLines(rec.Body.String(), "batch_"))
		}
	}
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

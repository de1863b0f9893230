package serve

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkHandler is the server's own cost per one-sentence request,
// without the network or a model: decoding, tokenization, the batcher's
// handoffs, metrics and the JSON answer, with the fake model's instant Run
// and concurrent callers (so the batcher merges). Watch allocs/op.
func BenchmarkHandler(b *testing.B) {
	for _, c := range []struct {
		name, path, body string
		kind             Kind
	}{
		{"predict", "/predict", `{"inputs":"i love this movie , it is a very good film"}`, Classifier},
		{"embed", "/embed", `{"inputs":"what is deep learning ? a good text search query"}`, Embedder},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := newTestServer(b, newFake(b, c.kind), Config{MaxWait: 50 * time.Microsecond, MaxConcurrentRequests: 4096})
			h := s.Handler()
			b.ReportAllocs()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body)))
					if rec.Code != 200 {
						b.Errorf("%d %s", rec.Code, rec.Body)
					}
				}
			})
		})
	}
}

package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// send sends body to path on s's handler with method.
func send(s *Server, method, path, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec
}

// instance is a /vertex instance and the endpoint it is a request of.
type instance struct{ path, body string }

// vertexBody is the /vertex request of instances.
func vertexBody(instances []instance) string {
	bodies := make([]string, len(instances))
	for i, in := range instances {
		bodies[i] = in.body
	}
	return `{"instances":[` + strings.Join(bodies, ",") + `]}`
}

// TestVertexPredictionsAreEndpointAnswers: each prediction of /vertex is
// byte for byte the answer its endpoint gives the instance alone (a
// /rerank request, else the model's own endpoint's), for every kind of
// model, and the request's X-Compute-Tokens is the instances' summed.
func TestVertexPredictionsAreEndpointAnswers(t *testing.T) {
	for _, c := range []struct {
		kind      Kind
		instances []instance
	}{
		{Embedder, []instance{
			{"/embed", `{"inputs":"a good movie"}`},
			{"/embed", `{"inputs":["i love it",[2,17,7,3]],"normalize":false}`},
			{"/embed", `{"inputs":"` + words20 + `","truncate":true,"truncation_direction":"Left"}`},
		}},
		{Classifier, []instance{
			{"/predict", `{"inputs":"i love this movie"}`},
			{"/predict", `{"inputs":["i love it","it is bad"],"raw_scores":true}`},
		}},
		{CrossEncoder, []instance{
			{"/rerank", `{"query":"what is deep learning?","texts":["deep learning","a film"],"return_text":true}`},
			{"/predict", `{"inputs":["what is deep learning","deep learning is good"]}`},
			// Not a /rerank request (texts is not a list): the model's own.
			{"/predict", `{"query":"a","texts":"b","inputs":"a film"}`},
		}},
		{SparseEmbedder, []instance{
			{"/embed_sparse", `{"inputs":"a good movie"}`},
			{"/embed_sparse", `{"inputs":["the the the",[5]]}`},
		}},
		{TokenClassifier, []instance{
			{"/classify_tokens", `{"inputs":"Zoë is the Zürich film"}`},
			{"/classify_tokens", `{"inputs":["searching movies is good"],"aggregation_strategy":"first"}`},
		}},
		{QuestionAnswerer, []instance{
			{"/answer", qaBody("what is it?", zoeLoves, "")},
			{"/answer", qaBody("what?", longContext, `{"max_seq_len":10,"doc_stride":2,"top_k":3}`)},
		}},
	} {
		t.Run(string(c.kind), func(t *testing.T) {
			s := newTestServer(t, newFake(t, c.kind), Config{})
			want := make([]string, len(c.instances))
			tokens := 0
			for i, in := range c.instances {
				rec := send(s, http.MethodPost, in.path, in.body)
				if rec.Code != 200 {
					t.Fatalf("%s %s: %d %s", in.path, in.body, rec.Code, rec.Body)
				}
				want[i] = strings.TrimSuffix(rec.Body.String(), "\n")
				n, _ := strconv.Atoi(rec.Header().Get("X-Compute-Tokens"))
				tokens += n
			}
			rec := send(s, http.MethodPost, "/vertex", vertexBody(c.instances))
			if rec.Code != 200 {
				t.Fatalf("/vertex: %d %s", rec.Code, rec.Body)
			}
			var resp struct{ Predictions []json.RawMessage }
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
				t.Fatalf("%s: %v", rec.Body, err)
			}
			if len(resp.Predictions) != len(want) {
				t.Fatalf("%d predictions for %d instances: %s", len(resp.Predictions), len(want), rec.Body)
			}
			for i, p := range resp.Predictions {
				if string(p) != want[i] {
					t.Errorf("instance %d %s:\n/vertex predicts %s\n%s answers  %s", i, c.instances[i].body, p, c.instances[i].path, want[i])
				}
			}
			if got := rec.Header().Get("X-Compute-Tokens"); got != strconv.Itoa(tokens) {
				t.Errorf("X-Compute-Tokens %s, want the instances' %d", got, tokens)
			}
		})
	}
}

// TestVertexErrorIsEndpointError: a failing instance fails the request
// with the status and body its endpoint answers it with; of several, the
// first in order, however fast the others fail (the last instance here
// fails at once, the one before it only once tokenized).
func TestVertexErrorIsEndpointError(t *testing.T) {
	for _, c := range []struct {
		name      string
		kind      Kind
		cfg       Config
		instances []instance
		failing   int
	}{
		{"400", Embedder, Config{}, []instance{{"/embed", `{"inputs":"a"}`}, {"/embed", `{"input":"b"}`}}, 1},
		{"400 not an object", Classifier, Config{}, []instance{{"/predict", `[1]`}}, 0},
		{"400 empty", CrossEncoder, Config{}, []instance{{"/predict", `{"inputs":"a"}`}, {"/rerank", `{"query":"a","texts":[]}`}}, 1},
		{"400 question", QuestionAnswerer, Config{}, []instance{{"/answer", qaBody("a", "b", "")}, {"/answer", qaBody("", "b", "")}}, 1},
		{"413", Embedder, Config{MaxClientBatchSize: 1}, []instance{{"/embed", `{"inputs":"a"}`}, {"/embed", `{"inputs":["a","b"]}`}}, 1},
		{"422", Embedder, Config{}, []instance{{"/embed", `{"inputs":"` + long + `","truncate":false}`}, {"/embed", `{"inputs":"a"}`}}, 0},
		{"424", Embedder, Config{}, []instance{{"/embed", `{"inputs":"a"}`}, {"/rerank", `{"query":"a","texts":["b"]}`}}, 1},
		{"first in order", Embedder, Config{}, []instance{
			{"/embed", `{"inputs":"a"}`},
			{"/embed", `{"inputs":["b","` + long + `"],"truncate":false}`},
			{"/embed", `{"input":"b"}`},
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newTestServer(t, newFake(t, c.kind), c.cfg)
			in := c.instances[c.failing]
			want := send(s, http.MethodPost, in.path, in.body)
			if want.Code == 200 {
				t.Fatalf("%s %s: 200, want an error", in.path, in.body)
			}
			for range 20 {
				got := send(s, http.MethodPost, "/vertex", vertexBody(c.instances))
				if got.Code != want.Code || got.Body.String() != want.Body.String() {
					t.Fatalf("/vertex: %d %s, want instance %d's %s answer %d %s", got.Code, got.Body, c.failing, in.path, want.Code, want.Body)
				}
			}
		})
	}
}

// TestVertexInstancesBatch: a request's instances run concurrently, so
// they share forward passes, and each prediction is its instance's
// answer alone.
func TestVertexInstancesBatch(t *testing.T) {
	m := newFake(t, Embedder)
	s := newTestServer(t, m, Config{MaxWait: 20 * time.Millisecond})
	instances := make([]instance, 8)
	alone := make([]string, len(instances))
	for i := range instances {
		body, _ := json.Marshal(map[string]string{"inputs": sentences[i]})
		instances[i] = instance{"/embed", string(body)}
		code, resp := post(s, context.Background(), "/embed", string(body))
		if code != 200 {
			t.Fatalf("%s: %d %s", body, code, resp)
		}
		alone[i] = strings.TrimSuffix(resp, "\n")
	}
	before := len(m.batchSizes())
	code, resp := post(s, context.Background(), "/vertex", vertexBody(instances))
	if code != 200 {
		t.Fatalf("/vertex: %d %s", code, resp)
	}
	if want := `{"predictions":[` + strings.Join(alone, ",") + `]}` + "\n"; resp != want {
		t.Errorf("/vertex answered\n%s, want the instances' answers alone\n%s", resp, want)
	}
	if sizes := m.batchSizes()[before:]; len(sizes) >= len(instances) || slices.Max(sizes) < 2 {
		t.Errorf("%d instances ran in passes of %v: not batched together", len(instances), sizes)
	}
}

// TestVertexAdmission: a request's instances are admitted as requests:
// they hold places while they run and give them back, and a request
// whose instances do not fit in the free places gets 429 (and holds
// none), one with more than the server ever admits 413.
func TestVertexAdmission(t *testing.T) {
	m := newFake(t, Embedder)
	m.block = make(chan struct{})
	s := newTestServer(t, m, Config{MaxConcurrentRequests: 4})
	three := vertexBody([]instance{{"", `{"inputs":"a"}`}, {"", `{"inputs":"b"}`}, {"", `{"inputs":"c"}`}})
	done := make(chan int)
	go func() { code, _ := post(s, context.Background(), "/vertex", three); done <- code }()
	waitFor(t, func() bool { return len(m.batchSizes()) > 0 }) // running, blocked
	if n := len(s.admit); n != 3 {
		t.Errorf("a running request of 3 instances holds %d places, want 3", n)
	}
	if code, body := post(s, context.Background(), "/vertex", three); code != 429 {
		t.Errorf("3 instances with 1 place free: %d %s, want 429", code, body)
	}
	if n := len(s.admit); n != 3 {
		t.Errorf("after a 429, %d places held, want the running request's 3", n)
	}
	close(m.block) // every pass runs from now on
	if code := <-done; code != 200 {
		t.Errorf("running request: %d", code)
	}
	if n := len(s.admit); n != 0 {
		t.Errorf("after the answers, %d places held, want 0", n)
	}
	five := vertexBody(slices.Repeat([]instance{{"", `{"inputs":"a"}`}}, 5))
	if code, body := post(s, context.Background(), "/vertex", five); code != 413 {
		t.Errorf("5 instances, at most 4 requests at once: %d %s, want 413", code, body)
	}
}

// TestAliases: POST /embeddings answers as /v1/embeddings, POST
// /invocations as POST /, and GET / and GET /ping as GET /health, when
// healthy and while draining.
func TestAliases(t *testing.T) {
	same := func(t *testing.T, s *Server, method, path, alias, body string) {
		t.Helper()
		want, got := send(s, method, path, body), send(s, method, alias, body)
		if got.Code != want.Code || got.Body.String() != want.Body.String() || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("%s %s: %d %q, want %s's %d %q", method, alias, got.Code, got.Body, path, want.Code, want.Body)
		}
	}
	for _, kind := range []Kind{Embedder, SparseEmbedder, Classifier, CrossEncoder, TokenClassifier, QuestionAnswerer} {
		s := newTestServer(t, newFake(t, kind), Config{})
		body := `{"inputs":"a good movie"}`
		if kind == QuestionAnswerer {
			body = qaBody("what is it?", zoeLovesIt, "")
		}
		same(t, s, http.MethodPost, "/", "/invocations", body)
		same(t, s, http.MethodPost, "/", "/invocations", `{"input":"a"}`)
		same(t, s, http.MethodPost, "/v1/embeddings", "/embeddings", `{"input":["a good movie","i love it"],"encoding_format":"base64"}`)
		same(t, s, http.MethodPost, "/v1/embeddings", "/embeddings", `{"inputs":"a"}`)
		for _, draining := range []bool{false, true} {
			s.draining.Store(draining)
			same(t, s, http.MethodGet, "/health", "/", "")
			same(t, s, http.MethodGet, "/health", "/ping", "")
		}
		if rec := send(s, http.MethodGet, "/ping", ""); rec.Code != 503 {
			t.Errorf("GET /ping while draining: %d, want 503", rec.Code)
		}
	}
}

// TestNewEndpointsMetrics: /similarity, /vertex, /invocations and
// /embeddings count under their own endpoint labels, refusals too; a
// /vertex request's instances count once, under vertex, not under their
// endpoints.
func TestNewEndpointsMetrics(t *testing.T) {
	s := newTestServer(t, newFake(t, Embedder), Config{})
	for _, r := range []struct{ path, body string }{
		{"/similarity", `{"inputs":{"source_sentence":"a","sentences":["b"]}}`},
		{"/similarity", `{"inputs":{"source_sentence":"a","sentences":[]}}`},
		{"/vertex", `{"instances":[{"inputs":"a"},{"inputs":"b"}]}`},
		{"/vertex", `{"instances":[{"query":"a","texts":["b"]}]}`},
		{"/invocations", `{"inputs":"a"}`},
		{"/embeddings", `{"input":"a"}`},
	} {
		post(s, context.Background(), r.path, r.body)
	}
	metrics := send(s, http.MethodGet, "/metrics", "").Body.String()
	for _, want := range []string{
		`sqc_serve_requests_total{endpoint="similarity",status="200"} 1`,
		`sqc_serve_requests_total{endpoint="similarity",status="400"} 1`,
		`sqc_serve_requests_total{endpoint="vertex",status="200"} 1`,
		`sqc_serve_requests_total{endpoint="vertex",status="424"} 1`,
		`sqc_serve_requests_total{endpoint="invocations",status="200"} 1`,
		`sqc_serve_requests_total{endpoint="embeddings",status="200"} 1`,
		`sqc_serve_request_duration_seconds_count{endpoint="vertex"} 2`,
		`sqc_serve_request_duration_seconds_count{endpoint="similarity"} 2`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(metrics, "requests_total"))
		}
	}
	for _, unwanted := range []string{`endpoint="embed"`, `endpoint="rerank"`, `endpoint="root"`, `endpoint="openai"`} {
		if strings.Contains(metrics, unwanted) {
			t.Errorf("/metrics counts %s, which no request was sent to:\n%s", unwanted, grepLines(metrics, unwanted))
		}
	}
}

package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// sparseEntry is one {index, value} of /embed_sparse with the value's
// JSON as the server wrote it.
type sparseEntry struct {
	Index int             `json:"index"`
	Value json.RawMessage `json:"value"`
}

func (e sparseEntry) String() string { return fmt.Sprintf("%d:%s", e.Index, e.Value) }

// TestEmbedSparseByHand checks /embed_sparse against answers worked out
// by hand from the fake's weights (sparseWeight: 0, 1/3, 2/3, 0, ... by
// position). "a good movie" is [CLS] a good movie [SEP], ids 2 6 9 7 3:
// [CLS] and "movie" weigh 0 and are left out. "the the the" is [CLS]
// the the the [SEP]: "the" (5) keeps its largest weight, 2/3. One token
// id at position 0 weighs nothing: an empty list, not null.
func TestEmbedSparseByHand(t *testing.T) {
	m := newFake(t, SparseEmbedder)
	s := newTestServer(t, m, Config{})
	code, body := post(s, context.Background(), "/embed_sparse", `{"inputs":["a good movie","the the the",[5]]}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	const third, twoThirds = "0.33333334", "0.6666667" // float32's shortest digits
	want := [][]sparseEntry{
		{{3, json.RawMessage(third)}, {6, json.RawMessage(third)}, {9, json.RawMessage(twoThirds)}},
		{{3, json.RawMessage(third)}, {5, json.RawMessage(twoThirds)}},
		{},
	}
	var got [][]sparseEntry
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if !strings.HasSuffix(strings.TrimSpace(body), ",[]]") {
		t.Errorf("%s: the vector of no weights is not []", body)
	}

	// A single text is answered as a list of one list, as TEI's
	// EmbedSparseResponse always is.
	_, single := post(s, context.Background(), "/embed_sparse", `{"inputs":"a good movie"}`)
	if want := `[[{"index":3,"value":0.33333334},{"index":6,"value":0.33333334},{"index":9,"value":0.6666667}]]` + "\n"; single != want {
		t.Errorf("single text: %q, want %q", single, want)
	}
}

// TestEmbedSparseIsDenseNonZeros: each input's entries are exactly the
// non-zero entries of the dense vector /embed answers with "normalize":
// false, in index order, and each value is written as /embed writes it.
func TestEmbedSparseIsDenseNonZeros(t *testing.T) {
	s := newTestServer(t, newFake(t, SparseEmbedder), Config{})
	inputs := `["what is deep learning?","i love searching movies, i hate long text",[2,17,7,3],"good good good good"]`
	code, sparse := post(s, context.Background(), "/embed_sparse", `{"inputs":`+inputs+`}`)
	if code != 200 {
		t.Fatalf("/embed_sparse: %d %s", code, sparse)
	}
	code, dense := post(s, context.Background(), "/embed", `{"inputs":`+inputs+`,"normalize":false}`)
	if code != 200 {
		t.Fatalf("/embed: %d %s", code, dense)
	}
	var got [][]sparseEntry
	var vecs [][]json.RawMessage
	if err := json.Unmarshal([]byte(sparse), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(dense), &vecs); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || len(vecs) != 4 {
		t.Fatalf("%d sparse and %d dense answers for 4 inputs", len(got), len(vecs))
	}
	for i, v := range vecs {
		if len(v) != s.enc.full.VocabSize() {
			t.Errorf("input %d: dense vector of %d entries, want the vocabulary's %d", i, len(v), s.enc.full.VocabSize())
		}
		var want []sparseEntry
		for j, x := range v {
			if string(x) != "0" {
				want = append(want, sparseEntry{j, x})
			}
		}
		if fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Errorf("input %d: sparse %v, want /embed's non-zeros %v", i, got[i], want)
		}
	}
}

// TestEmbedSparseNormalize: /embed on a sparse embedder answers only
// "normalize": false; normalize, given or TEI's default, is TEI's 424 at
// /embed and always at /v1/embeddings. /embed_sparse takes no normalize:
// it is ignored, whatever its value.
func TestEmbedSparseNormalize(t *testing.T) {
	s := newTestServer(t, newFake(t, SparseEmbedder), Config{})
	const msg = "`normalize` is not available for SPLADE models"
	for _, c := range []struct {
		path, body string
		code       int
	}{
		{"/embed", `{"inputs":"a movie"}`, 424},
		{"/embed", `{"inputs":"a movie","normalize":true}`, 424},
		{"/embed", `{"inputs":"a movie","normalize":false}`, 200},
		{"/v1/embeddings", `{"input":"a movie"}`, 424},
		{"/v1/embeddings", `{"input":"a movie","encoding_format":"base64"}`, 424},
		{"/embed_sparse", `{"inputs":"a movie","normalize":true}`, 200},
		{"/embed_sparse", `{"inputs":"a movie","normalize":false}`, 200},
	} {
		code, body := post(s, context.Background(), c.path, c.body)
		if code != c.code || code == 424 && !strings.Contains(body, msg) {
			t.Errorf("%s %s: %d %s, want %d", c.path, c.body, code, body, c.code)
		}
	}
}

// TestEmbedSparseBatchedMatchesAlone: concurrent /embed_sparse requests
// share forward passes, and each answer is byte for byte the one it gets
// alone.
func TestEmbedSparseBatchedMatchesAlone(t *testing.T) {
	m := newFake(t, SparseEmbedder)
	s := newTestServer(t, m, Config{MaxWait: 20 * time.Millisecond})
	alone := make([]string, len(sentences))
	for i, text := range sentences {
		var code int
		if code, alone[i] = post(s, context.Background(), "/embed_sparse", fmt.Sprintf(`{"inputs":%q}`, text)); code != 200 {
			t.Fatalf("%q: %d %s", text, code, alone[i])
		}
	}
	before := len(m.batchSizes())
	var wg sync.WaitGroup
	for round := range 4 {
		for i, text := range sentences {
			wg.Go(func() {
				if code, got := post(s, context.Background(), "/embed_sparse", fmt.Sprintf(`{"inputs":%q}`, text)); code != 200 || got != alone[i] {
					t.Errorf("round %d %q: %d %s, alone %s", round, text, code, got, alone[i])
				}
			})
		}
	}
	wg.Wait()
	if sizes := m.batchSizes()[before:]; slices.Max(sizes) < 2 {
		t.Errorf("%d concurrent requests ran in passes of %v: no batching", 4*len(sentences), sizes)
	}
}

// TestEmbedSparseMetrics: /embed_sparse counts under its own endpoint
// label, its refusals too.
func TestEmbedSparseMetrics(t *testing.T) {
	s := newTestServer(t, newFake(t, SparseEmbedder), Config{})
	post(s, context.Background(), "/embed_sparse", `{"inputs":"a good movie"}`)
	post(s, context.Background(), "/embed", `{"inputs":"a good movie"}`)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{
		`sqc_serve_requests_total{endpoint="embed_sparse",status="200"} 1`,
		`sqc_serve_requests_total{endpoint="embed",status="424"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(rec.Body.String(), "requests_total"))
		}
	}
}

// TestSparseEmbedderKind: New accepts a sparse embedder, and its error
// for an unknown kind names it among the kinds it wants.
func TestSparseEmbedderKind(t *testing.T) {
	m := newFake(t, SparseEmbedder)
	s, err := New(m, Config{Logger: quietLogger()})
	if err != nil {
		t.Fatalf("New of a sparse embedder: %v", err)
	}
	s.Close()
	m.info.Kind = "splade"
	if _, err := New(m, Config{Logger: quietLogger()}); err == nil || !strings.Contains(err.Error(), `"sparse-embedding"`) {
		t.Errorf("New of kind %q: %v, want an error naming %q", m.info.Kind, err, SparseEmbedder)
	}
}

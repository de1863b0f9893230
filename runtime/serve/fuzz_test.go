package serve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fuzzEndpoint feeds arbitrary bodies to one endpoint of a server of the
// given kind: no panic, no 5xx, and every answer is JSON (an error in
// TEI's or OpenAI's shape for every 4xx).
func fuzzEndpoint(f *testing.F, kind Kind, path string) {
	for _, c := range apiCases {
		if c.path == path && c.method == "" {
			f.Add(c.body)
		}
	}
	for _, seed := range []string{`null`, `{}`, `{"inputs":null}`, `{"inputs":[[]]}`, `{"inputs":"\u0000\ud800"}`, `{"inputs":[["a","b"],["c"]],"truncate":true}`, `{"query":"","texts":[""]}`, `{"inputs":["Zoë",""],"aggregation_strategy":"NONE"}`, "{\"inputs\":\"" + strings.Repeat("ab ", 40) + "\",\"truncate\":true}",
		`{"inputs":[5,6,7]}`, `{"inputs":[[5],"a",[4294967296]]}`, `{"input":[[5,6],[7]]}`, `{"inputs":[[]],"prompt_name":"q"}`,
		`{"inputs":"` + strings.Repeat("the ", 30) + `","truncate":true,"truncation_direction":"Left"}`,
		`{"inputs":{"question":"what?","context":"` + strings.Repeat("the ", 30) + `"},"parameters":{"max_seq_len":6,"doc_stride":0,"top_k":9}}`,
		`{"inputs":[{"question":"Zoë?","context":"\u00e9 a"}],"max_answer_len":1,"align_to_words":false,"handle_impossible_answer":true}`,
		`{"inputs":{"source_sentence":"","sentences":["","\u0000",""]},"parameters":{"truncate":true,"truncation_direction":"left","prompt_name":null}}`,
		`{"instances":[{"query":"","texts":[""]},{"inputs":[["a","b"],["c"]]},null,{"instances":[]}]}`} {
		f.Add(seed)
	}
	m := newFake(f, kind)
	s := newTestServer(f, m, Config{MaxWait: time.Nanosecond, MaxClientBatchSize: 8, PayloadLimit: 4096})
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		default:
			t.Fatalf("POST %s %q: status %d %s", path, body, rec.Code, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("POST %s %q: status %d, body not JSON: %q", path, body, rec.Code, rec.Body)
		}
		if rec.Code != http.StatusOK {
			checkErrorShape(t, rec.Body.Bytes())
		}
	})
}

func FuzzEmbed(f *testing.F)    { fuzzEndpoint(f, Embedder, "/embed") }
func FuzzPredict(f *testing.F)  { fuzzEndpoint(f, Classifier, "/predict") }
func FuzzRerank(f *testing.F)   { fuzzEndpoint(f, CrossEncoder, "/rerank") }
func FuzzTokenize(f *testing.F) { fuzzEndpoint(f, Embedder, "/tokenize") }
func FuzzOpenAI(f *testing.F)   { fuzzEndpoint(f, Embedder, "/v1/embeddings") }
func FuzzRoot(f *testing.F)     { fuzzEndpoint(f, CrossEncoder, "/") }
func FuzzAnswer(f *testing.F)   { fuzzEndpoint(f, QuestionAnswerer, "/answer") }
func FuzzEmbedSparse(f *testing.F) {
	fuzzEndpoint(f, SparseEmbedder, "/embed_sparse")
}
func FuzzClassifyTokens(f *testing.F) {
	fuzzEndpoint(f, TokenClassifier, "/classify_tokens")
}
func FuzzSimilarity(f *testing.F) { fuzzEndpoint(f, Embedder, "/similarity") }

// FuzzVertex fuzzes /vertex on a cross-encoder, whose instances may be
// /rerank requests or its own /predict ones: neither is a 424.
func FuzzVertex(f *testing.F) { fuzzEndpoint(f, CrossEncoder, "/vertex") }

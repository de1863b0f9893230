package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// postSimilarity posts body to /similarity and decodes its scores.
func postSimilarity(t *testing.T, s *Server, body string) []float32 {
	t.Helper()
	code, resp := post(s, context.Background(), "/similarity", body)
	if code != 200 {
		t.Fatalf("%s: %d %s", body, code, resp)
	}
	var got []float32
	if err := json.Unmarshal([]byte(resp), &got); err != nil {
		t.Fatalf("%s: %s: %v", body, resp, err)
	}
	return got
}

// TestSimilarityByHand checks /similarity against cosines worked out by
// hand from the fake embedder's vectors, [n, (Σ id·(j+1) mod 97)/8,
// ids[1], 0.5] for a sequence of n tokens:
//
//	"a good movie"      [CLS] a good movie [SEP]       2 6 9 7 3       Σ 84   [5, 10.5, 6, 0.5]
//	"the film was bad!" [CLS] the film was bad ! [SEP] 2 5 8 13 10 23 3 Σ 297 [7, 0.75, 5, 0.5]
//	"i love it"         [CLS] i love it [SEP]          2 25 27 26 3    Σ 252  [5, 7.25, 25, 0.5]
//
// The source's squared norm is 25 + 110.25 + 36 + 0.25 = 171.5; its dot
// products with the others are 35 + 7.875 + 30 + 0.25 = 73.125 and
// 25 + 76.125 + 150 + 0.25 = 251.375, their squared norms 74.8125 and
// 702.8125. A sentence equal to the source scores exactly 1.
func TestSimilarityByHand(t *testing.T) {
	s := newTestServer(t, newFake(t, Embedder), Config{})
	got := postSimilarity(t, s, `{"inputs":{"source_sentence":"a good movie","sentences":["a good movie","the film was bad!","i love it"]}}`)
	want := []float32{
		1,
		float32(73.125 / (math.Sqrt(171.5) * math.Sqrt(74.8125))),
		float32(251.375 / (math.Sqrt(171.5) * math.Sqrt(702.8125))),
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestSimilaritySparseByHand: a sparse embedder's dense vectors
// (sparseWeight by position: 0, 1/3, 2/3, 0, 1/3, ...) are compared as
// TEI compares them. "a good movie" is {[SEP] 3: 1/3, a 6: 1/3, good 9:
// 2/3} and "the the the" {[SEP] 3: 1/3, the 5: 2/3}: float32's 2/3 is
// exactly twice its 1/3, so the vectors are (1, 1, 2) and (1, 2) times
// one factor and the cosine is 1 / sqrt(6 · 5).
func TestSimilaritySparseByHand(t *testing.T) {
	s := newTestServer(t, newFake(t, SparseEmbedder), Config{})
	got := postSimilarity(t, s, `{"inputs":{"source_sentence":"a good movie","sentences":["the the the","a good movie"]}}`)
	if want := []float32{float32(1 / math.Sqrt(30)), 1}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestCosine: cosines worked out by hand, the clamp, and TEI's answers
// for zero vectors (1 for two, 0 for one).
func TestCosine(t *testing.T) {
	many := make([]float32, 1000)
	for i := range many {
		many[i] = 0.1 * float32(i%7+1)
	}
	for _, c := range []struct {
		a, b []float32
		want float32
	}{
		{[]float32{3, 4}, []float32{4, 3}, 0.96}, // 24 / (5 · 5)
		{[]float32{1, 2}, []float32{2, 4}, 1},
		{[]float32{1, 0}, []float32{-2, 0}, -1},
		{[]float32{1, 0}, []float32{0, 5}, 0},
		{[]float32{1, 1}, []float32{1, 0}, float32(1 / math.Sqrt2)},
		{[]float32{0, 0}, []float32{0, 0}, 1},
		{[]float32{0, 0}, []float32{1, 2}, 0},
		{[]float32{1, 2}, []float32{0, 0}, 0},
		{many, many, 1},
	} {
		if got := cosine(c.a, c.b); got != c.want {
			t.Errorf("cosine(%v, %v) = %v, want %v", c.a[:min(len(c.a), 4)], c.b[:min(len(c.b), 4)], got, c.want)
		}
	}
}

// TestSimilarityIsEmbedCosine: /similarity embeds exactly as /embed does
// with normalize false (truncation, direction, prompts): each score is
// the cosine of /embed's vectors of the same texts and parameters.
func TestSimilarityIsEmbedCosine(t *testing.T) {
	m := newFake(t, Embedder)
	withPrompts(&m.info)
	s := newTestServer(t, m, Config{})
	for _, c := range []struct {
		source    string
		sentences []string
		params    string // /similarity's parameters, /embed's fields
	}{
		{"what is deep learning?", []string{"deep learning is good", "a film", "i love it"}, ``},
		{words20, []string{words20, "the movies", long}, `"truncate":true,"truncation_direction":"Left","prompt_name":"query"`},
		{long, []string{"a"}, `"truncate":true`},
		{"a movie", []string{"the movie", "a movie"}, `"prompt_name":"passage"`},
	} {
		texts, _ := json.Marshal(c.sentences)
		source, _ := json.Marshal(c.source)
		inputs, _ := json.Marshal(append([]string{c.source}, c.sentences...))
		body := fmt.Sprintf(`{"inputs":{"source_sentence":%s,"sentences":%s},"parameters":{%s}}`, source, texts, c.params)
		got := postSimilarity(t, s, body)
		embedBody := fmt.Sprintf(`{"inputs":%s,"normalize":false%s}`, inputs, strings.TrimRight(","+c.params, ","))
		code, resp := post(s, context.Background(), "/embed", embedBody)
		if code != 200 {
			t.Fatalf("%s: %d %s", embedBody, code, resp)
		}
		var vecs [][]float32
		if err := json.Unmarshal([]byte(resp), &vecs); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, len(c.sentences))
		for i, v := range vecs[1:] {
			want[i] = cosine(vecs[0], v)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want the cosines of /embed's vectors %v", body, got, want)
		}
	}
}

// TestSimilarityClientBatch: the source counts in the client batch size,
// as TEI counts it: 1 + len(sentences).
func TestSimilarityClientBatch(t *testing.T) {
	s := newTestServer(t, newFake(t, Embedder), Config{MaxClientBatchSize: 3})
	if code, body := post(s, context.Background(), "/similarity", `{"inputs":{"source_sentence":"a","sentences":["b","c"]}}`); code != 200 {
		t.Errorf("1 + 2 texts: %d %s", code, body)
	}
	code, body := post(s, context.Background(), "/similarity", `{"inputs":{"source_sentence":"a","sentences":["b","c","d"]}}`)
	var e apiError
	if code != 413 || json.Unmarshal([]byte(body), &e) != nil || e.Msg != "batch size 4 > maximum allowed batch size 3" {
		t.Errorf("1 + 3 texts: %d %s, want 413 for a batch of 4", code, body)
	}
}

// TestSimilarityBatchedMatchesAlone: concurrent /similarity requests
// share forward passes, and each answer is byte for byte the one it gets
// alone.
func TestSimilarityBatchedMatchesAlone(t *testing.T) {
	m := newFake(t, Embedder)
	s := newTestServer(t, m, Config{MaxWait: 20 * time.Millisecond})
	body := func(i int) string {
		texts, _ := json.Marshal([]string{sentences[(i+1)%len(sentences)], sentences[(i+5)%len(sentences)]})
		return fmt.Sprintf(`{"inputs":{"source_sentence":%q,"sentences":%s}}`, sentences[i], texts)
	}
	alone := make([]string, len(sentences))
	for i := range sentences {
		var code int
		if code, alone[i] = post(s, context.Background(), "/similarity", body(i)); code != 200 {
			t.Fatalf("%s: %d %s", body(i), code, alone[i])
		}
	}
	before := len(m.batchSizes())
	var wg sync.WaitGroup
	for round := range 4 {
		for i := range sentences {
			wg.Go(func() {
				if code, got := post(s, context.Background(), "/similarity", body(i)); code != 200 || got != alone[i] {
					t.Errorf("round %d %s: %d %s, alone %s", round, body(i), code, got, alone[i])
				}
			})
		}
	}
	wg.Wait()
	if sizes := m.batchSizes()[before:]; slices.Max(sizes) <= 3 {
		t.Errorf("%d concurrent requests of 3 texts ran in passes of %v: no batching across requests", 4*len(sentences), sizes)
	}
}

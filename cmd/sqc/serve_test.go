package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/demomodel"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/serve"
)

// demoDir extracts the embedded demo model and its calibration texts.
func demoDir(t testing.TB) (model, calib string) {
	t.Helper()
	tmp := t.TempDir()
	dir, err := demomodel.Extract(tmp)
	if err != nil {
		t.Fatal(err)
	}
	calib = filepath.Join(tmp, "calib.txt")
	if err := os.WriteFile(calib, []byte(demomodel.Calibration), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, calib
}

func TestServeBadFlags(t *testing.T) {
	model, calib := demoDir(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--port", "70000"}, "--port 70000"},
		{[]string{"--log-format", "xml"}, "--log-format"},
		{[]string{"--max-wait", "soon"}, "max-wait"},
		{[]string{"--max-batch", "0"}, "--max-batch"},
	} {
		code, _, errs := runCLI(t, append([]string{"serve", "--model", model, "--calib", calib, "--hostname", "127.0.0.1"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want 2 naming %s", tc.args, code, errs, tc.want)
		}
	}
	code, _, errs := runCLI(t, "serve", "--model", filepath.Join(t.TempDir(), "missing.onnx"), "--calib", calib)
	if code != 2 || !strings.Contains(errs, "missing.onnx") {
		t.Errorf("missing model: exit %d, stderr %q; want 2 naming the file", code, errs)
	}
}

// TestServeEngine: the in-process engine behind the API classifies, and
// concurrent (batched) requests get the bytes a request sent alone gets.
func TestServeEngine(t *testing.T) {
	model, calib := demoDir(t)
	url := engineServer(t, model, calib, serve.Classifier)
	if _, body := post(t, url+"/predict", "a gorgeous, witty, seductive movie."); !strings.HasPrefix(body, `[{"score":0.99`) || !strings.Contains(body, `"label":"positive"},{`) {
		t.Errorf("a clearly positive review: %s", body)
	}
	batchedMatchesAlone(t, url+"/predict")
}

// TestServeEngineEmbedder: the same model without its classification head
// (config.json naming DistilBertModel) serves mean-pooled embeddings.
func TestServeEngineEmbedder(t *testing.T) {
	model, calib := demoDir(t)
	cfgPath := filepath.Join(model, "config.json")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "DistilBertForSequenceClassification", "DistilBertModel", 1))
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	url := engineServer(t, model, calib, serve.Embedder)
	code, body := post(t, url+"/embed", "a gorgeous movie")
	var vecs [][]float64
	if err := json.Unmarshal([]byte(body), &vecs); code != 200 || err != nil || len(vecs) != 1 {
		t.Fatalf("/embed: %d %s (%v)", code, body, err)
	}
	var norm float64
	for _, x := range vecs[0] {
		norm += x * x
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Errorf("normalized embedding has squared norm %g", norm)
	}
	batchedMatchesAlone(t, url+"/embed")
}

// post sends {"inputs": text} to url.
func post(t *testing.T, url, text string) (int, string) {
	resp, err := http.Post(url, "application/json", strings.NewReader(fmt.Sprintf(`{"inputs":%q}`, text)))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// batchedMatchesAlone sends 24 texts one at a time, then three rounds of
// all of them at once: every concurrent answer must equal the lone one.
func batchedMatchesAlone(t *testing.T, url string) {
	texts := strings.Split(strings.TrimSpace(demomodel.Calibration), "\n")[:24]
	alone := map[string]string{}
	for _, text := range texts {
		code, body := post(t, url, text)
		if code != 200 {
			t.Fatalf("%q: %d %s", text, code, body)
		}
		alone[text] = body
	}
	var wg sync.WaitGroup
	for round := range 3 {
		for _, text := range texts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if code, body := post(t, url, text); code != 200 || body != alone[text] {
					t.Errorf("round %d %q: %d %s; alone %s", round, text, code, body, alone[text])
				}
			}()
		}
	}
	wg.Wait()
}

// engineServer compiles model in process as `sqc serve` does and serves
// it on an httptest server; the model must be of the given kind.
func engineServer(t *testing.T, model, calib string, kind serve.Kind) string {
	t.Helper()
	m, err := loadEngineModel(model, "", &int8Config{calibPath: calib, calibSamples: defaultCalibSamples, quant: passes.QuantOptions{Alpha: 0.5, Act: compiler.QLinearStatic}}, 2, 4, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if info := m.Info(); info.Kind != kind {
		t.Fatalf("engine model info %+v: want kind %s", info, kind)
	}
	s, err := serve.New(m, serve.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// postJSON sends body to url and returns the status and the answer.
func postJSON(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// TestServeSentenceTransformers: for a sentence-transformers folder,
// /embed (and /v1/embeddings) answer bit for bit the embeddings `sqc run
// --int8` prints: the folder's pooling, Dense and Normalize, its prompts
// and its max_seq_length.
func TestServeSentenceTransformers(t *testing.T) {
	texts := writeLines(t, "texts.txt", headTexts)
	flags := []string{"--act", "static", "--alpha", "0.5", "--calib", texts}
	plain := runLines[embeddingLine](t, append([]string{"run", "--int8", "--model", stTiny, "--texts", texts}, flags...)...)
	query := runLines[embeddingLine](t, append([]string{"run", "--int8", "--model", stTiny, "--texts", texts, "--prompt-name", "query"}, flags...)...)
	url := engineServer(t, stTiny, texts, serve.Embedder)
	inputs, _ := json.Marshal(headTexts)
	for _, c := range []struct {
		name, body string
		want       []embeddingLine
	}{
		{"/embed", `{"inputs":` + string(inputs) + `,"truncate":true}`, plain},
		{"/embed query", `{"inputs":` + string(inputs) + `,"truncate":true,"prompt_name":"query"}`, query},
	} {
		code, body := postJSON(t, url+"/embed", c.body)
		var got [][]float32
		if err := json.Unmarshal(body, &got); code != 200 || err != nil || len(got) != len(c.want) {
			t.Fatalf("%s: %d %s (%v)", c.name, code, body, err)
		}
		for i := range got {
			if !slicesEqual(got[i], c.want[i].Embedding) {
				t.Errorf("%s text %d: served %v\nsqc run %v", c.name, i, got[i], c.want[i].Embedding)
			}
		}
	}
	// OpenAI's route: the same unit vectors (the head normalises; the
	// server does not normalise again).
	code, body := postJSON(t, url+"/v1/embeddings", fmt.Sprintf(`{"input":%q}`, headTexts[0]))
	var oai struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &oai); code != 200 || err != nil || len(oai.Data) != 1 || !slicesEqual(oai.Data[0].Embedding, plain[0].Embedding) {
		t.Errorf("/v1/embeddings: %d %s (%v); sqc run %v", code, body, err, plain[0].Embedding)
	}
	// An input past max_seq_length (24) without truncation, and a prompt
	// the folder lacks, are 422s.
	if code, body := postJSON(t, url+"/embed", fmt.Sprintf(`{"inputs":%q}`, headTexts[2])); code != 422 {
		t.Errorf("too long: %d %s", code, body)
	}
	if code, body := postJSON(t, url+"/embed", `{"inputs":"a","prompt_name":"doc"}`); code != 422 || !strings.Contains(string(body), "passage, query") {
		t.Errorf("unknown prompt: %d %s", code, body)
	}
	resp, err := http.Get(url + "/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if info, _ := io.ReadAll(resp.Body); !strings.Contains(string(info), `"pooling":"mean"`) {
		t.Errorf("/info: %d %s", resp.StatusCode, info)
	}
}

// TestServeCrossEncoderMatchesRun: /rerank scores a single-logit
// classifier's pairs with the scores `sqc run --int8` prints for them.
func TestServeCrossEncoderMatchesRun(t *testing.T) {
	model := writeClassifier(t, []string{"LABEL_0"}, nil)
	query := "a quiet triumph of a film"
	lines := []string{"query\tdocument"}
	for _, d := range headTexts {
		lines = append(lines, query+"\t"+d)
	}
	pairs := writeLines(t, "pairs.tsv", lines)
	q := runLines[scoreLine](t, "run", "--int8", "--model", model, "--texts", pairs, "--act", "static", "--alpha", "0.5", "--calib", pairs)
	url := engineServer(t, model, pairs, serve.CrossEncoder)
	texts, _ := json.Marshal(headTexts)
	code, body := postJSON(t, url+"/rerank", fmt.Sprintf(`{"query":%q,"texts":%s}`, query, texts))
	var ranks []struct {
		Index int     `json:"index"`
		Score float32 `json:"score"`
	}
	if err := json.Unmarshal(body, &ranks); code != 200 || err != nil || len(ranks) != len(q) {
		t.Fatalf("/rerank: %d %s (%v)", code, body, err)
	}
	for _, r := range ranks {
		if want := *q[r.Index].Score; math.Float32bits(r.Score) != math.Float32bits(want) {
			t.Errorf("text %d: served %g, sqc run %g", r.Index, r.Score, want)
		}
	}
}

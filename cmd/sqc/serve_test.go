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
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/internal/demomodel"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/serve"
)

// demoDir extracts the embedded demo model and its calibration texts.
func demoDir(t *testing.T) (model, calib string) {
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
	g, err := frontend.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := loadTokenizer(model, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := buildInt8(g, tok, &int8Config{calibPath: calib, calibSamples: defaultCalibSamples, quant: passes.QuantOptions{Alpha: 0.5, Act: compiler.QLinearStatic}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newEngineModel(g, b.int8, tok, 2, 4)
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

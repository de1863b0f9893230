package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/serve"
)

// TestServeEngineSparse runs the engine's sparse encoder path end to end
// on texts of the demo's vocabulary (the tiny masked LMs have none of
// their own; run_sparse_test.go serves one): the model is the demo read
// as a token classifier, whose logits are
// [batch, seq, 2], with its graphs then relabelled a
// DistilBertForMaskedLM of a 2-entry vocabulary: not a real masked LM,
// but the same kind of output. newEngineModel serves it as a sparse
// embedder of pooling "splade"; its vectors are the token classifier's
// rows of the same INT8 graph pooled as SPLADE pools (log1p of the relu
// of each column's maximum, worked out here, not by SparseHead); and
// /embed_sparse answers them sparsified, the same bytes alone as among
// concurrent requests.
func TestServeEngineSparse(t *testing.T) {
	model, calib := demoTokenClassifier(t)
	g, err := frontend.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	head, err := loadModelHead(model, "", g)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := loadTokenizer(model, "")
	if err != nil {
		t.Fatal(err)
	}
	if tok, err = head.tokenizer(tok); err != nil {
		t.Fatal(err)
	}
	b, err := buildInt8(g, tok, &int8Config{calibPath: calib, calibSamples: defaultCalibSamples, quant: passes.QuantOptions{Alpha: 0.5, Act: compiler.QLinearStatic}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	tagger, err := newEngineModel(g, b.int8, tok, head, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tagger.Close)
	if k := tagger.Info().Kind; k != serve.TokenClassifier {
		t.Fatalf("the demo read as a token classifier is served as %s", k)
	}
	for _, gr := range []*compiler.Graph{g, b.int8} {
		gr.Meta["architecture"], gr.Meta["vocab_size"] = "DistilBertForMaskedLM", "2"
	}
	if !compiler.IsMaskedLM(b.int8) {
		t.Fatalf("the relabelled INT8 graph is not a masked LM: Meta %v, outputs %v", b.int8.Meta, b.int8.Outputs)
	}
	m, err := newEngineModel(g, b.int8, tok, head, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if info := m.Info(); info.Kind != serve.SparseEmbedder || info.Pooling != "splade" || info.Labels != nil {
		t.Fatalf("the relabelled model is served as %s, pooling %q, labels %v: want %s, splade, none", info.Kind, info.Pooling, info.Labels, serve.SparseEmbedder)
	}

	// One batch of texts of several lengths: Run chunks and pads it.
	texts := []string{"a gorgeous, witty, seductive movie", "dull", "the plot is a mess but the cast is lovely", "it is"}
	var batch modelrt.Batch
	for _, text := range texts {
		e := tok.Encode(text)
		batch.InputIDs = append(batch.InputIDs, e.InputIDs)
		batch.AttentionMask = append(batch.AttentionMask, e.AttentionMask)
	}
	rows, err := tagger.Run(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := m.Run(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	nonZero := 0
	for i, row := range rows {
		want := []float32{0, 0}
		for j := range want {
			top := float32(math.Inf(-1))
			for r := range len(row) / 2 {
				top = max(top, row[2*r+j])
			}
			want[j] = float32(math.Log1p(float64(max(top, 0))))
		}
		if !slices.Equal(vecs[i], want) {
			t.Errorf("%q: vector %v, want %v (of the logits %v)", texts[i], vecs[i], want, row)
		}
		nonZero += len(modelrt.Sparsify(want))
	}
	if nonZero == 0 {
		t.Error("every vector is zero: the test shows nothing of the pooling")
	}

	s, err := serve.New(m, serve.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	code, body := post(t, srv.URL+"/embed_sparse", texts[0])
	want, err := json.Marshal([][]modelrt.SparseValue{modelrt.Sparsify(vecs[0])})
	if err != nil {
		t.Fatal(err)
	}
	if code != 200 || strings.TrimSpace(body) != string(want) {
		t.Errorf("/embed_sparse %q: %d %s, want %s", texts[0], code, body, want)
	}
	if code, body := post(t, srv.URL+"/embed", texts[0]); code != 424 || !strings.Contains(body, "`normalize` is not available for SPLADE models") {
		t.Errorf("/embed with TEI's default normalize: %d %s, want 424", code, body)
	}
	batchedMatchesAlone(t, srv.URL+"/embed_sparse")
	t.Logf("%q: %s", texts[0], body)
}

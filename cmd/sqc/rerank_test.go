package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/internal/tinymodel"
)

// positivityScorer writes, in a temporary folder, a single-logit
// cross-encoder made from a two-label SST-2 classifier folder src (the
// shared sst2-bert-mini, or a trained RoBERTa-family one): its last
// layer's rows replaced by their difference (logit = positive -
// negative), so the score of a pair is how positive the model finds it.
// Trained weights give scores spread out as a real reranker's are, which
// random weights do not.
func positivityScorer(t *testing.T, src string) string {
	t.Helper()
	st, err := hf.OpenSafetensors(filepath.Join(src, hf.SafetensorsFile))
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]*compiler.Tensor{}
	for _, name := range st.Names() {
		if params[name], err = st.Weight(name, nil); err != nil {
			t.Fatal(err)
		}
	}
	last := "classifier" // BERT; RoBERTa's head ends in classifier.out_proj
	if params[last+".weight"] == nil {
		last = "classifier.out_proj"
	}
	w, b := params[last+".weight"], params[last+".bias"]
	if w == nil || b == nil || len(w.Shape) != 2 || w.Shape[0] != 2 {
		t.Fatalf("%s: no 2-row classifier", src)
	}
	h := w.Shape[1]
	diff := compiler.NewTensor(compiler.Float32, 1, h)
	for j := range diff.F32 {
		diff.F32[j] = w.F32[int(h)+j] - w.F32[j]
	}
	params[last+".weight"] = diff
	params[last+".bias"] = &compiler.Tensor{DType: compiler.Float32, Shape: []int64{1}, F32: []float32{b.F32[1] - b.F32[0]}}
	data, err := tinymodel.Safetensors(params)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	raw, err := os.ReadFile(filepath.Join(src, hf.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["id2label"], cfg["label2id"] = map[string]string{"0": "positivity"}, map[string]int{"positivity": 0}
	delete(cfg, "problem_type")
	js, err := tinymodel.JSON(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, d := range map[string][]byte{hf.SafetensorsFile: data, hf.ConfigFile: js} {
		if err := os.WriteFile(filepath.Join(dir, name), d, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json"} {
		if _, err := os.Stat(filepath.Join(src, name)); err == nil {
			if err := os.Symlink(filepath.Join(src, name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestRerankOnSST2 reranks SST-2 dev sentences against dev-sentence
// queries with the positivity scorer of sst2-bert-mini, INT8 (static,
// calibrated on train pairs) against FP32: how often each query's
// documents come out in the same order and with the same top document.
func TestRerankOnSST2(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the FP32 interpreter on SST-2 sentence pairs")
	}
	checkRerankOnSST2(t, testmodels.ModelDir(t, testmodels.BertMini))
}

// TestRerankOnSST2RoBERTaFamilies is TestRerankOnSST2 with the RoBERTa
// and XLM-R classifiers trained on SST-2 ($SQC_TRAINED_MODELS; skipped
// where unset).
func TestRerankOnSST2RoBERTaFamilies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the FP32 interpreter on SST-2 sentence pairs")
	}
	for _, name := range testmodels.TrainedModels {
		t.Run(name, func(t *testing.T) { checkRerankOnSST2(t, testmodels.TrainedDir(t, name)) })
	}
}

func checkRerankOnSST2(t *testing.T, classifier string) {
	t.Helper()
	model := positivityScorer(t, classifier)
	shared, _ := testmodels.SharedDir()
	data := filepath.Join(shared, "data", "glue-sst2")
	dev, err := dataio.ReadTexts(filepath.Join(data, "dev.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	train, err := dataio.ReadTexts(filepath.Join(data, "train.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	const queries, docs = 8, 16
	pairs := []string{"query\tdocument"}
	for q := range queries {
		for d := range docs {
			pairs = append(pairs, dev[q].Text+"\t"+dev[queries+q*docs+d].Text)
		}
	}
	calib := []string{"sentence1\tsentence2"}
	for i := range 64 {
		calib = append(calib, train[2*i].Text+"\t"+train[2*i+1].Text)
	}
	res := evalJSON(t, "--model", model, "--data", writeLines(t, "rerank.tsv", pairs), "--calib", writeLines(t, "calib.tsv", calib))
	if res.Kind != "cross-encoder" || res.RerankQueries != queries || res.SpearmanFP32INT8 == nil || res.RerankSpearmanMin == nil {
		t.Fatalf("%+v", res)
	}
	t.Logf("%s: %d queries x %d documents: same order %.0f%%, same top document %.0f%%, Spearman FP32 vs INT8 %.5f (worst query %.4f), max score difference %.3g",
		filepath.Base(classifier), queries, docs, 100*res.RerankSameOrder, 100*res.RerankSameTop1, *res.SpearmanFP32INT8, *res.RerankSpearmanMin, res.ScoreMaxAbsDiff)
	if res.RerankSameTop1 < 0.75 || *res.SpearmanFP32INT8 < 0.99 || *res.RerankSpearmanMin < 0.95 {
		t.Error("INT8 reranks unlike FP32")
	}
}

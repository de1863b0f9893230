package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// syntheticSTS writes an STS-style file from the first n+1 sentences of
// SST-2 dev: sentence i paired with sentence i+1, gold score 1 when their
// sentiment labels agree, else 0. It is a synthetic check (no STS set is
// available here), not an STS benchmark: a sentiment model's embeddings
// should be closer for sentences of the same sentiment.
func syntheticSTS(t *testing.T, dev string, n int) string {
	t.Helper()
	exs, err := dataio.ReadTexts(dev)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{"sentence1\tsentence2\tscore"}
	for i := 0; i+1 < len(exs) && i < n; i++ {
		score := 0
		if exs[i].Label == exs[i+1].Label {
			score = 1
		}
		lines = append(lines, fmt.Sprintf("%s\t%s\t%d", exs[i].Text, exs[i+1].Text, score))
	}
	return writeLines(t, "sts.tsv", lines)
}

// sentenceFolder makes a sentence-transformers folder in a temporary
// directory around a HuggingFace model folder (symlinks to its files):
// mean pooling, then Normalize.
func sentenceFolder(t *testing.T, model string, hidden int) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(model)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			if err := os.Symlink(filepath.Join(model, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	files := map[string]string{
		"modules.json": `[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
{"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]`,
		"1_Pooling/config.json":     fmt.Sprintf(`{"word_embedding_dimension":%d,"pooling_mode_mean_tokens":true}`, hidden),
		"sentence_bert_config.json": `{"max_seq_length":128,"do_lower_case":false}`,
	}
	for name, s := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func evalJSON(t *testing.T, args ...string) headEvalResult {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"eval", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("sqc eval: exit %d: %s", code, errs)
	}
	var res headEvalResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return res
}

// TestEvalSTSTiny: the STS report of the tiny folder (random weights, so
// only the FP32-vs-INT8 agreement is meaningful), and its errors.
func TestEvalSTSTiny(t *testing.T) {
	lines := []string{"sentence1\tsentence2\tscore"}
	for i, a := range headTexts {
		lines = append(lines, fmt.Sprintf("%s\t%s\t%d", a, headTexts[(i+1)%len(headTexts)], i%3))
	}
	sts := writeLines(t, "sts.tsv", lines)
	calib := writeLines(t, "calib.txt", headTexts)
	res := evalJSON(t, "--model", stTiny, "--data", sts, "--calib", calib)
	if res.Kind != "sts" || res.Inputs != len(headTexts) || res.SpearmanFP32 == nil || res.SpearmanINT8 == nil || res.SpearmanFP32INT8 == nil {
		t.Fatalf("%+v", res)
	}
	if *res.SpearmanFP32INT8 < 0.9 || res.EmbeddingCosineMin < 0.99 {
		t.Errorf("FP32 vs INT8: Spearman %.4f, embedding cosine min %.5f", *res.SpearmanFP32INT8, res.EmbeddingCosineMin)
	}
	res = evalJSON(t, "--model", stTiny, "--data", calib, "--calib", calib)
	if res.Kind != "embedding" || res.Inputs != len(headTexts) || res.EmbeddingCosineMean < 0.99 || res.SpearmanFP32 != nil {
		t.Errorf("embedding eval: %+v", res)
	}
	ids := writeLines(t, "ids.jsonl", []string{`{"input_ids":[101,1996,2143,102]}`, `{"input_ids":[101,2053,102]}`})
	res = evalJSON(t, "--model", stTiny, "--data", ids, "--act", "dynamic", "--alpha", "0")
	if res.Kind != "embedding" || res.Inputs != 2 || res.EmbeddingCosineMin < 0.99 {
		t.Errorf("embedding eval of token ids: %+v", res)
	}
	if code, _, errs := runCLI(t, "eval", "--model", stTiny, "--data", calib, "--calib", calib, "--layers"); code != 2 || !strings.Contains(errs, "--layers") {
		t.Errorf("--layers: exit %d: %s", code, errs)
	}
	noScore := writeLines(t, "noscore.tsv", []string{"sentence1\tsentence2", "a\tb"})
	if code, _, errs := runCLI(t, "eval", "--model", stTiny, "--data", noScore, "--calib", calib); code != 2 || !strings.Contains(errs, "no gold score") {
		t.Errorf("pairs without scores: exit %d: %s", code, errs)
	}
	twoLabels := writeClassifier(t, []string{"neg", "pos"}, nil)
	if code, _, errs := runCLI(t, "eval", "--model", twoLabels, "--data", sts, "--act", "dynamic", "--alpha", "0"); code != 2 || !strings.Contains(errs, "single-logit") {
		t.Errorf("pairs on a two-label classifier: exit %d: %s", code, errs)
	}
}

// TestSTSOnSST2 makes a sentence-transformers folder around the shared
// sst2-bert-mini (mean pooling, Normalize) and evaluates it on synthetic
// STS pairs of SST-2 dev sentences: INT8 embeddings must keep cosine >=
// 0.999 with FP32 on average, and rank the pairs as FP32 does.
func TestSTSOnSST2(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the FP32 interpreter on SST-2 dev sentences")
	}
	checkSTSOnSST2(t, testmodels.ModelDir(t, testmodels.BertMini), "static")
}

// TestSTSOnSST2RoBERTaFamilies is TestSTSOnSST2 on the RoBERTa and XLM-R
// classifiers trained on SST-2 ($SQC_TRAINED_MODELS, made by
// internal/testmodels/gen/train_sst2.py; skipped where unset), with static
// and dynamic activation quantisation.
func TestSTSOnSST2RoBERTaFamilies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the FP32 interpreter on SST-2 dev sentences")
	}
	for _, name := range testmodels.TrainedModels {
		for _, act := range []string{"static", "dynamic"} {
			t.Run(name+"/"+act, func(t *testing.T) { checkSTSOnSST2(t, testmodels.TrainedDir(t, name), act) })
		}
	}
}

// checkSTSOnSST2 evaluates a mean-pooling, normalising embedder around the
// 256-wide model on 120 STS pairs of SST-2 dev sentences, calibrated on
// 128 train sentences.
func checkSTSOnSST2(t *testing.T, model, act string) {
	t.Helper()
	shared, ok := testmodels.SharedDir()
	if !ok {
		t.Skip("skipping: no ../shared (GLUE SST-2)")
	}
	data := filepath.Join(shared, "data", "glue-sst2")
	st := sentenceFolder(t, model, 256)
	sts := syntheticSTS(t, filepath.Join(data, "dev.tsv"), 120)
	res := evalJSON(t, "--model", st, "--data", sts, "--calib", filepath.Join(data, "train.tsv"), "--calib-samples", "128", "--act", act)
	if res.SpearmanFP32 == nil || res.SpearmanINT8 == nil || res.SpearmanFP32INT8 == nil {
		t.Fatalf("%+v", res)
	}
	t.Logf("%s, %s: %d pairs: Spearman vs gold FP32 %.4f, INT8 %.4f; FP32 vs INT8 %.5f; embedding cosine mean %.6f, min %.6f",
		filepath.Base(model), act, res.Inputs, *res.SpearmanFP32, *res.SpearmanINT8, *res.SpearmanFP32INT8, res.EmbeddingCosineMean, res.EmbeddingCosineMin)
	if res.EmbeddingCosineMean < 0.999 || res.EmbeddingCosineMin < 0.99 {
		t.Errorf("INT8 vs FP32 embedding cosine mean %.6f, min %.6f", res.EmbeddingCosineMean, res.EmbeddingCosineMin)
	}
	if *res.SpearmanFP32INT8 < 0.99 {
		t.Errorf("INT8 ranks the pairs differently: Spearman %.5f with FP32", *res.SpearmanFP32INT8)
	}
	// The sentiment model's embeddings know sentiment: pairs of equal
	// labels score higher.
	if *res.SpearmanFP32 < 0.2 {
		t.Errorf("Spearman of FP32 cosines with the synthetic gold %.4f", *res.SpearmanFP32)
	}
}

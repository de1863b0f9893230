package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestINT8OnTrainedRoBERTaFamilies is TestINT8AccuracyOnSST2's bar on the
// RoBERTa and XLM-R classifiers trained on SST-2 ($SQC_TRAINED_MODELS,
// made by internal/testmodels/gen/train_sst2.py; skipped where unset),
// through `sqc eval` on the whole dev set with their own tokenizers: INT8
// accuracy within 0.3 points of FP32 (static) or 0.2 (dynamic), mean
// logits cosine >= 0.999.
func TestINT8OnTrainedRoBERTaFamilies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the FP32 interpreter on SST-2 dev")
	}
	for _, name := range testmodels.TrainedModels {
		for _, c := range []struct {
			act   string
			bound float64
		}{{"static", 0.3}, {"dynamic", 0.2}} {
			t.Run(name+"/"+c.act, func(t *testing.T) {
				dir := testmodels.TrainedDir(t, name)
				shared, ok := testmodels.SharedDir()
				if !ok {
					t.Skip("skipping: no ../shared (GLUE SST-2)")
				}
				data := filepath.Join(shared, "data", "glue-sst2")
				code, out, errs := runCLI(t, "eval", "--json", "--model", dir, "--data", filepath.Join(data, "dev.tsv"),
					"--calib", filepath.Join(data, "train.tsv"), "--act", c.act)
				if code != 0 {
					t.Fatalf("sqc eval: exit %d: %s", code, errs)
				}
				var r evalResult
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatal(err)
				}
				t.Logf("| %s | %s | %d sentences | FP32 %.2f%% | INT8 %.2f%% (%+.2f) | agreement %.2f%% | cosine mean %.6f min %.4f |",
					name, c.act, r.Sentences, 100*r.FP32Accuracy, 100*r.INT8Accuracy, r.Difference, 100*r.Agreement, r.MeanCosine, r.MinCosine)
				if r.Sentences != 872 {
					t.Errorf("%d dev sentences, want 872", r.Sentences)
				}
				if r.FP32Accuracy < 0.7 {
					t.Errorf("FP32 accuracy %.2f%%: the model did not train", 100*r.FP32Accuracy)
				}
				if math.Abs(r.Difference) > c.bound {
					t.Errorf("INT8 accuracy is %+.2f points from FP32, want within %.1f", r.Difference, c.bound)
				}
				if r.MeanCosine < 0.999 {
					t.Errorf("mean logits cosine %.6f < 0.999", r.MeanCosine)
				}
			})
		}
	}
}

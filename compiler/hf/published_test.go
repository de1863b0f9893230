package hf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestPublishedShapesMatchTorch is TestTinyFamiliesMatchTorch on
// random-weight models of the published roberta-base and xlm-roberta-base
// shapes (12 x 768, 514 positions, 50265 / 250002 tokens), which are too
// large to commit: make them with
//
//	/usr/bin/python3 internal/testmodels/gen/make_models.py --published --out DIR
//
// and run with SQC_PUBLISHED_MODELS=DIR; the test skips otherwise. The
// ONNX export is checked too where the folder has one (--no-onnx skips
// it).
func TestPublishedShapesMatchTorch(t *testing.T) {
	for _, name := range testmodels.PublishedModels {
		t.Run(name, func(t *testing.T) { matchesTorch(t, testmodels.PublishedDir(t, name)) })
	}
}

// TestTrainedModelsMatchTorch is the same check on the RoBERTa and XLM-R
// classifiers trained on SST-2 (internal/testmodels/gen/train_sst2.py,
// $SQC_TRAINED_MODELS; skipped where unset): trained weights, a padded
// batch of dev sentences.
func TestTrainedModelsMatchTorch(t *testing.T) {
	for _, name := range testmodels.TrainedModels {
		t.Run(name, func(t *testing.T) { matchesTorch(t, testmodels.TrainedDir(t, name)) })
	}
}

// matchesTorch checks the folder's safetensors (and its ONNX export, where
// it has one) against its reference.json.
func matchesTorch(t *testing.T, dir string) {
	t.Helper()
	ref, err := testmodels.LoadModelReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstReference(t, "safetensors", g, ref)
	path := filepath.Join(dir, "model.onnx")
	if _, err := os.Stat(path); err != nil {
		t.Logf("no %s: ONNX export not checked", path)
		return
	}
	og, err := onnx.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sameInterface(t, g, og)
	checkAgainstReference(t, "onnx", og, ref)
}

package testmodels

import "testing"

// TrainedModelsEnv names the directory holding the RoBERTa-family models
// trained on SST-2 from scratch by `gen/train_sst2.py --out DIR` (about
// 16 MB each, too large to commit; .ci/run trains them once and keeps
// them in a cache).
const TrainedModelsEnv = "SQC_TRAINED_MODELS"

// TrainedModels are the models train_sst2.py trains: a
// RobertaForSequenceClassification with a byte-level BPE tokenizer and an
// XLMRobertaForSequenceClassification with a Unigram one, both 4 x 256
// like ../shared/models/sst2-bert-mini.
var TrainedModels = []string{"sst2-roberta-mini", "sst2-xlmr-mini"}

// TrainedDir returns the folder of a trained model, skipping the test
// with a message when $SQC_TRAINED_MODELS is unset or lacks it.
func TrainedDir(t testing.TB, name string) string {
	t.Helper()
	return dirUnder(t, TrainedModelsEnv, name, "train the models with internal/testmodels/gen/train_sst2.py --out DIR")
}

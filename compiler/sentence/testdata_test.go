package sentence

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/internal/tinymodel"
)

var update = flag.Bool("update", false, "rewrite testdata/st-bert-tiny")

// tinyDir is the checked-in sentence-transformers folder: a random-weight
// 2-layer BERT (hidden 32) over the first 5000 tokens of bert-base-uncased's
// vocabulary, mean pooling, a Dense 32 -> 16 with tanh, Normalize listed in
// modules.json without a folder, max_seq_length 24, two prompts.
const tinyDir = "testdata/st-bert-tiny"

// tinyVocabTokens is how many vocabulary lines the tiny model keeps.
const tinyVocabTokens = 5000

// tinyFiles makes the files of tinyDir, deterministically.
func tinyFiles(t *testing.T) map[string][]byte {
	t.Helper()
	vocab, err := os.ReadFile("../../internal/demomodel/sst2-distilbert-tiny/vocab.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(vocab), "\n")[:tinyVocabTokens]
	cfg := hf.Config{
		ModelType: hf.ModelBERT, Architecture: hf.ArchBertModel, VocabSize: tinyVocabTokens, HiddenSize: 32, NumLayers: 2,
		NumHeads: 2, IntermediateSize: 64, MaxPositions: 64, TypeVocabSize: 2, HiddenAct: hf.ActGELU, LayerNormEps: 1e-12,
	}
	params, err := tinymodel.Parameters(cfg, 11)
	if err != nil {
		t.Fatal(err)
	}
	// Random weights of std 0.02 make every token's hidden state nearly
	// the same; larger word embeddings keep sentences apart.
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range params["embeddings.word_embeddings.weight"].F32 {
		params["embeddings.word_embeddings.weight"].F32[i] = float32(rng.NormFloat64())
	}
	dense := map[string]*compiler.Tensor{"linear.weight": compiler.NewTensor(compiler.Float32, 16, 32), "linear.bias": compiler.NewTensor(compiler.Float32, 16)}
	for _, name := range []string{"linear.weight", "linear.bias"} { // fixed order: one random stream
		w := dense[name]
		for i := range w.F32 {
			w.F32[i] = float32(0.2 * rng.NormFloat64())
		}
	}
	config := tinymodel.Config(cfg, nil)
	modules := []map[string]any{
		{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
		{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
		{"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
		{"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"},
	}
	pooling := map[string]any{
		"word_embedding_dimension": 32, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true,
		"pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false,
		"pooling_mode_weightedmean_tokens": false, "pooling_mode_lasttoken": false, "include_prompt": true,
	}
	denseCfg := map[string]any{"in_features": 32, "out_features": 16, "bias": true, "activation_function": "torch.nn.modules.activation.Tanh"}
	st := map[string]any{
		"__version__":         map[string]string{"sentence_transformers": "3.0.1"},
		"prompts":             map[string]string{"query": "query: ", "passage": "passage: "},
		"default_prompt_name": nil, "similarity_fn_name": "cosine",
	}
	return map[string][]byte{
		"config.json":                   jsonBytes(t, config),
		"model.safetensors":             safetensorsBytes(t, params),
		"vocab.txt":                     []byte(strings.Join(lines, "")),
		"tokenizer_config.json":         jsonBytes(t, map[string]any{"do_lower_case": true, "model_max_length": 512}),
		ModulesFile:                     jsonBytes(t, modules),
		BertConfigFile:                  jsonBytes(t, map[string]any{"max_seq_length": 24, "do_lower_case": false}),
		STConfigFile:                    jsonBytes(t, st),
		"1_Pooling/config.json":         jsonBytes(t, pooling),
		"2_Dense/config.json":           jsonBytes(t, denseCfg),
		"2_Dense/" + hf.SafetensorsFile: safetensorsBytes(t, dense),
	}
}

func jsonBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := tinymodel.JSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func safetensorsBytes(t *testing.T, tensors map[string]*compiler.Tensor) []byte {
	t.Helper()
	b, err := tinymodel.Safetensors(tensors)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTinyFolderUpToDate regenerates tinyDir and fails on any difference
// (go test ./compiler/sentence -run TinyFolder -update rewrites it).
func TestTinyFolderUpToDate(t *testing.T) {
	files := tinyFiles(t)
	total := 0
	for name, want := range files {
		total += len(want)
		path := filepath.Join(tinyDir, filepath.FromSlash(name))
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the generator makes (run with -update)", path)
		}
	}
	if total > 5<<20 {
		t.Errorf("testdata is %d bytes, over 5 MB", total)
	}
}

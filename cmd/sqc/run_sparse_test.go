package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/serve"
)

// TestRunSparseEncoder: `sqc run` on a masked language model prints each
// input's sparse embedding (SPLADE's max pooling of log1p(relu(logits))
// over its tokens), the same as that pooling of PyTorch's logits to
// float32 rounding; the same checkpoint in a SparseEncoder folder whose
// SpladePooling sums prints the summed pooling. Entries PyTorch's logits
// put within tol of zero may be present in one and absent in the other.
func TestRunSparseEncoder(t *testing.T) {
	src := testmodels.TinyDir(t, testmodels.TinyBertMLM)
	ref, err := testmodels.LoadModelReference(src)
	if err != nil {
		t.Fatal(err)
	}
	ids := referenceIDs(t, ref)
	in := ref.Inputs
	rows, seq := int(in["input_ids"].Shape[0]), int(in["input_ids"].Shape[1])
	folder := spladeFolder(t, modelrt.SparseSum)
	logits := ref.Outputs["logits"]
	vocab := int(logits.Shape[2])
	const tol = 1e-4
	for _, c := range []struct {
		model string
		head  modelrt.SparseHead
	}{
		{src, modelrt.SparseHead{}},
		{filepath.Join(src, "model.onnx"), modelrt.SparseHead{}},
		{folder, modelrt.SparseHead{Pooling: modelrt.SparseSum}},
	} {
		code, out, errs := runCLI(t, "run", "--fp32", "--model", c.model, "--ids", ids)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.model, code, errs)
		}
		got := strings.Split(strings.TrimSpace(out), "\n")
		if len(got) != rows {
			t.Fatalf("%s: %d lines, want %d:\n%s", c.model, len(got), rows, out)
		}
		for r, line := range got {
			var obj struct {
				Sparse []modelrt.SparseValue `json:"sparse_embedding"`
			}
			if err := json.Unmarshal([]byte(line), &obj); err != nil || obj.Sparse == nil {
				t.Fatalf("%s: line %d: %v: %s", c.model, r+1, err, line)
			}
			want := c.head.Pool(logits.F32[r*seq*vocab:(r+1)*seq*vocab], vocab, in["attention_mask"].I64[r*seq:(r+1)*seq])
			dense := make([]float32, vocab)
			last := -1
			for _, v := range obj.Sparse {
				if v.Index <= last || v.Index >= vocab || !(v.Value > 0) {
					t.Fatalf("%s: line %d: entry %+v after index %d: want ascending indexes below %d and positive values", c.model, r+1, v, last, vocab)
				}
				dense[v.Index], last = v.Value, v.Index
			}
			nonzero := 0
			for j := range dense {
				if math.Abs(float64(dense[j]-want[j])) > tol*math.Max(1, float64(want[j])) {
					t.Errorf("%s: line %d: entry %d is %g, PyTorch's pooled %g", c.model, r+1, j, dense[j], want[j])
				}
				if want[j] > tol {
					nonzero++
				}
			}
			if nonzero == 0 || nonzero == vocab {
				t.Errorf("%s: line %d: %d of %d entries non-zero: want a sparse vector", c.model, r+1, nonzero, vocab)
			}
		}
	}
}

// spladeFolder lays out a SparseEncoder folder (MLMTransformer,
// SpladePooling of strategy pooling) around the tiny BERT masked language
// model, with a vocab.txt of its 120 ids ([PAD] 0, [CLS] 2, [SEP] 3 as
// its reference batch has them; the others w4 ... w119).
func spladeFolder(t *testing.T, pooling string) string {
	t.Helper()
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]"}
	for i := len(vocab); i < 120; i++ {
		vocab = append(vocab, fmt.Sprintf("w%d", i))
	}
	return testmodels.SparseEncoderFolder(t, testmodels.TinyBertMLM, map[string]string{
		"1_SpladePooling/config.json": `{"pooling_strategy": "` + pooling + `", "activation_function": "relu"}`,
		"vocab.txt":                   strings.Join(vocab, "\n") + "\n",
	})
}

// TestServeSparseEncoderFolder: `sqc serve` of a SparseEncoder folder
// serves a sparse embedder pooling as its SpladePooling says (sum here,
// not SPLADE's default max).
func TestServeSparseEncoderFolder(t *testing.T) {
	folder := spladeFolder(t, modelrt.SparseSum)
	calib := filepath.Join(t.TempDir(), "calib.txt")
	if err := os.WriteFile(calib, []byte("w5 w6 w7\nw8 w9\nw10 w11 w12 w13\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &int8Config{calibPath: calib, calibSamples: defaultCalibSamples, quant: passes.QuantOptions{Alpha: 0.5, Act: compiler.QLinearStatic}}
	m, err := loadEngineModel(folder, "", cfg, 1, 4, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if info := m.Info(); info.Kind != serve.SparseEmbedder || m.sparse == nil || *m.sparse != (modelrt.SparseHead{Pooling: modelrt.SparseSum, Activation: modelrt.SparseReLU}) {
		t.Errorf("served as %s with head %+v, want %s with the folder's sum pooling", info.Kind, m.sparse, serve.SparseEmbedder)
	}

	// Engine calls capped by their logits' bytes give every text the bits
	// of one call of them all.
	var b modelrt.Batch
	for _, text := range []string{"w5 w6 w7 w8 w9 w10", "w11", "w12 w13 w14", "w15 w16 w17 w18 w19 w20 w21 w22 w23", "w24 w25"} {
		e := m.Tokenizer().Encode(text)
		b.InputIDs, b.AttentionMask, b.TokenTypeIDs = append(b.InputIDs, e.InputIDs), append(b.AttentionMask, e.AttentionMask), append(b.TokenTypeIDs, e.TokenTypeIDs)
	}
	whole, err := m.Run(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	m.order = modelrt.ChunkOrder(m.order, &b, m.info.MaxBatch)
	if end := m.chunkEnd(&b, 0); end != m.info.MaxBatch {
		t.Errorf("the first engine call ends at %d under the default cap, want MaxBatch %d", end, m.info.MaxBatch)
	}
	// The shortest texts have 3, 4 and 5 tokens, padded to 5 in a call.
	for tokens, want := range map[int]int{15: 3, 14: 2, 8: 2, 7: 1} {
		m.sparseChunkBytes = tokens * 120 * 4 // of the 120 logits
		if end := m.chunkEnd(&b, 0); end != want {
			t.Errorf("the first engine call of texts of %d, %d, %d tokens ends at %d under a cap of %d tokens, want %d",
				len(b.InputIDs[m.order[0]]), len(b.InputIDs[m.order[1]]), len(b.InputIDs[m.order[2]]), end, tokens, want)
		}
	}
	m.sparseChunkBytes = 1 // one text a call
	alone, err := m.Run(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range whole {
		if !slices.Equal(whole[i], alone[i]) {
			t.Errorf("text %d: pooled differently in calls of one text", i)
		}
	}
}

// TestCompileSparseEncoderFolder: `sqc compile` of a SparseEncoder folder
// generates a package whose EmbedSparse pools as the folder's
// SpladePooling says (sum), at runtime version 6.
func TestCompileSparseEncoderFolder(t *testing.T) {
	out := t.TempDir()
	if code, _, errs := runCLI(t, "compile", "--model", spladeFolder(t, modelrt.SparseSum), "--out", out, "--package", "m", "--max-seq", "32", "--act", "dynamic", "--alpha", "0"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	model, err := os.ReadFile(filepath.Join(out, "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"func (m *Model) EmbedSparse(", `Pooling:    "sum"`, "modelrt.SupportVersion6"} {
		if !strings.Contains(string(model), want) {
			t.Errorf("model.go lacks %q", want)
		}
	}
}

// referenceIDs writes a tiny model reference's input batch as an --ids
// file, one JSON object per row.
func referenceIDs(t *testing.T, ref *testmodels.ModelReference) string {
	t.Helper()
	ids := filepath.Join(t.TempDir(), "ids.jsonl")
	var lines []string
	in := ref.Inputs
	rows, seq := int(in["input_ids"].Shape[0]), int(in["input_ids"].Shape[1])
	for r := range rows {
		line, err := json.Marshal(map[string][]int64{
			"input_ids":      in["input_ids"].I64[r*seq : (r+1)*seq],
			"attention_mask": in["attention_mask"].I64[r*seq : (r+1)*seq],
			"token_type_ids": in["token_type_ids"].I64[r*seq : (r+1)*seq],
		})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(line))
	}
	if err := os.WriteFile(ids, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestEvalSparseEncoder: `sqc eval` of a masked language model on inputs
// without labels compares its INT8 and FP32 sparse embeddings (cosine),
// as it does a sentence-transformers model's embeddings.
func TestEvalSparseEncoder(t *testing.T) {
	src := testmodels.TinyDir(t, testmodels.TinyBertMLM)
	ref, err := testmodels.LoadModelReference(src)
	if err != nil {
		t.Fatal(err)
	}
	ids := referenceIDs(t, ref)
	code, out, errs := runCLI(t, "eval", "--model", src, "--data", ids, "--calib", ids, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Kind    string  `json:"kind"`
		Inputs  int     `json:"inputs"`
		CosMean float64 `json:"embedding_cosine_mean"`
		CosMin  float64 `json:"embedding_cosine_min"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Kind != "embedding" || res.Inputs != int(ref.Inputs["input_ids"].Shape[0]) || !(res.CosMin > 0.9) || res.CosMean < res.CosMin || res.CosMean > 1 {
		t.Errorf("eval: %+v, want the embedding kind over every input with INT8 vs FP32 cosines in (0.9, 1]", res)
	}
}

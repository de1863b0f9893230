package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/internal/tinymodel"
)

// writeDeBERTa writes, in a temporary folder, a random DeBERTa-v3-form
// classifier (the tiny deberta-v3-base's settings, 3 labels) whose
// vocabulary is the oracle spm.model's, with that file beside it as the
// checkpoints have it.
func writeDeBERTa(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(testmodels.TinyDir(t, testmodels.TinyDeBERTaBase), hf.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var cfgJSON map[string]any
	if err := json.Unmarshal(raw, &cfgJSON); err != nil {
		t.Fatal(err)
	}
	// 2000 pieces, then DebertaV2Tokenizer's [MASK].
	cfgJSON["vocab_size"] = 2001
	cfgJSON["architectures"] = []string{hf.ArchDebertaV2ForSequence}
	cfgJSON["id2label"] = map[string]string{"0": "entailment", "1": "neutral", "2": "contradiction"}
	js, err := tinymodel.JSON(cfgJSON)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := hf.ParseConfig(js, "config.json")
	if err != nil {
		t.Fatal(err)
	}
	params, err := tinymodel.Parameters(cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	// The transformers scale (std 0.02) makes every text's logits nearly
	// alike; std 0.5 matrices make them differ, so that INT8 has
	// something to get right.
	for name, p := range params {
		if len(p.Shape) == 2 && !strings.Contains(name, "embeddings") {
			for i := range p.F32 {
				p.F32[i] *= 25
			}
		}
	}
	st, err := tinymodel.Safetensors(params)
	if err != nil {
		t.Fatal(err)
	}
	spm, err := os.ReadFile(filepath.Join("..", "..", "runtime", "tokenizer", "testdata", "oracle", "spm.model"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{hf.ConfigFile: js, hf.SafetensorsFile: st, "spm.model": spm} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDeBERTaFolderRuns: a DeBERTa classifier folder with its spm.model
// tokenizes in DeBERTa's layout and runs from texts end to end, FP32 and
// INT8 (calibrated on the same texts), the INT8 logits close to FP32's in
// how they differ from text to text.
func TestDeBERTaFolderRuns(t *testing.T) {
	dir := writeDeBERTa(t)
	texts := filepath.Join(t.TempDir(), "texts.txt")
	lines := []string{"a gripping, funny film", "it never quite finds its footing .", "the cast is superb and the pacing is tight", "dull"}
	if err := os.WriteFile(texts, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "tokenize", "--model", dir, "--texts", texts)
	if code != 0 {
		t.Fatalf("tokenize: exit %d: %s", code, errs)
	}
	for i, m := range tokenizeLines(t, out) {
		ids := m["input_ids"]
		if len(ids) < 3 || ids[0] != 1 || ids[len(ids)-1] != 2 {
			t.Errorf("text %d: ids %v, want [CLS]=1 ... [SEP]=2", i, ids)
		}
	}
	logits := func(args ...string) [][]float32 {
		t.Helper()
		code, out, errs := runCLI(t, append([]string{"run", "--model", dir, "--texts", texts}, args...)...)
		if code != 0 {
			t.Fatalf("run %v: exit %d: %s", args, code, errs)
		}
		var res [][]float32
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var obj struct{ Logits []float32 }
			if err := json.Unmarshal([]byte(l), &obj); err != nil || len(obj.Logits) != 3 {
				t.Fatalf("run %v: line %q: want 3 logits (%v)", args, l, err)
			}
			res = append(res, obj.Logits)
		}
		if len(res) != len(lines) {
			t.Fatalf("run %v: %d lines for %d texts", args, len(res), len(lines))
		}
		return res
	}
	fp32, int8 := logits("--fp32"), logits("--int8", "--calib", texts)
	// The cosine of the logits' deviations from their mean over the texts.
	var mean [3]float64
	for i := range fp32 {
		for j := range mean {
			mean[j] += float64(fp32[i][j]) / float64(len(fp32))
		}
	}
	var dot, nf, ni float64
	for i := range fp32 {
		for j := range fp32[i] {
			f, q := float64(fp32[i][j])-mean[j], float64(int8[i][j])-mean[j]
			dot, nf, ni = dot+f*q, nf+f*f, ni+q*q
		}
	}
	cos := dot / math.Sqrt(nf*ni)
	t.Logf("INT8 logits cosine %.5f vs FP32 on %d texts (fp32 %v, int8 %v)", cos, len(lines), fp32, int8)
	if !(cos >= 0.95) { // 0.990 measured; a wrong term or table falls far below
		t.Errorf("INT8 logits cosine %.4f vs FP32 (fp32 %v, int8 %v)", cos, fp32, int8)
	}
}

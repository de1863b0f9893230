package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// CLI tests of `sqc run --int8` and `sqc eval` on the small shared model,
// with small data sets so they stay quick.

// sst2Files returns the tiny DistilBERT model directory and the SST-2
// split files, skipping when ../shared is absent.
func sst2Files(t *testing.T) (model, train, dev string) {
	t.Helper()
	model = testmodels.ModelDir(t, testmodels.DistilBertTiny)
	shared, _ := testmodels.SharedDir()
	data := filepath.Join(shared, "data", "glue-sst2")
	return model, filepath.Join(data, "train.tsv"), filepath.Join(data, "dev.tsv")
}

// copyHead copies the first n lines of src into dir/name.
func copyHead(t *testing.T, src, dir, name string, n int) string {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	for i := 0; i < n && sc.Scan(); i++ {
		b.WriteString(sc.Text() + "\n")
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// logitLines parses `run` output.
func logitLines(t *testing.T, out string) [][]float32 {
	t.Helper()
	var rows [][]float32
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var obj struct{ Logits []float32 }
		if err := json.Unmarshal([]byte(l), &obj); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		rows = append(rows, obj.Logits)
	}
	return rows
}

func TestRunINT8PrintsLikeFP32(t *testing.T) {
	model, train, dev := sst2Files(t)
	dir := t.TempDir()
	texts := copyHead(t, dev, dir, "dev.tsv", 41) // header + 40 sentences
	code, fp32, errs := runCLI(t, "run", "--fp32", "--model", model, "--texts", texts)
	if code != 0 {
		t.Fatalf("fp32: exit %d: %s", code, errs)
	}
	for _, variant := range [][]string{{"--act", "static"}, {"--act", "dynamic"}, {"--percentile", "99.99"}, {"--alpha", "auto"}} {
		act := strings.Join(variant, " ")
		args := append([]string{"run", "--int8", "--model", model, "--texts", texts, "--calib", train, "--calib-samples", "64"}, variant...)
		code, int8, errs := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", act, code, errs)
		}
		want, got := logitLines(t, fp32), logitLines(t, int8)
		if len(got) != len(want) {
			t.Fatalf("%s: %d lines, want %d", act, len(got), len(want))
		}
		same := 0
		for i := range want {
			if c := modelrt.Cosine(want[i], got[i]); c < 0.99 {
				t.Errorf("%s: line %d: INT8 logits %v vs FP32 %v (cosine %.4f)", act, i+1, got[i], want[i], c)
			}
			if want[i][0] == got[i][0] && want[i][1] == got[i][1] {
				same++
			}
		}
		if same == len(want) {
			t.Errorf("%s: INT8 logits equal FP32 bit for bit: nothing was quantised", act)
		}
	}
}

func TestRunINT8FromTokenIDs(t *testing.T) {
	model, _, _ := sst2Files(t)
	ids := filepath.Join(model, "reference", "dev.ids.jsonl")
	dir := t.TempDir()
	inputs := copyHead(t, ids, dir, "in.jsonl", 8)
	calibIDs := copyHead(t, ids, dir, "calib.jsonl", 100)
	// Token ids on both sides: no vocabulary is needed.
	code, out, errs := runCLI(t, "run", "--int8", "--model", filepath.Join(model, "model.onnx"), "--vocab", filepath.Join(dir, "missing.txt"), "--ids", inputs, "--calib", calibIDs)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if n := len(logitLines(t, out)); n != 8 {
		t.Errorf("%d lines, want 8", n)
	}
}

func TestINT8BadInput(t *testing.T) {
	model, train, dev := sst2Files(t)
	dir := t.TempDir()
	texts := copyHead(t, dev, dir, "dev.tsv", 5)
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, []byte("\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unlabelled := filepath.Join(dir, "plain.txt")
	if err := os.WriteFile(unlabelled, []byte("a fine film\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"empty calibration file", []string{"run", "--int8", "--model", model, "--texts", texts, "--calib", empty}, []string{empty, "no inputs", "calibration"}},
		{"missing calibration file", []string{"run", "--int8", "--model", model, "--texts", texts, "--calib", filepath.Join(dir, "nope.tsv")}, []string{"nope.tsv"}},
		{"no calibration and no train.tsv beside the input", []string{"run", "--int8", "--model", model, "--texts", texts}, []string{"--calib"}},
		{"alpha out of range", []string{"run", "--int8", "--model", model, "--texts", texts, "--calib", train, "--alpha", "1.5"}, []string{"--alpha"}},
		{"alpha not a number", []string{"run", "--int8", "--model", model, "--texts", texts, "--calib", train, "--alpha", "big"}, []string{"--alpha", "auto"}},
		{"unknown act", []string{"run", "--int8", "--model", model, "--texts", texts, "--calib", train, "--act", "per-channel"}, []string{"--act"}},
		{"bad keep-fp32 pattern", []string{"run", "--int8", "--model", model, "--texts", texts, "--calib", train, "--calib-samples", "8", "--keep-fp32", "("}, []string{"keep-fp32"}},
		{"two precisions", []string{"run", "--int8", "--fp32", "--model", model, "--texts", texts}, []string{"--fp32 or --int8"}},
		{"eval data without labels", []string{"eval", "--model", model, "--data", unlabelled, "--calib", train}, []string{unlabelled, "label"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := runCLI(t, c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (bad input); stderr: %s", code, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q does not mention %q", errs, w)
				}
			}
		})
	}
}

func TestEvalJSONAndLayers(t *testing.T) {
	model, train, dev := sst2Files(t)
	dir := t.TempDir()
	data := copyHead(t, dev, dir, "dev.tsv", 101)
	code, out, errs := runCLI(t, "eval", "--model", model, "--data", data, "--calib", train, "--calib-samples", "64", "--alpha", "auto", "--json", "--layers")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r evalResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.Sentences != 100 || r.Alpha != "auto" || r.Act != "static" || r.CalibSamples != 64 || r.Calibration != train {
		t.Errorf("header fields: %+v", r)
	}
	if r.FP32Accuracy <= 0.5 || r.INT8Accuracy <= 0.5 || r.Agreement < 0.9 || r.MeanCosine < 0.99 || r.MinCosine > r.MeanCosine {
		t.Errorf("implausible figures: %+v", r)
	}
	if d := 100 * (r.INT8Accuracy - r.FP32Accuracy); d != r.Difference {
		t.Errorf("difference %v, accuracies say %v", r.Difference, d)
	}
	// DistilBERT-tiny: 2 layers x (Q, K, V, out, FFN in, FFN out).
	if len(r.Layers) != 12 {
		t.Fatalf("%d layers in the table, want 12", len(r.Layers))
	}
	for _, l := range r.Layers {
		if l.SQNR < 20 || l.SQNR > 80 {
			t.Errorf("%s: SQNR %.1f dB is implausible", l.Node, l.SQNR)
		}
		unsmoothed := l.MinScale == 1 && l.MaxScale == 1 && l.Alpha == 0
		if !(l.MinScale > 0 && l.MinScale <= l.MaxScale) || (l.Absorber == "none" && !unsmoothed) {
			t.Errorf("%s: smoothing %+v", l.Node, l)
		}
	}

	// The table form, with the default calibration file: train.tsv beside
	// the data.
	copyHead(t, train, dir, "train.tsv", 33)
	code, out, errs = runCLI(t, "eval", "--model", model, "--data", data, "--act", "dynamic", "--layers")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, filepath.Join(dir, "train.tsv")) {
		t.Errorf("stderr does not say which calibration file was used: %q", errs)
	}
	for _, want := range []string{"FP32 accuracy", "INT8 accuracy", "agreement", "logits cosine", "dynamic per-token", "SQNR dB", "LayerNorm", "V projection"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

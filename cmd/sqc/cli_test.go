package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/internal/testmodels"
)

// runCLI runs the sqc command line in-process and returns its exit status
// and outputs.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"sqc"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestDemo(t *testing.T) {
	code, out, errs := runCLI(t, "demo")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "positive") || !strings.Contains(out, "negative") || !strings.Contains(out, "INT8") {
		t.Fatalf("demo output lacks labels or the INT8 column:\n%s", out)
	}
	// Every sentence row: FP32 and INT8 agree on the label.
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && (f[0] == "positive" || f[0] == "negative") {
			rows++
			if f[0] != f[2] {
				t.Errorf("FP32 says %s, INT8 says %s: %s", f[0], f[2], l)
			}
		}
	}
	if rows != len(demoSentences) {
		t.Errorf("%d sentence rows, want %d:\n%s", rows, len(demoSentences), out)
	}
}

// TestRunFP32MatchesReference runs the whole user path — the tokenizer on
// the raw SST-2 dev sentences, length-sorted padded batches, the
// interpreter — from both model formats, and compares the printed logits
// with PyTorch's.
func TestRunFP32MatchesReference(t *testing.T) {
	for _, name := range testmodels.Models {
		dir := testmodels.ModelDir(t, name)
		shared, _ := testmodels.SharedDir()
		dev := filepath.Join(shared, "data", "glue-sst2", "dev.tsv")
		ref, err := testmodels.LoadReference(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, model := range []string{filepath.Join(dir, "model.onnx"), dir} {
			t.Run(name+"/"+filepath.Base(model), func(t *testing.T) {
				code, out, errs := runCLI(t, "run", "--fp32", "--model", model, "--texts", dev)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errs)
				}
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if len(lines) != len(ref.Logits) {
					t.Fatalf("%d output lines, want %d", len(lines), len(ref.Logits))
				}
				got := make([][]float32, len(lines))
				maxDiff := 0.0
				for i, l := range lines {
					var obj struct{ Logits []float32 }
					if err := json.Unmarshal([]byte(l), &obj); err != nil {
						t.Fatalf("line %d: %v: %s", i+1, err, l)
					}
					got[i] = obj.Logits
					for j := range obj.Logits {
						maxDiff = math.Max(maxDiff, math.Abs(float64(obj.Logits[j]-ref.Logits[i][j])))
					}
				}
				acc := testmodels.Accuracy(got, ref.Labels)
				t.Logf("max |logit diff| %.2g, accuracy %.4f (reference %.4f)", maxDiff, acc, ref.Accuracy)
				if maxDiff > 1e-4 {
					t.Errorf("max |logit diff| %g > 1e-4", maxDiff)
				}
				if acc != ref.Accuracy {
					t.Errorf("accuracy %v, reference %v", acc, ref.Accuracy)
				}
			})
		}
	}
}

// TestBadInputExitCodes: bad input gives exit status 2 and one line naming
// the file; nothing panics.
func TestBadInputExitCodes(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	texts := write("texts.txt", "a fine film\n")
	truncated := write("trunc.onnx", "\x08\x07\x12\x04abc")
	badCfg := write("badcfg/config.json", `{"model_type":"gpt9","architectures":["Gpt9Model"]}`)
	write("badcfg/model.safetensors", "\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
	ids := write("ids.jsonl", `{"input_ids":[101,102],"attention_mask":[1]}`)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing model", []string{"run", "--fp32", "--model", filepath.Join(tmp, "nope.onnx"), "--texts", texts}, "nope.onnx"},
		{"truncated onnx", []string{"run", "--fp32", "--model", truncated, "--texts", texts}, "trunc.onnx"},
		{"unknown model_type", []string{"inspect", filepath.Dir(badCfg)}, "gpt9"},
		{"mask length", []string{"run", "--fp32", "--model", truncated, "--ids", ids}, "ids.jsonl"},
		{"no precision", []string{"run", "--model", truncated, "--texts", texts}, "--fp32"},
		{"unknown flag", []string{"run", "--bogus"}, "bogus"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, c.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stdout %q stderr %q", code, out, errs)
			}
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			if !strings.Contains(errs, c.want) {
				t.Fatalf("stderr %q does not mention %q", errs, c.want)
			}
			if len(lines) != 1 && c.name != "unknown flag" {
				t.Errorf("want one line on stderr, got %d:\n%s", len(lines), errs)
			}
		})
	}
}

func TestInspect(t *testing.T) {
	dir := testmodels.ModelDir(t, testmodels.BertMini)
	code, out, errs := runCLI(t, "inspect", filepath.Join(dir, "model.onnx"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"MatMul", "11171074", "logits"} {
		if !strings.Contains(strings.ReplaceAll(out, ",", ""), want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
}

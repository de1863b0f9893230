package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/internal/reliability"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestRunChecksInputsFirst: token ids outside the vocabulary, negative
// ids and sequences longer than the model's positions make `sqc run`
// print one line naming the --ids file and the line, and exit 2, with
// both precisions and both model formats. The INT8 runs are given a
// calibration file that does not exist, so they can only pass if the
// check comes before calibrating (or anything else) starts.
func TestRunChecksInputsFirst(t *testing.T) {
	dir := t.TempDir()
	if _, err := reliability.ValidCommands(dir); err != nil { // writes model.onnx and hf/
		t.Fatal(err)
	}
	long := make([]string, reliability.TinyMaxPositions+1)
	for i := range long {
		long[i] = "5"
	}
	ok := `{"input_ids":[2,5,6,3]}`
	cases := []struct {
		name, line string
		mentions   []string
		onnx       bool // the tiny ONNX model has no position table
	}{
		{"past-vocabulary", fmt.Sprintf(`{"input_ids":[2,%d,3]}`, reliability.TinyVocabSize),
			[]string{"line 3", fmt.Sprintf("input_ids[1] is %d", reliability.TinyVocabSize), fmt.Sprint(reliability.TinyVocabSize)}, true},
		{"negative", `{"input_ids":[2,-4,3]}`, []string{"line 3", "-4", "negative"}, true},
		{"too-long", `{"input_ids":[` + strings.Join(long, ",") + `]}`,
			[]string{"line 3", fmt.Sprintf("%d tokens", len(long)), fmt.Sprintf("%d positions", reliability.TinyMaxPositions)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ids := filepath.Join(t.TempDir(), "ids.jsonl")
			// Line 2 is blank: line numbers count the file's lines.
			if err := os.WriteFile(ids, []byte(ok+"\n\n"+c.line+"\n"+ok+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			models := []string{filepath.Join(dir, "hf")}
			if c.onnx {
				models = append(models, filepath.Join(dir, "model.onnx"))
			}
			for _, model := range models {
				for _, args := range [][]string{
					{"run", "--fp32", "--model", model, "--ids", ids},
					{"run", "--fp32", "--check-ir", "--model", model, "--ids", ids},
					{"run", "--int8", "--model", model, "--ids", ids, "--calib", filepath.Join(dir, "absent.jsonl")},
				} {
					code, out, errs := runCLISafely(t, args)
					cmd := "sqc " + strings.Join(args, " ")
					if code != 2 || out != "" || strings.Count(errs, "\n") != 1 {
						t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and one line on stderr", cmd, code, out, errs)
					}
					for _, s := range append([]string{ids}, c.mentions...) {
						if !strings.Contains(errs, s) {
							t.Errorf("%s: stderr does not mention %q: %s", cmd, s, errs)
						}
					}
				}
			}
		})
	}
}

// TestModelLimitsOfSharedModels: the limits are found in both export
// forms of real models: the HF frontend's graph (a Slice of the position
// table) and torch.onnx's (a Slice of the position_ids buffer), with the
// token type table of BERT.
func TestModelLimitsOfSharedModels(t *testing.T) {
	for _, name := range testmodels.Models {
		dir := testmodels.ModelDir(t, name)
		for _, path := range []string{dir, filepath.Join(dir, "model.onnx")} {
			g, err := frontend.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			lim := modelLimits(g)
			if got := lim.tables["input_ids"].rows; got != 30522 {
				t.Errorf("%s: input_ids index %d rows (%s), want 30522", path, got, lim.tables["input_ids"].name)
			}
			if lim.positions.rows != 512 {
				t.Errorf("%s: %d positions (%s), want 512", path, lim.positions.rows, lim.positions.name)
			}
			typeRows, hasTypes := lim.tables["token_type_ids"]
			if wantTypes := name == testmodels.BertMini; hasTypes != wantTypes || (hasTypes && typeRows.rows != 2) {
				t.Errorf("%s: token_type_ids table %+v (found %v), want 2 rows: %v", path, typeRows, hasTypes, wantTypes)
			}
		}
	}
}

package reliability

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/examples/sentiment/sentimentmodel"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// callSafely runs f, turning a panic into a test failure that names what
// was being done.
func callSafely(t *testing.T, what string, f func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s panicked: %v\n%s", what, r, debug.Stack())
		}
	}()
	return f()
}

// checkBadInputError fails t unless err is a typed bad-input error: it
// matches want and compiler.ErrBadInput (tokenizer.ErrBadInput is the same
// sentinel), is (or wraps) an *InputError (the one type of both packages),
// and mentions every string.
func checkBadInputError(t *testing.T, err, want error, mentions []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %v", want)
	}
	if !errors.Is(err, compiler.ErrBadInput) {
		t.Errorf("error does not match compiler.ErrBadInput: %v", err)
	}
	var ie *compiler.InputError
	if !errors.As(err, &ie) {
		t.Errorf("error is not a *compiler.InputError: %T %v", err, err)
	}
	if !errors.Is(err, want) {
		t.Errorf("error does not match %q: %v", want, err)
	}
	for _, s := range mentions {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error does not mention %q: %v", s, err)
		}
	}
}

// TestBadInputLoaders feeds every bad-input case to the public Go API
// that reads it.
func TestBadInputLoaders(t *testing.T) {
	for _, c := range BadInputCases() {
		t.Run(c.Name, func(t *testing.T) {
			in, err := c.Build(t.TempDir())
			if err != nil {
				t.Fatalf("building the input: %v", err)
			}
			err = callSafely(t, "Load", in.Load)
			checkBadInputError(t, err, c.Want, in.Mentions)
			t.Logf("%v", err)
		})
	}
}

// TestTinyModelsValid: the files every case breaks are valid before they
// are broken, so each case tests its own fault and nothing else.
func TestTinyModelsValid(t *testing.T) {
	dir := t.TempDir()
	onnxPath, err := writeFile(dir, "model.onnx", tinyONNX().marshal())
	if err != nil {
		t.Fatal(err)
	}
	tensors, err := tinyHFTensors(tinyHFConfig())
	if err != nil {
		t.Fatal(err)
	}
	hfDir := filepath.Join(dir, "hf")
	if err := writeTinyHF(hfDir, tinyHFConfig(), tensors); err != nil {
		t.Fatal(err)
	}
	ids, err := writeFile(dir, "ids.jsonl", idsLine(TinyIDs, nil, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{onnxPath, hfDir} {
		if err := CheckModel(model); err != nil {
			t.Errorf("%s: %v", model, err)
		}
		if err := RunIDs(model, ids); err != nil {
			t.Errorf("%s on %s: %v", model, ids, err)
		}
	}
	if err := loadVocab(filepath.Join(hfDir, "vocab.txt")); err != nil {
		t.Error(err)
	}
	tj, err := writeFile(dir, "tokenizer.json", tinyTokenizerJSON())
	if err != nil {
		t.Fatal(err)
	}
	if err := loadTokenizerJSON(tj); err != nil {
		t.Error(err)
	}
}

// TestBadInputCaseNames: names are unique (the CLI test looks cases up by
// name) and say which file kind they break.
func TestBadInputCaseNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range BadInputCases() {
		if seen[c.Name] {
			t.Errorf("case %q listed twice", c.Name)
		}
		seen[c.Name] = true
		if !strings.Contains(c.Name, "/") {
			t.Errorf("case %q: want kind/what", c.Name)
		}
	}
}

// TestBadRequestsGenerated: the generated Model's Run (the example's
// sentimentmodel) refuses bad requests with runtime/modelrt's typed
// errors, naming the sequence at fault.
func TestBadRequestsGenerated(t *testing.T) {
	m, err := sentimentmodel.NewWithOptions(sentimentmodel.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ok := []int64{101, 2023, 102}
	long := make([]int64, sentimentmodel.MaxSequence+1)
	for i := range long {
		long[i] = 2023
	}
	cases := []struct {
		name     string
		b        sentimentmodel.Batch
		want     error
		mentions []string
	}{
		{"empty batch", sentimentmodel.Batch{}, modelrt.ErrEmptyBatch, nil},
		{"empty sequence", sentimentmodel.Batch{InputIDs: [][]int64{ok, {}}}, modelrt.ErrEmptySequence, []string{"sequence 1"}},
		{"longer than compiled maximum", sentimentmodel.Batch{InputIDs: [][]int64{ok, ok, long}}, modelrt.ErrSequenceTooLong,
			[]string{"sequence 2", fmt.Sprint(sentimentmodel.MaxSequence + 1), fmt.Sprint(sentimentmodel.MaxSequence)}},
		{"token id past vocabulary", sentimentmodel.Batch{InputIDs: [][]int64{{101, sentimentmodel.VocabSize, 102}}}, modelrt.ErrTokenOutOfRange,
			[]string{"sequence 0", fmt.Sprint(sentimentmodel.VocabSize)}},
		{"negative token id", sentimentmodel.Batch{InputIDs: [][]int64{ok, {101, -1, 102}}}, modelrt.ErrTokenOutOfRange, []string{"sequence 1", "-1"}},
		{"mask length", sentimentmodel.Batch{InputIDs: [][]int64{ok}, AttentionMask: [][]int64{{1, 1}}}, modelrt.ErrMaskLength, []string{"sequence 0"}},
		{"masks for fewer sequences", sentimentmodel.Batch{InputIDs: [][]int64{ok, ok}, AttentionMask: [][]int64{{1, 1, 1}}}, modelrt.ErrBatchShape, nil},
		{"token type the model lacks", sentimentmodel.Batch{InputIDs: [][]int64{ok}, TokenTypeIDs: [][]int64{{0, 1, 0}}}, modelrt.ErrTokenTypeInRange, []string{"sequence 0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out sentimentmodel.Outputs
			err := callSafely(t, "Run", func() (err error) {
				out, err = m.Run(context.Background(), c.b)
				return err
			})
			if !errors.Is(err, c.want) || !errors.Is(err, modelrt.ErrInvalidInput) {
				t.Fatalf("err %v, want %v (and ErrInvalidInput)", err, c.want)
			}
			var ie *modelrt.InputError
			if !errors.As(err, &ie) {
				t.Errorf("error is a %T, want *modelrt.InputError", err)
			}
			for _, s := range c.mentions {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error does not mention %q: %v", s, err)
				}
			}
			if out.Logits != nil {
				t.Errorf("Run returned logits with its error")
			}
			t.Logf("%v", err)
		})
	}
}

// TestBadRequestsProgram: exec.Program.Run refuses inputs that do not fit
// the graph with compiler.ErrInvalidRequest, naming the input or the step
// and the model file.
func TestBadRequestsProgram(t *testing.T) {
	d := loadDemo(t)
	p := compileProgram(t, quantizedDemo(t, d, compiler.QLinearStatic), "", 1)
	ok := [][]int64{{101, 2023, 102}}
	with := func(edit func(in map[string]*compiler.Tensor)) map[string]*compiler.Tensor {
		in := batch(ok)
		edit(in)
		return in
	}
	long := make([]int64, 513) // the demo model has 512 positions
	cases := []struct {
		name     string
		in       map[string]*compiler.Tensor
		mentions []string
	}{
		{"missing input", with(func(in map[string]*compiler.Tensor) { delete(in, "attention_mask") }), []string{"attention_mask", "missing"}},
		{"unknown input", with(func(in map[string]*compiler.Tensor) { in["token_type_ids"] = in["input_ids"] }), []string{"token_type_ids"}},
		{"wrong dtype", with(func(in map[string]*compiler.Tensor) {
			in["input_ids"] = compiler.NewTensor(compiler.Int32, 1, 3)
		}), []string{"input_ids", "i32"}},
		{"wrong rank", with(func(in map[string]*compiler.Tensor) {
			in["input_ids"] = compiler.NewTensor(compiler.Int64, 3)
		}), []string{"input_ids"}},
		{"mask length differs from ids", with(func(in map[string]*compiler.Tensor) {
			in["attention_mask"] = compiler.NewTensor(compiler.Int64, 1, 4)
		}), []string{"attention_mask", "sequence"}},
		{"inconsistent tensor", with(func(in map[string]*compiler.Tensor) {
			in["input_ids"].I64 = in["input_ids"].I64[:2]
		}), []string{"input_ids"}},
		{"token id past vocabulary", batch([][]int64{{101, 30522, 102}}), []string{d.dir, "30522"}},
		{"longer than the model's positions", batch([][]int64{long}), []string{d.dir, "513", "512"}},
		{"empty sequences", with(func(in map[string]*compiler.Tensor) {
			in["input_ids"] = compiler.NewTensor(compiler.Int64, 2, 0)
			in["attention_mask"] = compiler.NewTensor(compiler.Int64, 2, 0)
		}), []string{d.dir}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := callSafely(t, "Run", func() error {
				_, err := p.Run(c.in)
				return err
			})
			checkBadInputError(t, err, compiler.ErrInvalidRequest, c.mentions)
			if strings.Contains(fmt.Sprint(err), "internal error") {
				t.Errorf("a kernel panicked on input the checks let through: %v", err)
			}
			t.Logf("%v", err)
		})
	}
}

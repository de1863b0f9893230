package genworker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/bench"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

func tensor(batch, seq int, vals ...int64) *compiler.Tensor {
	t := compiler.NewTensor(compiler.Int64, int64(batch), int64(seq))
	copy(t.I64, vals)
	return t
}

func TestBatchOfRightPaddedIsRealTokensOnly(t *testing.T) {
	in := map[string]*compiler.Tensor{
		bench.InputIDs:      tensor(2, 4, 101, 7, 8, 0, 101, 9, 0, 0),
		bench.AttentionMask: tensor(2, 4, 1, 1, 1, 0, 1, 1, 0, 0),
		bench.TokenTypeIDs:  tensor(2, 4, 0, 0, 1, 0, 0, 1, 0, 0),
	}
	b, err := BatchOf(in)
	if err != nil {
		t.Fatal(err)
	}
	if b.AttentionMask != nil {
		t.Errorf("mask %v: want none (each sequence is its real tokens)", b.AttentionMask)
	}
	wantIDs := [][]int64{{101, 7, 8}, {101, 9}}
	wantTypes := [][]int64{{0, 0, 1}, {0, 1}}
	for i := range wantIDs {
		if !slices.Equal(b.InputIDs[i], wantIDs[i]) || !slices.Equal(b.TokenTypeIDs[i], wantTypes[i]) {
			t.Errorf("sequence %d: ids %v types %v, want %v %v", i, b.InputIDs[i], b.TokenTypeIDs[i], wantIDs[i], wantTypes[i])
		}
		if cap(b.InputIDs[i]) != len(wantIDs[i]) {
			t.Errorf("sequence %d: capacity %d reaches into the padding", i, cap(b.InputIDs[i]))
		}
	}
	if err := modelrt.Validate(&b, modelrt.Limits{MaxSequence: 4, Vocab: 200, TypeVocab: 2}); err != nil {
		t.Errorf("the package's own check refuses the batch: %v", err)
	}
}

func TestBatchOfKeepsOtherMasksWhole(t *testing.T) {
	in := map[string]*compiler.Tensor{
		bench.InputIDs:      tensor(2, 3, 0, 101, 7, 101, 8, 9),
		bench.AttentionMask: tensor(2, 3, 0, 1, 1, 1, 1, 1), // left padding
	}
	b, err := BatchOf(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.AttentionMask) != 2 || !slices.Equal(b.AttentionMask[0], []int64{0, 1, 1}) || len(b.InputIDs[1]) != 3 {
		t.Errorf("got ids %v mask %v: want the rows whole, with their masks", b.InputIDs, b.AttentionMask)
	}
	if b.TokenTypeIDs != nil {
		t.Errorf("types %v without a token_type_ids input", b.TokenTypeIDs)
	}

	only, err := BatchOf(map[string]*compiler.Tensor{bench.InputIDs: tensor(1, 2, 101, 5)})
	if err != nil || len(only.InputIDs) != 1 || len(only.InputIDs[0]) != 2 || only.AttentionMask != nil {
		t.Errorf("ids only: %+v, %v", only, err)
	}
}

func TestBatchOfBadInputs(t *testing.T) {
	for name, in := range map[string]map[string]*compiler.Tensor{
		"no ids":     {bench.AttentionMask: tensor(1, 2)},
		"mask shape": {bench.InputIDs: tensor(1, 2), bench.AttentionMask: tensor(1, 3)},
		"ids rank":   {bench.InputIDs: {DType: compiler.Int64, Shape: []int64{2}, I64: []int64{1, 2}}},
		"types f32":  {bench.InputIDs: tensor(1, 2), bench.TokenTypeIDs: compiler.NewTensor(compiler.Float32, 1, 2)},
	} {
		if _, err := BatchOf(in); !errors.Is(err, compiler.ErrInvalidRequest) {
			t.Errorf("%s: err %v, want ErrInvalidRequest", name, err)
		}
	}
}

// fakeModel records the batches it is sent.
type fakeModel struct {
	isa     string
	batches []modelrt.Batch
	err     error
	closed  bool
}

func (f *fakeModel) Run(_ context.Context, b modelrt.Batch) error {
	f.batches = append(f.batches, b)
	return f.err
}
func (f *fakeModel) Describe() string { return "fake kernels " + f.isa }
func (f *fakeModel) Close()           { f.closed = true }

func fakeSpec(models *[]*fakeModel) Spec {
	return Spec{
		Model: "fake", Inputs: []string{bench.InputIDs, bench.AttentionMask, bench.TokenTypeIDs},
		Vocab: 2000, MaxBatch: 4, MaxSeq: 16,
		Open: func(o ModelOptions) (Model, error) {
			m := &fakeModel{isa: o.ISA}
			*models = append(*models, m)
			return m, nil
		},
	}
}

// serve runs Main on the request lines and returns the reply lines.
func serve(t *testing.T, spec Spec, args []string, requests ...string) ([]map[string]any, int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(spec, args, strings.NewReader(strings.Join(requests, "\n")+"\n"), &out, &errOut)
	var replies []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("reply %q: %v", line, err)
		}
		replies = append(replies, r)
	}
	return replies, code, errOut.String()
}

func TestMainServesTheModelsRun(t *testing.T) {
	var models []*fakeModel
	replies, code, stderr := serve(t, fakeSpec(&models), []string{"--threads", "1"},
		`{"op":"run","mode":"int8","lengths":[3,1,5],"n":2}`,
		`{"op":"run","mode":"int8","batch":2,"seq":6}`,
		`{"op":"run","mode":"int8","lengths":[1,1,1,1,1]}`,
		`{"op":"check"}`,
		`{"op":"quit"}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if len(replies) != 6 {
		t.Fatalf("%d replies, want hello + 5: %v", len(replies), replies)
	}
	hello := replies[0]
	if hello["system"] != System || !slices.Contains(anyStrings(hello["modes"]), bench.ModeINT8) {
		t.Errorf("hello %v", hello)
	}
	if ms, ok := replies[1]["ms"].([]any); !ok || len(ms) != 2 {
		t.Errorf("run with lengths: %v, want 2 times", replies[1])
	}
	if ms, ok := replies[2]["ms"].([]any); !ok || len(ms) != 1 {
		t.Errorf("padded run: %v", replies[2])
	}
	if e, _ := replies[3]["error"].(string); !strings.Contains(e, "at most 4") {
		t.Errorf("5 sequences to a max batch of 4: %v", replies[3])
	}
	if acc, ok := replies[4]["acc"].(map[string]any); !ok || len(acc) != 0 {
		t.Errorf("check: %v, want an empty acc", replies[4])
	}
	m := models[0] // the int8 mode's
	if m.isa != "" || !m.closed {
		t.Errorf("int8 model: isa %q, closed %v", m.isa, m.closed)
	}
	if len(m.batches) != 3 {
		t.Fatalf("int8 model ran %d batches, want 2 + 1", len(m.batches))
	}
	for i, want := range []int{3, 1, 5} {
		if got := len(m.batches[0].InputIDs[i]); got != want {
			t.Errorf("sequence %d of the lengths run: %d tokens, want %d", i, got, want)
		}
	}
	if b := m.batches[2]; b.Len() != 2 || len(b.InputIDs[0]) != 6 || len(b.InputIDs[1]) != 6 {
		t.Errorf("padded run sent %v", b.InputIDs)
	}
	for _, other := range models[1:] {
		if other.isa != "vnni" || !other.closed {
			t.Errorf("extra mode's model: isa %q closed %v", other.isa, other.closed)
		}
	}
}

func anyStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func TestMainReportsRunErrorsAndBadFlags(t *testing.T) {
	var models []*fakeModel
	spec := fakeSpec(&models)
	open := spec.Open
	spec.Open = func(o ModelOptions) (Model, error) {
		m, err := open(o)
		m.(*fakeModel).err = errors.New("kernel fault")
		return m, err
	}
	replies, code, _ := serve(t, spec, nil, `{"op":"run","mode":"int8","batch":1,"seq":4}`, `{"op":"quit"}`)
	if code != 0 || len(replies) != 3 {
		t.Fatalf("exit %d, replies %v", code, replies)
	}
	if e, _ := replies[1]["error"].(string); !strings.Contains(e, "kernel fault") {
		t.Errorf("a failing Run: %v", replies[1])
	}

	if _, code, stderr := serve(t, spec, []string{"--threads", "-1"}); code != 2 || !strings.Contains(stderr, "--threads") {
		t.Errorf("--threads -1: exit %d, %q", code, stderr)
	}
	if _, code, _ := serve(t, spec, []string{"extra"}); code != 2 {
		t.Errorf("an argument: exit %d, want 2", code)
	}
	bad := spec
	bad.Open = func(ModelOptions) (Model, error) { return nil, errors.New("no weights") }
	if _, code, stderr := serve(t, bad, nil); code != 1 || !strings.Contains(stderr, "no weights") {
		t.Errorf("Open failing: exit %d, %q", code, stderr)
	}
	if _, err := NewWorker(Spec{Model: "empty"}, 1, nil); !errors.Is(err, compiler.ErrInvalidRequest) {
		t.Errorf("empty spec: %v", err)
	}
}

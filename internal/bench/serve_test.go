package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// fakeEngine records the shapes it is run on.
type fakeEngine struct {
	runs   int
	shapes [][]int64
	fail   bool
}

func (e *fakeEngine) Run(in map[string]*compiler.Tensor) (map[string]*compiler.Tensor, error) {
	if e.fail {
		return nil, errors.New("kernel exploded")
	}
	e.runs++
	e.shapes = append(e.shapes, in[InputIDs].Shape)
	return map[string]*compiler.Tensor{}, nil
}
func (e *fakeEngine) Describe() string { return "fake" }
func (e *fakeEngine) Close()           {}

// fakeModel is a model with BERT's three inputs and no nodes: enough for
// Inputs.
func fakeModel() *Model {
	g := compiler.NewGraph("fake")
	for _, n := range []string{InputIDs, AttentionMask, TokenTypeIDs} {
		g.Inputs = append(g.Inputs, &compiler.Value{Name: n, DType: compiler.Int64})
	}
	return &Model{Name: "fake", Graph: g, Vocab: 30522}
}

// serveScript runs a worker on the given request lines and returns its
// reply lines, decoded.
func serveScript(t *testing.T, w *Worker, lines ...string) []map[string]any {
	t.Helper()
	var out, log bytes.Buffer
	w.Log = &log
	if err := w.Serve(strings.NewReader(strings.Join(lines, "\n")+"\n"), &out); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	var replies []map[string]any
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("reply %q is not one JSON object: %v", sc.Text(), err)
		}
		replies = append(replies, m)
	}
	return replies
}

func TestServeProtocol(t *testing.T) {
	fast, slow := &fakeEngine{}, &fakeEngine{}
	w := &Worker{
		System: "sqc", Model: fakeModel(),
		Modes: []WorkerMode{{ModeINT8, fast}, {ModeINT8VNNI, slow}},
		Env:   map[string]any{"go": "test"},
		Check: func() (map[string]any, error) {
			return map[string]any{ModeINT8: map[string]any{"cos_logits": 0.999}}, nil
		},
	}
	replies := serveScript(t, w,
		`{"op": "run", "mode": "int8", "batch": 2, "seq": 16, "n": 3}`,
		`{"op": "run", "mode": "int8-vnni", "batch": 1, "seq": 8}`,
		`{"op": "run", "mode": "int8", "batch": 2, "seq": 16, "n": 1}`,
		`{"op": "check"}`,
		`{"op": "quit"}`,
		`{"op": "run", "mode": "int8", "batch": 1, "seq": 1, "n": 1}`, // after quit: never read
	)
	if len(replies) != 6 {
		t.Fatalf("%d replies, want hello + 5: %v", len(replies), replies)
	}
	hello := replies[0]
	if hello["ready"] != true || hello["system"] != "sqc" {
		t.Errorf("hello %v", hello)
	}
	if modes, _ := hello["modes"].([]any); len(modes) != 2 || modes[0] != ModeINT8 || modes[1] != ModeINT8VNNI {
		t.Errorf("hello modes %v", hello["modes"])
	}
	if ms, _ := replies[1]["ms"].([]any); len(ms) != 3 {
		t.Errorf("run n=3 replied %v, want 3 times", replies[1])
	}
	if ms, _ := replies[2]["ms"].([]any); len(ms) != 1 {
		t.Errorf("run without n replied %v, want 1 time", replies[2])
	}
	if fast.runs != 4 || slow.runs != 1 {
		t.Errorf("engine runs %d and %d, want 4 and 1", fast.runs, slow.runs)
	}
	if got := fast.shapes[0]; len(got) != 2 || got[0] != 2 || got[1] != 16 {
		t.Errorf("int8 ran on input_ids %v, want [2 16]", got)
	}
	acc, _ := replies[4]["acc"].(map[string]any)
	if _, ok := acc[ModeINT8]; !ok {
		t.Errorf("check replied %v", replies[4])
	}
	if replies[5]["bye"] != true {
		t.Errorf("quit replied %v", replies[5])
	}
	if len(w.inputs) != 2 {
		t.Errorf("%d input shapes cached, want 2 (inputs are prepared once per shape)", len(w.inputs))
	}
}

func TestServeBadRequests(t *testing.T) {
	failing := &fakeEngine{fail: true}
	w := &Worker{System: "sqc", Model: fakeModel(), Modes: []WorkerMode{{ModeINT8, &fakeEngine{}}, {"broken", failing}}}
	replies := serveScript(t, w,
		`not json`,
		`{"op": "run", "mode": "fp64", "batch": 1, "seq": 8}`,
		`{"op": "run", "mode": "int8", "batch": 0, "seq": 8}`,
		`{"op": "run", "mode": "int8", "batch": 1, "seq": 8, "n": -1}`,
		`{"op": "run", "mode": "broken", "batch": 1, "seq": 8}`,
		`{"op": "dance"}`,
		``,
		`{"op": "check"}`,
		`{"op": "run", "mode": "int8", "batch": 1, "seq": 8}`,
	) // no quit: end of input ends the worker
	if len(replies) != 9 {
		t.Fatalf("%d replies, want hello + 8 (the blank line is skipped): %v", len(replies), replies)
	}
	for i, want := range []string{"bad request", "unknown mode", "at least 1", "n = -1", "kernel exploded", "unknown op"} {
		msg, _ := replies[1+i]["error"].(string)
		if !strings.Contains(msg, want) {
			t.Errorf("reply %d = %v, want an error containing %q", i+1, replies[1+i], want)
		}
	}
	// No Check function: an empty acc object, as the protocol allows.
	if acc, ok := replies[7]["acc"].(map[string]any); !ok || len(acc) != 0 {
		t.Errorf("check without a checker replied %v, want {\"acc\": {}}", replies[7])
	}
	if ms, _ := replies[8]["ms"].([]any); len(ms) != 1 {
		t.Errorf("the worker did not recover after errors: %v", replies[8])
	}
}

// maskEngine records each run's attention mask.
type maskEngine struct{ masks [][]int64 }

func (e *maskEngine) Run(in map[string]*compiler.Tensor) (map[string]*compiler.Tensor, error) {
	m := in[AttentionMask]
	e.masks = append(e.masks, append(m.Shape[:2:2], m.I64...))
	return map[string]*compiler.Tensor{}, nil
}
func (e *maskEngine) Describe() string { return "mask" }
func (e *maskEngine) Close()           {}

// TestServeLengths: a run with lengths pads the batch to the longest (or
// to seq) under the mask, caches it per lengths, and rejects lengths that
// do not fit.
func TestServeLengths(t *testing.T) {
	eng := &maskEngine{}
	w := &Worker{System: "sqc", Model: fakeModel(), Modes: []WorkerMode{{ModeINT8, eng}}}
	replies := serveScript(t, w,
		`{"op": "run", "mode": "int8", "lengths": [3, 1, 2]}`,
		`{"op": "run", "mode": "int8", "batch": 2, "seq": 4, "lengths": [4, 2]}`,
		`{"op": "run", "mode": "int8", "lengths": [3, 1, 2], "n": 2}`,
		`{"op": "run", "mode": "int8", "lengths": [3, 2, 1]}`,
		`{"op": "run", "mode": "int8", "batch": 3, "lengths": [1, 2]}`,
		`{"op": "run", "mode": "int8", "seq": 2, "lengths": [3]}`,
		`{"op": "run", "mode": "int8", "lengths": [0, 2]}`,
		`{"op": "run", "mode": "int8", "lengths": []}`,
	)
	if len(replies) != 9 {
		t.Fatalf("%d replies, want hello + 8: %v", len(replies), replies)
	}
	for i, want := range []string{"", "", "", "", "batch 3 with 2 lengths", "length 3 of sequence 0 is outside 1..2", "length 0 of sequence 0", "lengths is empty"} {
		msg, _ := replies[1+i]["error"].(string)
		if want == "" && msg != "" || !strings.Contains(msg, want) {
			t.Errorf("request %d replied %v, want error %q", i+1, replies[1+i], want)
		}
	}
	wantMasks := [][]int64{
		{3, 3, 1, 1, 1, 1, 0, 0, 1, 1, 0},
		{2, 4, 1, 1, 1, 1, 1, 1, 0, 0},
		{3, 3, 1, 1, 1, 1, 0, 0, 1, 1, 0},
		{3, 3, 1, 1, 1, 1, 0, 0, 1, 1, 0},
		{3, 3, 1, 1, 1, 1, 1, 0, 1, 0, 0},
	}
	if len(eng.masks) != len(wantMasks) {
		t.Fatalf("%d runs, want %d", len(eng.masks), len(wantMasks))
	}
	for i, want := range wantMasks {
		if !slices.Equal(eng.masks[i], want) {
			t.Errorf("run %d: shape and mask %v, want %v", i, eng.masks[i], want)
		}
	}
	if len(w.inputs) != 3 {
		t.Errorf("%d input batches cached, want 3 (one per lengths)", len(w.inputs))
	}
}

func TestInputsWithLengths(t *testing.T) {
	m := fakeModel()
	in, err := m.InputsWithLengths([]int{5, 1, 3}, 6, 1)
	if err != nil {
		t.Fatal(err)
	}
	ids, mask := in[InputIDs], in[AttentionMask]
	if !slices.Equal(ids.Shape, []int64{3, 6}) {
		t.Fatalf("shape %v", ids.Shape)
	}
	for b, l := range []int{5, 1, 3} {
		for i := range 6 {
			id, on := ids.I64[b*6+i], mask.I64[b*6+i]
			switch {
			case i == 0 && (id != clsID || on != 1):
				t.Errorf("sequence %d starts with id %d mask %d, want [CLS] under 1", b, id, on)
			case i > 0 && i < l && (id < firstRandomID || on != 1):
				t.Errorf("sequence %d token %d: id %d mask %d, want a random id under 1", b, i, id, on)
			case i >= l && (id != 0 || on != 0):
				t.Errorf("sequence %d token %d: id %d mask %d, want [PAD] under 0", b, i, id, on)
			}
		}
	}
	full, _ := m.Inputs(3, 6, 1)
	same, _ := m.InputsWithLengths([]int{6, 6, 6}, 6, 1)
	if !slices.Equal(full[InputIDs].I64, same[InputIDs].I64) || !slices.Equal(full[AttentionMask].I64, same[AttentionMask].I64) {
		t.Error("full lengths differ from Inputs")
	}
	for _, bad := range [][]int{nil, {7}, {0}} {
		if _, err := m.InputsWithLengths(bad, 6, 1); err == nil {
			t.Errorf("lengths %v accepted with seq 6", bad)
		}
	}
}

package bench

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

func TestWorkerEndToEnd(t *testing.T) {
	w, err := NewWorker(WorkerOptions{Source: Source{Config: "bert-tiny"}, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	hasVNNI := false
	for _, v := range qgemm.Variants() {
		hasVNNI = hasVNNI || v.ISA == qgemm.ISAVNNI
	}
	want := []string{ModeINT8}
	if hasVNNI {
		want = append(want, ModeINT8VNNI)
	}
	want = append(want, ModeINT8AttnFP32)
	// The comparison modes follow where ModeINT8's kernels make them
	// meaningful (notOffered): on AMX CPUs.
	int8 := w.Modes[0].Engine.(*int8Engine).prog.Engine()
	if int8.FusedEpilogue() {
		want = append(want, ModeINT8SeparateEpilogue)
	}
	if int8.ISA() == qgemm.ISAAMX {
		want = append(want, ModeINT8FinishColumn, ModeINT8FinishRow)
	}
	checkModes(t, w, want, ModeINT8AttnFP32, true)
	replies := serveScript(t, w,
		`{"op": "check"}`,
		`{"op": "run", "mode": "int8", "batch": 2, "seq": 32, "n": 2}`,
		`{"op": "run", "mode": "int8", "batch": 1, "seq": 600, "n": 1}`,
		`{"op": "quit"}`)
	if len(replies) != 5 {
		t.Fatalf("replies %v", replies)
	}
	if env, _ := replies[0]["env"].(map[string]any); env["engines"] == nil || env["model"] != "bert-tiny" {
		t.Errorf("hello env %v", replies[0]["env"])
	}
	acc, _ := replies[1]["acc"].(map[string]any)
	for _, m := range w.Modes {
		a, _ := acc[m.Name].(map[string]any)
		cos, _ := a["cos_logits"].(float64)
		wide, _ := a["cos_logits_wide"].(float64)
		if cos < 0.99 || wide < 0.99 || a["vs"] != "sqc/fp32-interp" || a["wide_sequences"] != float64(WideCheckSequences) {
			t.Errorf("check of %s: %v, want cos_logits and cos_logits_wide (%d sequences) >= 0.99 vs sqc/fp32-interp", m.Name, a, WideCheckSequences)
		}
	}
	if ms, _ := replies[2]["ms"].([]any); len(ms) != 2 {
		t.Errorf("run replied %v", replies[2])
	}
	// 600 tokens exceed bert-tiny's 512 positions: an error reply, not a crash.
	if _, ok := replies[3]["error"]; !ok {
		t.Errorf("sequence 600 replied %v, want an error", replies[3])
	}
}

// TestWorkerModeOffers checks which comparison modes are offered beside
// which ModeINT8 engine: the separate epilogue where int8 fuses it, the
// forced finish orders where int8 runs AMX kernels, the rest always.
func TestWorkerModeOffers(t *testing.T) {
	sep := modeSpec{name: ModeINT8SeparateEpilogue, separate: true}
	col := modeSpec{name: ModeINT8FinishColumn, finish: qgemm.FinishColumnMajor}
	row := modeSpec{name: ModeINT8FinishRow, finish: qgemm.FinishRowMajor}
	plain := modeSpec{name: ModeINT8AttnFP32}
	for _, c := range []struct {
		isa     qgemm.ISA
		fused   bool
		offered []modeSpec
	}{
		{qgemm.ISAAMX, true, []modeSpec{sep, col, row, plain}},
		{qgemm.ISAAMX, false, []modeSpec{col, row, plain}}, // SQC_EPILOGUE=separate
		{qgemm.ISAVNNI, false, []modeSpec{plain}},
		{qgemm.ISAAVX2, false, []modeSpec{plain}},
	} {
		for _, m := range []modeSpec{sep, col, row, plain} {
			want := slices.ContainsFunc(c.offered, func(o modeSpec) bool { return o.name == m.name })
			if why := m.notOffered(c.isa, c.fused); (why == "") != want {
				t.Errorf("int8 on %v (fused %v): mode %s offered %v (%q), want %v", c.isa, c.fused, m.name, why == "", why, want)
			}
		}
	}
}

// TestFinishOrderEngine checks that EngineOptions.FinishOrder reaches the
// GEMM engine of an INT8 program (its Describe says so) and leaves the
// outputs' bits alone: the order changes when rows are normalised, not how.
func TestFinishOrderEngine(t *testing.T) {
	m, err := Load(Source{Config: "bert-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Quantize(QuantOptions{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	inputs, err := m.CheckInputs()
	if err != nil {
		t.Fatal(err)
	}
	var first map[string]*compiler.Tensor
	for _, o := range []qgemm.FinishOrder{qgemm.FinishByModel, qgemm.FinishColumnMajor, qgemm.FinishRowMajor} {
		e, err := NewINT8(m.Graph, EngineOptions{Threads: 2, FinishOrder: o})
		if err != nil {
			t.Fatal(err)
		}
		d := e.Describe()
		if forced := strings.Contains(d, "Options.FinishOrder"); forced != (o != qgemm.FinishByModel) || forced && !strings.Contains(d, o.String()+"-major") {
			t.Errorf("FinishOrder %v: Describe() = %q", o, d)
		}
		out, err := e.Run(inputs)
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = out
			continue
		}
		for name, x := range first {
			same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
			if len(x.F32) == 0 || !slices.EqualFunc(x.F32, out[name].F32, same) {
				t.Errorf("FinishOrder %v: output %s differs from the model's order", o, name)
			}
		}
	}
}

// checkModes fails unless w offers the modes want, in order, and each
// runs INT8 attention exactly when it is the mode other (the other
// attention precision) xor the worker's default, int8; INT8 attention
// writes the u8 input of the output projection itself
// (nn.AttentionInt8U8, passes.WriteU8Directly) in every mode, the one
// made by otherAttention too, and FP32 attention leaves it to a Quantize.
func checkModes(t *testing.T, w *Worker, want []string, other string, int8 bool) {
	t.Helper()
	var names []string
	for _, m := range w.Modes {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("modes %v, want %v", names, want)
	}
	for _, m := range w.Modes {
		listing := m.Engine.(*int8Engine).prog.String()
		int8Attn := strings.Contains(listing, "nn.AttentionInt8U8(")
		if int8Attn != ((m.Name == other) != int8) || strings.Contains(listing, "nn.AttentionInt8(") {
			t.Errorf("mode %s runs nn.AttentionInt8U8: %v\n%s", m.Name, int8Attn, listing)
		}
		if fp32Attn := strings.Contains(listing, "nn.Attention("); fp32Attn != !int8Attn || fp32Attn != strings.Contains(listing, "nn.QuantizeU8") {
			t.Errorf("mode %s runs FP32 attention %v, with its Quantize step %v\n%s", m.Name, fp32Attn, strings.Contains(listing, "nn.QuantizeU8"), listing)
		}
	}
}

// TestWorkerFP32Attention: a worker quantised with FP32 attention offers
// INT8 attention as its extra mode.
func TestWorkerFP32Attention(t *testing.T) {
	q := QuantOptions{}
	q.Passes.Attention = passes.AttentionFP32
	w, err := NewWorker(WorkerOptions{Source: Source{Config: "bert-tiny"}, Threads: 1, Quant: q})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	want := []string{ModeINT8}
	for _, v := range qgemm.Variants() {
		if v.ISA == qgemm.ISAVNNI {
			want = append(want, ModeINT8VNNI)
		}
	}
	checkModes(t, w, append(want, ModeINT8Attn8), ModeINT8Attn8, false)
}

func TestCosineAndAgreement(t *testing.T) {
	ref := map[string]*compiler.Tensor{
		"logits":            {DType: compiler.Float32, Shape: []int64{1, 2}, F32: []float32{1, -1}},
		"last_hidden_state": {DType: compiler.Float32, Shape: []int64{1, 1, 2}, F32: []float32{3, 4}},
	}
	got := map[string]*compiler.Tensor{
		"logits":            {DType: compiler.Float32, Shape: []int64{1, 2}, F32: []float32{1, -1.5}},
		"last_hidden_state": {DType: compiler.Float32, Shape: []int64{1, 1, 2}, F32: []float32{3, 4}},
	}
	a, err := Agreement(ref, got, "ref")
	if err != nil {
		t.Fatal(err)
	}
	if a["vs"] != "ref" || a["cos_hidden"] != 1.0 || a["max_abs_logits"] != 0.5 || a["cos_logits"].(float64) >= 1 {
		t.Errorf("Agreement = %v", a)
	}
	delete(got, "logits")
	if _, err := Agreement(ref, got, "ref"); err == nil {
		t.Error("Agreement accepted a missing output")
	}
}

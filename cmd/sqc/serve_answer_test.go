package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nlpodyssey/safetensors"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/internal/demomodel"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/serve"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// TestServeEngineQuestionAnswerer: the demo model read as a
// DistilBertForQuestionAnswering (its classifier's [2, dim] weight as
// qa_outputs, on every token) is served as a question answerer: /answer
// answers with spans of the context, in characters, whose text is the
// answer, the best first, over one window or several; other endpoints
// refuse it; and concurrent requests, their windows batched together, get
// the bytes a request alone gets.
func TestServeEngineQuestionAnswerer(t *testing.T) {
	model, calib := demoQuestionAnswerer(t)
	url := engineServer(t, model, calib, serve.QuestionAnswerer)
	const text = "a gorgeous, witty, seductive movie about Zoë in Zürich."
	runes := []rune(text)
	type answer struct {
		Score      float64 `json:"score"`
		Start, End int
		Answer     string `json:"answer"`
	}
	check := func(what string, as []answer, runes []rune) {
		t.Helper()
		if len(as) == 0 {
			t.Errorf("%s: no answers", what)
		}
		for k, a := range as {
			if !(a.Score > 0 && a.Score <= 1) || a.Start < 0 || a.Start >= a.End || a.End > len(runes) || string(runes[a.Start:a.End]) != a.Answer {
				t.Errorf("%s: answer %+v of %q", what, a, string(runes))
			}
			if k > 0 && a.Score > as[k-1].Score {
				t.Errorf("%s: answers not best first: %+v", what, as)
			}
		}
	}

	code, body := postJSON(t, url+"/answer", qaRequest("what is the movie about?", text, `{"top_k":3}`))
	var top []answer
	if err := json.Unmarshal(body, &top); code != 200 || err != nil || len(top) != 3 {
		t.Fatalf("/answer top_k 3: %d %s (%v)", code, body, err)
	}
	check("top_k 3", top, runes)
	code, body = postJSON(t, url+"/answer", qaRequest("what is the movie about?", text, ""))
	var one answer
	if err := json.Unmarshal(body, &one); code != 200 || err != nil {
		t.Fatalf("/answer: %d %s (%v)", code, body, err)
	}
	if one != top[0] {
		t.Errorf("top_k 1 answered %+v, top_k 3's best is %+v", one, top[0])
	}
	t.Logf("%q: %s", text, body)

	// A context of several windows of 24 tokens.
	long := strings.Join(strings.Split(strings.TrimSpace(demomodel.Calibration), "\n")[:6], " ")
	code, body = postJSON(t, url+"/answer", qaRequest("which movie?", long, `{"max_seq_len":24,"doc_stride":4,"top_k":5}`))
	var many []answer
	if err := json.Unmarshal(body, &many); code != 200 || err != nil {
		t.Fatalf("/answer, windows: %d %s (%v)", code, body, err)
	}
	check("windows", many, []rune(long))

	if code, body := post(t, url+"/embed", text); code != 424 || !strings.Contains(body, "not an embedding model") {
		t.Errorf("/embed on a question answerer: %d %s", code, body)
	}
	if code, body := postJSON(t, url+"/classify_tokens", `{"inputs":"a"}`); code != 424 {
		t.Errorf("/classify_tokens on a question answerer: %d %s", code, body)
	}
	answersMatchAlone(t, url+"/answer")
}

// qaRequest is an /answer request body.
func qaRequest(question, context, params string) string {
	in, _ := json.Marshal(map[string]string{"question": question, "context": context})
	if params == "" {
		return `{"inputs":` + string(in) + `}`
	}
	return `{"inputs":` + string(in) + `,"parameters":` + params + `}`
}

// answersMatchAlone sends questions about 12 texts (and a long text in
// small windows) one at a time, then three rounds of all of them at once:
// every concurrent answer must equal the lone one.
func answersMatchAlone(t *testing.T, url string) {
	texts := strings.Split(strings.TrimSpace(demomodel.Calibration), "\n")[:12]
	bodies := []string{qaRequest("what is it?", strings.Join(texts, " "), `{"max_seq_len":20,"doc_stride":3,"top_k":2}`)}
	for i, text := range texts {
		bodies = append(bodies, qaRequest([]string{"what is it?", "who?", "why is the film good?"}[i%3], text, ""))
	}
	alone := map[string]string{}
	for _, b := range bodies {
		code, out := postJSON(t, url, b)
		if code != 200 {
			t.Fatalf("%s: %d %s", b, code, out)
		}
		alone[b] = string(out)
	}
	var wg sync.WaitGroup
	for round := range 3 {
		for _, b := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if code, out := postJSON(t, url, b); code != 200 || string(out) != alone[b] {
					t.Errorf("round %d %s: %d %s; alone %s", round, b, code, out, alone[b])
				}
			}()
		}
	}
	wg.Wait()
}

// demoQuestionAnswerer is the demo model read as a
// DistilBertForQuestionAnswering: its config's architecture rewritten,
// and its classifier's weight and bias ([2, dim], [2]) copied to
// qa_outputs, so that its two logits of every token are the start's and
// the end's.
func demoQuestionAnswerer(t *testing.T) (model, calib string) {
	t.Helper()
	model, calib = demoAs(t, func(cfg map[string]any) { cfg["architectures"] = []string{"DistilBertForQuestionAnswering"} })
	stPath := filepath.Join(model, "model.safetensors")
	data, err := os.ReadFile(stPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := safetensors.Deserialize(data)
	if err != nil {
		t.Fatal(err)
	}
	views := map[string]safetensors.TensorView{}
	for _, nt := range st.Tensors() {
		views[nt.Name] = nt.TensorView
	}
	for _, p := range []string{"weight", "bias"} {
		v, ok := views["classifier."+p]
		if !ok {
			t.Fatalf("the demo model has no classifier.%s", p)
		}
		if views["qa_outputs."+p], err = safetensors.NewTensorView(v.DType(), v.Shape(), v.Data()); err != nil {
			t.Fatal(err)
		}
	}
	if data, err = safetensors.Serialize(views, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return model, calib
}

// TestEngineQuestionAnswererRun: the engine's Run gives each sequence of
// a batch its own start logits then its own end logits, cut to its
// length, as the program computes them for the sequence alone.
func TestServeEngineQuestionAnswererRun(t *testing.T) {
	model, calib := demoQuestionAnswerer(t)
	m, err := loadEngineModel(model, "", &int8Config{calibPath: calib, calibSamples: defaultCalibSamples, quant: passes.QuantOptions{Alpha: 0.5, Act: compiler.QLinearStatic}}, 2, 4, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Info().Kind != serve.QuestionAnswerer {
		t.Fatalf("kind %s", m.Info().Kind)
	}
	pairs := [][2]string{{"who?", "a gorgeous, witty, seductive movie"}, {"what is the film about and why?", "dull"}, {"why?", "the plot is a mess but the cast is lovely"}}
	var b modelrt.Batch
	for _, p := range pairs {
		e := m.Tokenizer().EncodePair(p[0], p[1])
		b.InputIDs, b.AttentionMask, b.TokenTypeIDs = append(b.InputIDs, e.InputIDs), append(b.AttentionMask, e.AttentionMask), append(b.TokenTypeIDs, e.TokenTypeIDs)
	}
	got, err := m.Run(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	for i, ids := range b.InputIDs {
		outs, err := m.prog.Run(feedsOf(m.q, []infer.Encoded{{IDs: ids, Mask: b.AttentionMask[i], TypeIDs: b.TokenTypeIDs[i]}}))
		if err != nil {
			t.Fatal(err)
		}
		want := append(append([]float32(nil), outs["start_logits"].F32...), outs["end_logits"].F32...)
		if len(want) != 2*len(ids) || !slices.Equal(got[i], want) {
			t.Errorf("sequence %d (%d tokens): Run gave %v, alone the program %v", i, len(ids), got[i], want)
		}
	}
}

// TestRunQuestionAnswering: `sqc run --texts` on a .tsv of question and
// context columns prints, per row, the best answer: modelrt.Answers over
// the row's windows, run through the FP32 interpreter, in characters of
// the context; a question too long for any window is a bad-input error
// naming the file and line.
func TestRunQuestionAnswering(t *testing.T) {
	model, _ := demoQuestionAnswerer(t)
	long := strings.Repeat("the quiet film lingers long after the lights come up, and its score stays with you. ", 30)
	rows := [][2]string{{"what lingers?", long}, {"who is zoë?", "zoë is a director from zürich."}, {"why?", ""}}
	lines := []string{"question\tcontext"}
	for _, r := range rows {
		lines = append(lines, r[0]+"\t"+r[1])
	}
	file := writeLines(t, "qa.tsv", lines)
	code, stdout, stderr := runCLI(t, "run", "--model", model, "--fp32", "--texts", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	out := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(out) != len(rows) {
		t.Fatalf("%d lines for %d rows:\n%s", len(out), len(rows), stdout)
	}
	g, err := frontend.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	it, err := interp.New(g)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		var got modelrt.PipelineAnswer
		if err := json.Unmarshal([]byte(out[i]), &got); err != nil {
			t.Fatalf("row %d: %v: %s", i, err, out[i])
		}
		o := modelrt.QAOptions{}.Defaults(tok.MaxLength())
		windows, err := tok.EncodePairWindows(r[0], r[1], o.MaxSeqLen, o.DocStride)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && len(windows) < 2 {
			t.Errorf("%d windows for a context of %d bytes", len(windows), len(r[1]))
		}
		var starts, ends [][]float32
		for _, w := range windows {
			res, err := infer.Run(context.Background(), g, infer.Interpreter(it.Run), []infer.Encoded{{IDs: w.InputIDs, Mask: w.AttentionMask, TypeIDs: w.TokenTypeIDs}}, infer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			starts, ends = append(starts, res[0]["start_logits"].F32), append(ends, res[0]["end_logits"].F32)
		}
		want := modelrt.PipelineAnswer{}
		if a := modelrt.Answers(windows, starts, ends, modelrt.QAOptions{}); len(a) > 0 {
			span := tokenizer.CharOffsets(r[1], []tokenizer.Offset{{Start: a[0].Start, End: a[0].End}})[0]
			want = modelrt.PipelineAnswer{Score: a[0].Score, Start: span.Start, End: span.End, Answer: r[1][a[0].Start:a[0].End]}
		}
		if got != want {
			t.Errorf("row %d: got %+v, want %+v", i, got, want)
		}
		if runes := []rune(r[1]); got.End > len(runes) || string(runes[got.Start:got.End]) != got.Answer {
			t.Errorf("row %d: answer %q is not the context's characters %d-%d", i, got.Answer, got.Start, got.End)
		}
	}
	bad := writeLines(t, "bad.tsv", []string{"question\tcontext", strings.Repeat("why ", 600) + "\tshort"})
	if code, _, stderr := runCLI(t, "run", "--model", model, "--fp32", "--texts", bad); code != 2 || !strings.Contains(stderr, "bad.tsv") || !strings.Contains(stderr, "line 2") {
		t.Errorf("a question longer than a window: exit %d, %s", code, stderr)
	}
}

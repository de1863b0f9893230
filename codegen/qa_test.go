package codegen

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/internal/gentest"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// questionAnswererMain runs the generated package m's Answer on the
// question, text and options of qa.json and prints the answers as JSON.
const questionAnswererMain = `package main

import (
	"context"
	"encoding/json"
	"os"

	"sqcgentest/m"
)

func main() {
	var in []struct {
		Question, Text string
		Opts           m.QAOptions
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(data, &in); err != nil {
		panic(err)
	}
	model, err := m.New()
	if err != nil {
		panic(err)
	}
	var out [][]m.Answer
	for _, q := range in {
		a, err := model.Answer(context.Background(), q.Question, q.Text, q.Opts)
		if err != nil {
			panic(err)
		}
		out = append(out, a)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
`

// TestQuestionAnsweringPackage generates the package of a
// BertForQuestionAnswering (random weights): it gets Answer (not Embed),
// and its answers, from windows of a long text run together, are what
// modelrt.Answers gives from compiler/exec's logits for each window run
// alone.
func TestQuestionAnsweringPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a generated package")
	}
	g, prog, opts, pkg := randomTaskPackage(t, hf.ArchBertForQA, []string{"LABEL_0", "LABEL_1"}, 13, 3)
	model := string(pkg.Files["model.go"])
	for _, want := range []string{"func (m *Model) Answer(", "modelrt.SupportVersion5", "StartLogits [][]float32"} {
		if !strings.Contains(model, want) {
			t.Errorf("model.go lacks %q", want)
		}
	}
	if strings.Contains(model, "func (m *Model) Embed(") {
		t.Error("a question answering model got Embed")
	}

	tok, err := tokenizer.FromSource(opts.Tokenizer)
	if err != nil {
		t.Fatal(err)
	}
	text := "The film premiered in Zürich in 1998. Its director, Wolfgang Becker, had studied in Berlin, " +
		"and the score was written by a composer from Vienna who later moved to Lisbon."
	type query struct {
		Question, Text string
		Opts           modelrt.QAOptions
	}
	queries := []query{
		{"Where did the film premiere?", text, modelrt.QAOptions{MaxSeqLen: 24, DocStride: 8, TopK: 3}},
		{"Who wrote the score?", text, modelrt.QAOptions{MaxSeqLen: 32, DocStride: 12, TopK: 2, HandleImpossible: true, TokenSpans: true}},
		{"When?", "In 1998.", modelrt.QAOptions{}},
	}
	var want [][]modelrt.Answer
	for _, q := range queries {
		o := q.Opts.Defaults(opts.MaxSeq)
		windows, err := tok.EncodePairWindows(q.Question, q.Text, o.MaxSeqLen, o.DocStride)
		if err != nil {
			t.Fatal(err)
		}
		var starts, ends [][]float32
		for _, w := range windows {
			res, err := infer.Run(context.Background(), g, infer.ExecutorFunc(prog.Run), []infer.Encoded{{IDs: w.InputIDs, Mask: w.AttentionMask, TypeIDs: w.TokenTypeIDs}}, infer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			starts, ends = append(starts, res[0]["start_logits"].F32), append(ends, res[0]["end_logits"].F32)
		}
		if q.Opts.MaxSeqLen == 24 && len(windows) < 3 {
			t.Fatalf("%d windows of 24 tokens: the text should need several", len(windows))
		}
		want = append(want, modelrt.Answers(windows, starts, ends, q.Opts))
	}
	mod := gentest.Module(t)
	if err := Write(gentest.PackageDir(mod), pkg); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(queries)
	if err := os.WriteFile(filepath.Join(mod, "qa.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var got [][]modelrt.Answer
	if err := json.Unmarshal(gentest.Run(t, mod, questionAnswererMain, "qa.json"), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Answer:\n got %+v\nwant %+v", got, want)
	}
	for i, a := range want {
		for _, x := range a {
			t.Logf("%q: %q (%.4g)", queries[i].Question, queries[i].Text[x.Start:x.End], x.Score)
		}
	}
}

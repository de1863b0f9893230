package codegen

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	sqcexec "github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// encoderProgram is bert-tiny without a classifier head, random weights,
// dynamic quantisation.
func encoderProgram(t *testing.T) *sqcexec.Program {
	t.Helper()
	cfg, err := hf.Preset("bert-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Architecture, cfg.Labels = hf.ArchBertModel, nil
	g, err := hf.Build(cfg, hf.RandomWeights(7))
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := passes.Run(g, passes.QuantPipeline(nil, passes.QuantOptions{Act: compiler.QLinearDynamic}), passes.Options{}); err != nil {
		t.Fatal(err)
	}
	prog, err := sqcexec.Compile(g, sqcexec.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prog.Close)
	return prog
}

func TestGenerateEmbeddingHead(t *testing.T) {
	prog := encoderProgram(t)
	opts := demoOptions(t)
	opts.Package, opts.Labels = "m", nil
	opts.Head = Head{
		Embedding: &modelrt.EmbeddingHead{
			Pooling:   []modelrt.PoolingMode{modelrt.PoolCLS, modelrt.PoolMean},
			Dense:     []modelrt.Dense{{In: 256, Out: 4, Weight: make([]float32, 4*256), Activation: modelrt.ActTanh}},
			Normalize: true,
		},
		Prompts: map[string]string{"query": "query: "}, DefaultPrompt: "query",
	}
	a, err := Generate(prog.Schedule, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(prog.Schedule, opts)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range a.Files {
		if !bytes.Equal(data, b.Files[name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
	model, weights := string(a.Files["model.go"]), string(a.Files["weights.go"])
	for _, want := range []string{"modelrt.SupportVersion3", "func (m *Model) EmbedWithPrompt(", "EmbeddingDim = 4", `"query": "query: "`, "cls + mean pooling, Dense 256 -> 4 (tanh), L2 normalisation"} {
		if !strings.Contains(model, want) {
			t.Errorf("model.go lacks %q", want)
		}
	}
	if !strings.Contains(weights, "dense0Weight") || !strings.Contains(weights, "Normalize: true") || strings.Contains(weights, "dense0Bias") {
		t.Errorf("weights.go: Dense weights without bias and Normalize expected:\n%s", weights)
	}

	// Without a head: mean pooling and the runtime version of before.
	opts.Head = Head{}
	plain, err := Generate(prog.Schedule, opts)
	if err != nil {
		t.Fatal(err)
	}
	if m := string(plain.Files["model.go"]); strings.Contains(m, "SupportVersion3") || !strings.Contains(m, "modelrt.MeanPool") {
		t.Error("a package without a head changed")
	}

	for name, h := range map[string]Head{
		"dense width": {Embedding: &modelrt.EmbeddingHead{Pooling: []modelrt.PoolingMode{modelrt.PoolMean}, Dense: []modelrt.Dense{{In: 256, Out: 1, Weight: make([]float32, 256), Activation: modelrt.ActTanh}}}},
		"prompt":      {Embedding: &modelrt.EmbeddingHead{Pooling: []modelrt.PoolingMode{modelrt.PoolMean}}, DefaultPrompt: "query"},
		"scoring":     {Scoring: modelrt.ActSigmoid},
	} {
		opts.Head = h
		if _, err := Generate(prog.Schedule, opts); err == nil {
			t.Errorf("%s: a head that does not fit was accepted", name)
		}
	}
}

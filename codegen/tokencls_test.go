package codegen

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	sqcexec "github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/internal/gentest"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// tokenClassifierMain runs the generated package m's TagTokens and
// Entities on the texts of texts.json and prints both as JSON.
const tokenClassifierMain = `package main

import (
	"context"
	"encoding/json"
	"os"

	"sqcgentest/m"
)

func main() {
	var texts []string
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(data, &texts); err != nil {
		panic(err)
	}
	model, err := m.New()
	if err != nil {
		panic(err)
	}
	tags, err := model.TagTokens(context.Background(), texts)
	if err != nil {
		panic(err)
	}
	ents, err := model.Entities(context.Background(), texts)
	if err != nil {
		panic(err)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"tags": tags, "entities": ents})
}
`

// TestTokenClassifierPackage generates the package of a
// BertForTokenClassification (random weights, nine IOB labels): it gets
// TagTokens and Entities (not Classify or Embed), and their answers on
// texts batched together are what compiler/exec's logits for each text
// alone give through modelrt.TagTokens and GroupEntities, scores bit for
// bit, spans in bytes of the text.
func TestTokenClassifierPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a generated package")
	}
	labels := []string{"O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"}
	g, prog, opts, pkg := randomTaskPackage(t, hf.ArchBertForToken, labels, 11, 2)
	model := string(pkg.Files["model.go"])
	for _, want := range []string{"func (m *Model) TagTokens(", "func (m *Model) Entities(", "func Labels() []string", "NumLabels = 9", "modelrt.SupportVersion4"} {
		if !strings.Contains(model, want) {
			t.Errorf("model.go lacks %q", want)
		}
	}
	for _, not := range []string{"func (m *Model) Classify(", "func (m *Model) Embed("} {
		if strings.Contains(model, not) {
			t.Errorf("a token classifier got %q", not)
		}
	}

	tok, err := tokenizer.FromSource(opts.Tokenizer)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"Zoë Müller lives in Zürich and works for the United Nations.", "no", "", "Angela Merkel met Emmanuel Macron in Paris on Tuesday."}
	var wantTags [][]modelrt.TokenPrediction
	var wantEnts [][]modelrt.Entity
	prefix, suffix := modelrt.TemplateTokens(tok)
	for _, text := range texts {
		e := tok.EncodeWithOffsets(text)
		res, err := infer.Run(context.Background(), g, infer.ExecutorFunc(prog.Run), []infer.Encoded{{IDs: e.InputIDs, Mask: e.AttentionMask, TypeIDs: e.TokenTypeIDs}}, infer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tags := modelrt.TagTokens(res[0]["logits"].F32, len(labels), labels, e.Offsets, prefix, len(e.InputIDs)-suffix)
		wantTags = append(wantTags, tags)
		wantEnts = append(wantEnts, modelrt.GroupEntities(tags))
	}
	mod := gentest.Module(t)
	if err := Write(gentest.PackageDir(mod), pkg); err != nil {
		t.Fatal(err)
	}
	tx, _ := json.Marshal(texts)
	if err := os.WriteFile(filepath.Join(mod, "texts.json"), tx, 0o644); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tags     [][]modelrt.TokenPrediction
		Entities [][]modelrt.Entity
	}
	if err := json.Unmarshal(gentest.Run(t, mod, tokenClassifierMain, "texts.json"), &got); err != nil {
		t.Fatal(err)
	}
	entities := 0
	for i := range texts {
		if !reflect.DeepEqual(got.Tags[i], wantTags[i]) && !(len(got.Tags[i]) == 0 && len(wantTags[i]) == 0) {
			t.Errorf("TagTokens(%q):\n got %+v\nwant %+v", texts[i], got.Tags[i], wantTags[i])
		}
		if !reflect.DeepEqual(got.Entities[i], wantEnts[i]) && !(len(got.Entities[i]) == 0 && len(wantEnts[i]) == 0) {
			t.Errorf("Entities(%q):\n got %+v\nwant %+v", texts[i], got.Entities[i], wantEnts[i])
		}
		entities += len(wantEnts[i])
	}
	if n := len(wantTags[0]); n < 10 {
		t.Errorf("%d tags for %q: the template's tokens only?", n, texts[0])
	}
	t.Logf("%d texts: tags and %d entities as exec's logits give them", len(texts), entities)
}

// randomTaskPackage builds BERT-tiny as arch with random weights (seed),
// dynamic INT8, and the package of its program for the demo tokenizer
// (MaxBatch maxBatch); the program is closed when the test ends.
func randomTaskPackage(t *testing.T, arch string, labels []string, seed uint64, maxBatch int) (*compiler.Graph, *sqcexec.Program, Options, *Package) {
	t.Helper()
	cfg, err := hf.Preset("bert-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Architecture, cfg.Labels = arch, labels
	g, err := hf.Build(cfg, hf.RandomWeights(seed))
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := passes.Run(g, passes.QuantPipeline(nil, passes.QuantOptions{Act: compiler.QLinearDynamic}), passes.Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	prog, err := sqcexec.Compile(g, sqcexec.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prog.Close)
	opts := demoOptions(t)
	opts.Package, opts.ModelName, opts.Labels, opts.MaxBatch = "m", "bert-tiny-"+arch+"-random", labels, maxBatch
	if arch == hf.ArchBertForQA {
		opts.Labels = nil // no class names: start and end
	}
	pkg, err := Generate(prog.Schedule, opts)
	if err != nil {
		t.Fatal(err)
	}
	return g, prog, opts, pkg
}

package codegen

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	sqcexec "github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/internal/gentest"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// tinyMain runs the generated package m on the batch of batch.json and
// prints its Outputs as JSON (float32 values round-trip exactly).
const tinyMain = `package main

import (
	"context"
	"encoding/json"
	"os"

	"sqcgentest/m"
)

func main() {
	var b m.Batch
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(data, &b); err != nil {
		panic(err)
	}
	model, err := m.New()
	if err != nil {
		panic(err)
	}
	out, err := model.Run(context.Background(), b)
	if err != nil {
		panic(err)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
`

// TestTinyModelsCompile compiles every committed tiny model of every
// family (internal/testmodels: BERT, DistilBERT, RoBERTa, XLM-RoBERTa,
// CamemBERT, ELECTRA, MPNet, ModernBERT, as
// torch.onnx.export wrote them and as HuggingFace folders), with dynamic
// INT8, builds the generated package and requires its outputs to equal
// the in-process engine's bit for bit on the model's reference batch, of
// mixed lengths, which both run padding-free. A
// model the engine cannot run must fail to compile alike, with an error
// naming the op, the node and the model file.
func TestTinyModelsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated packages")
	}
	for _, name := range testmodels.TinyModels {
		dir := testmodels.TinyDir(t, name)
		// Every one packs, question answerers too: their start and end
		// columns are squeezed by generic steps along trailing axes.
		for _, path := range []string{filepath.Join(dir, "model.onnx"), dir} {
			t.Run(name+"/"+filepath.Base(path), func(t *testing.T) { testTinyModel(t, dir, path, "") })
		}
	}
}

// TestTinyDeBERTaCompiles is TestTinyModelsCompile on the DeBERTa models,
// from their folders and their ONNX exports: they run packed, relative
// terms included, but the classifier's embed_proj, which comes before its
// LayerNorm, keeps its embeddings from fusing and its batches padded.
func TestTinyDeBERTaCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated packages")
	}
	for name, paddedBy := range map[string]string{
		testmodels.TinyDeBERTaBase: "",
		testmodels.TinyDeBERTaCls:  "no fused embedding step",
		testmodels.TinyDeBERTaC2P:  "",
		testmodels.TinyDeBERTaAbs:  "",
		// v1: its export does not lower (testTinyModel skips it).
		testmodels.TinyDeBERTaV1Base: "",
		testmodels.TinyDeBERTaV1Cls:  "",
	} {
		dir := testmodels.TinyDir(t, name)
		for _, path := range []string{filepath.Join(dir, "model.onnx"), dir} {
			t.Run(name+"/"+filepath.Base(path), func(t *testing.T) { testTinyModel(t, dir, path, paddedBy) })
		}
	}
}

// testTinyModel compiles the model at path (a tiny model's file or folder,
// dir) and compares the generated package with the engine; paddedBy
// names the step that keeps the schedule from packing ("": it packs).
func testTinyModel(t *testing.T, dir, path, paddedBy string) {
	g, err := frontend.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := passes.Run(g, passes.QuantPipeline(nil, passes.QuantOptions{Act: compiler.QLinearDynamic}), passes.Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	s, err := sqcexec.Lower(g)
	if errors.Is(err, compiler.ErrUnsupportedOp) {
		// Then the engine cannot run it either; the error says where.
		if !strings.Contains(err.Error(), filepath.Base(path)) && !strings.Contains(err.Error(), "node") {
			t.Errorf("error %q names neither the model file nor the node", err)
		}
		t.Skipf("not runnable in INT8, by the engine or a generated package: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ref, err := testmodels.LoadModelReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b modelrt.Batch
	in := map[string]*compiler.Tensor{}
	for _, v := range g.Inputs {
		x := ref.Inputs[v.Name]
		if x == nil {
			t.Fatalf("reference has no input %q", v.Name)
		}
		in[v.Name] = x
		rows, cols := int(x.Shape[0]), int(x.Shape[1])
		for r := range rows {
			row := x.I64[r*cols : (r+1)*cols]
			switch v.Name {
			case "input_ids":
				b.InputIDs = append(b.InputIDs, row)
			case "attention_mask":
				b.AttentionMask = append(b.AttentionMask, row)
			case "token_type_ids":
				b.TokenTypeIDs = append(b.TokenTypeIDs, row)
			}
		}
	}
	// Every family runs padding-free batches (MPNet's position bias
	// included), and the reference batch has padded rows: the packed
	// path of the generated package is what is compared.
	switch r := s.PackingReason(); {
	case paddedBy == "" && r != "":
		t.Fatalf("schedule runs batches padded: %s", r)
	case paddedBy != "" && !strings.Contains(r, paddedBy):
		t.Fatalf("schedule packing reason %q, want one naming %s", r, paddedBy)
	}
	if !slices.ContainsFunc(b.AttentionMask, func(row []int64) bool { return slices.Contains(row, 0) }) {
		t.Fatal("the reference batch has no padding")
	}
	pkg, err := Generate(s, Options{Package: "m", ModelName: filepath.Base(dir), MaxBatch: len(b.InputIDs), MaxSeq: len(b.InputIDs[0])})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sqcexec.NewProgram(s, sqcexec.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want, err := p.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	mod := gentest.Module(t)
	if err := Write(gentest.PackageDir(mod), pkg); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(b)
	if err := os.WriteFile(filepath.Join(mod, "batch.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var got map[string][][]float32
	if err := json.Unmarshal(gentest.Run(t, mod, tinyMain, "batch.json"), &got); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, v := range g.Outputs {
		field := goName(v.Name, true, used)
		rows, ok := got[field]
		if !ok {
			t.Fatalf("generated Outputs lack %s (have %v)", field, reflect.ValueOf(got).MapKeys())
		}
		var flat []float32
		for _, r := range rows {
			flat = append(flat, r...)
		}
		w := want[v.Name].F32
		if len(flat) != len(w) {
			t.Fatalf("%s: %d values, exec %d", v.Name, len(flat), len(w))
		}
		for i := range w {
			if math.Float32bits(flat[i]) != math.Float32bits(w[i]) {
				t.Fatalf("%s[%d]: generated %g, exec %g", v.Name, i, flat[i], w[i])
			}
		}
	}
	generic := 0
	for _, st := range s.Steps() {
		if _, ok := st.(*sqcexec.OpStep); ok {
			generic++
		}
	}
	t.Logf("%d steps (%d generic): generated package bit-identical to exec on %d sequences", len(s.Steps()), generic, len(b.InputIDs))
}

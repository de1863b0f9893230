package codegen

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	sqcexec "github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/internal/gentest"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/qgemm"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// encoderMain runs the generated package m on the sequences of inputs.json
// (Run) and on the texts of texts.json (Embed) and prints every output
// value's bits as JSON.
const encoderMain = `package main

import (
	"context"
	"encoding/json"
	"math"
	"os"

	"sqcgentest/m"
)

func bits(rows [][]float32) [][]uint32 {
	out := make([][]uint32, len(rows))
	for i, r := range rows {
		for _, v := range r {
			out[i] = append(out[i], math.Float32bits(v))
		}
	}
	return out
}

func main() {
	var b m.Batch
	var texts []string
	for i, dst := range []any{&b, &texts} {
		data, err := os.ReadFile(os.Args[1+i])
		if err != nil {
			panic(err)
		}
		if err := json.Unmarshal(data, dst); err != nil {
			panic(err)
		}
	}
	model, err := m.New()
	if err != nil {
		panic(err)
	}
	out, err := model.Run(context.Background(), b)
	if err != nil {
		panic(err)
	}
	emb, err := model.Embed(context.Background(), texts)
	if err != nil {
		panic(err)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"hidden": bits(out.LastHiddenState), "pooler": bits(out.PoolerOutput), "embed": bits(emb)})
}
`

// TestEncoderPackageMatchesExec generates the package of a BertModel (no
// classifier head: outputs last_hidden_state [batch, seq, H] and
// pooler_output [batch, H], token type ids) with random weights and
// dynamic quantisation, runs it on sequences of mixed lengths in more
// chunks than one, and compares with compiler/exec bit for bit; Embed must
// be the mean of the hidden states of each text's tokens. It does so with
// the erf-GELU FFN, a tanh-GELU one and a ReLU one (each fused into the
// GEMM epilogue: qgemm.ActGelu, ActGeluTanh, ActRelu).
func TestEncoderPackageMatchesExec(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a generated package")
	}
	for _, c := range []struct {
		hidden string // config.json's hidden_act
		act    string // the GEMM epilogue's act, qgemm.Act's String
		code   string // its Go name in schedule.go
		attn   string // passes.QuantOptions.Attention
	}{
		{hf.ActGELU, "gelu", "qgemm.ActGelu", passes.AttentionFP32},
		{hf.ActGELUNew, "gelu_tanh", "qgemm.ActGeluTanh", passes.AttentionFP32},
		{hf.ActRELU, "relu", "qgemm.ActRelu", passes.AttentionFP32},
		{hf.ActGELU, "gelu", "qgemm.ActGelu", passes.AttentionINT8},
	} {
		t.Run(c.hidden+"/"+c.attn, func(t *testing.T) { testEncoderPackage(t, c.hidden, c.act, c.code, c.attn) })
	}
}

func testEncoderPackage(t *testing.T, hidden, act, code, attn string) {
	cfg, err := hf.Preset("bert-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Architecture, cfg.Labels, cfg.HiddenAct = hf.ArchBertModel, nil, hidden
	g, err := hf.Build(cfg, hf.RandomWeights(7))
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		t.Fatal(err)
	}
	// QuantPipeline fuses as `sqc compile` does: one QKV GEMM per layer read
	// by a packed attention, GELU and residuals in the GEMM epilogues.
	if err := passes.Run(g, passes.QuantPipeline(nil, passes.QuantOptions{Act: compiler.QLinearDynamic, Attention: attn}), passes.Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	prog, err := sqcexec.Compile(g, sqcexec.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if !strings.Contains(prog.String(), "act="+act) {
		t.Fatalf("no GEMM has the %s epilogue:\n%s", act, prog)
	}
	opts := demoOptions(t)
	opts.Package, opts.ModelName, opts.Labels, opts.MaxBatch = "m", "bert-tiny-random", nil, 2
	pkg, err := Generate(prog.Schedule, opts)
	if err != nil {
		t.Fatal(err)
	}
	if wantInt8 := attn == passes.AttentionINT8; strings.Contains(string(pkg.Files["schedule.go"]), "nn.AttentionInt8") != wantInt8 {
		t.Fatalf("schedule.go calls nn.AttentionInt8: %v, want %v", !wantInt8, wantInt8)
	}
	if !strings.Contains(string(pkg.Files["weights.go"]), code) { // the layers' qgemm.Linear
		t.Fatalf("weights.go lacks %s", code)
	}
	for _, want := range []string{"func (m *Model) Embed(", "PoolerOutput [][]float32", "LastHiddenState [][]float32"} {
		if !strings.Contains(string(pkg.Files["model.go"]), want) {
			t.Fatalf("model.go lacks %q", want)
		}
	}
	if strings.Contains(string(pkg.Files["model.go"]), "func (m *Model) Classify(") {
		t.Fatal("an encoder without labels got Classify")
	}

	mod := gentest.Module(t)
	if err := Write(gentest.PackageDir(mod), pkg); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromSource(opts.Tokenizer)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"the film is a quiet triumph", "no", "an overlong, self-important mess that mistakes volume for depth", "fine"}
	var b modelrt.Batch
	var enc []infer.Encoded
	for i, text := range texts {
		e := tok.EncodePair(text, texts[(i+1)%len(texts)]) // token types 0 and 1
		b.InputIDs = append(b.InputIDs, e.InputIDs)
		b.AttentionMask = append(b.AttentionMask, e.AttentionMask)
		b.TokenTypeIDs = append(b.TokenTypeIDs, e.TokenTypeIDs)
		enc = append(enc, infer.Encoded{IDs: e.InputIDs, Mask: e.AttentionMask, TypeIDs: e.TokenTypeIDs})
	}
	in, _ := json.Marshal(b)
	tx, _ := json.Marshal(texts)
	for name, data := range map[string][]byte{"inputs.json": in, "texts.json": tx} {
		if err := os.WriteFile(filepath.Join(mod, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := infer.Run(context.Background(), g, infer.ExecutorFunc(prog.Run), enc, infer.Options{BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Exec's Embed: each text alone ([CLS] text [SEP]), mean-pooled.
	wantEmbed := make([][]float32, len(texts))
	for i, text := range texts {
		alone := tok.Encode(text)
		res, err := infer.Run(context.Background(), g, infer.ExecutorFunc(prog.Run), []infer.Encoded{{IDs: alone.InputIDs, Mask: alone.AttentionMask, TypeIDs: alone.TokenTypeIDs}}, infer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		wantEmbed[i] = modelrt.MeanPool(res[0]["last_hidden_state"].F32, cfg.HiddenSize, alone.AttentionMask)
	}
	// The generated package on this CPU's kernels, then with SQC_ISA =
	// amx-emulated (the AMX code paths, where the CPU can emulate them).
	isas := []string{""}
	if _, ok := qgemm.EmulatedAMX(); ok {
		isas = append(isas, qgemm.ISAEmulatedAMX)
	}
	for _, isa := range isas {
		t.Setenv(qgemm.EnvISA, isa)
		out := gentest.Run(t, mod, encoderMain, "inputs.json", "texts.json")
		var got struct{ Hidden, Pooler, Embed [][]uint32 }
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Hidden) != len(texts) || len(got.Pooler) != len(texts) || len(got.Embed) != len(texts) {
			t.Fatalf("%s=%q: %d, %d, %d results for %d inputs", qgemm.EnvISA, isa, len(got.Hidden), len(got.Pooler), len(got.Embed), len(texts))
		}
		for i := range texts {
			sameBits(t, qgemm.EnvISA+"="+isa+": last_hidden_state", i, got.Hidden[i], want[i]["last_hidden_state"].F32)
			sameBits(t, qgemm.EnvISA+"="+isa+": pooler_output", i, got.Pooler[i], want[i]["pooler_output"].F32)
			sameBits(t, qgemm.EnvISA+"="+isa+": Embed", i, got.Embed[i], wantEmbed[i])
		}
	}
	lens := make([]int, len(texts))
	for i, ids := range b.InputIDs {
		lens[i] = len(ids)
	}
	t.Logf("%d sequences of %v tokens in chunks of %d, SQC_ISA %q: last_hidden_state, pooler_output and Embed bit-identical to compiler/exec",
		len(texts), lens, opts.MaxBatch, isas)
}

// sameBits fails the test unless the generated package's values (their
// float32 bits) are exec's vals, for input i.
func sameBits(t *testing.T, what string, i int, bits []uint32, vals []float32) {
	t.Helper()
	if len(bits) != len(vals) {
		t.Fatalf("%s of input %d: %d values, want %d", what, i, len(bits), len(vals))
	}
	for j, v := range vals {
		if bits[j] != math.Float32bits(v) {
			t.Fatalf("%s of input %d, value %d: generated %g, exec %g", what, i, j, math.Float32frombits(bits[j]), v)
		}
	}
}

package bench

import (
	"errors"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

func TestConfigs(t *testing.T) {
	c, err := Config("minilm-l6")
	if err != nil {
		t.Fatal(err)
	}
	if c.NumLayers != 6 || c.HiddenSize != 384 || c.NumHeads != 12 || c.IntermediateSize != 1536 || c.VocabSize != 30522 {
		t.Errorf("minilm-l6 = %+v", c)
	}
	// The peer harness's shapes (model.py CONFIGS).
	for name, want := range map[string][4]int{
		"bert-base": {12, 768, 12, 3072}, "bert-large": {24, 1024, 16, 4096},
		"distilbert": {6, 768, 12, 3072}, "minilm-l6": {6, 384, 12, 1536},
	} {
		c, err := Config(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := [4]int{c.NumLayers, c.HiddenSize, c.NumHeads, c.IntermediateSize}; got != want {
			t.Errorf("%s: layers/hidden/heads/ffn %v, want %v", name, got, want)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if !c.IsClassifier() {
			t.Errorf("%s is not a classifier (the harness's models have a head)", name)
		}
	}
	for _, n := range []string{"bert-base", "distilbert", "minilm-l6", "bert-tiny", "distilbert-base"} {
		if !slices.Contains(ConfigNames(), n) {
			t.Errorf("ConfigNames lacks %s", n)
		}
	}
	_, err = Config("gpt-5")
	if !errors.Is(err, compiler.ErrBadInput) || !errors.Is(err, compiler.ErrUnknownModel) {
		t.Errorf("unknown name: %v, want ErrBadInput and ErrUnknownModel", err)
	}
}

func TestSourceValidate(t *testing.T) {
	if (Source{}).Validate() == nil || (Source{Model: "m.onnx", Config: "bert-base"}).Validate() == nil {
		t.Error("Validate accepted neither or both of Model and Config")
	}
	if err := (Source{Config: "bert-tiny"}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestLoadAndInputs(t *testing.T) {
	m, err := Load(Source{Config: "bert-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Vocab != 30522 || m.MaxSeq != 512 || !m.Random || m.Seed != DefaultSeed {
		t.Errorf("model %s: vocab %d, max seq %d, random %v, seed %d", m.Name, m.Vocab, m.MaxSeq, m.Random, m.Seed)
	}
	if !m.Graph.IsOutput(HiddenOutput) || !m.Graph.IsOutput("logits") {
		t.Errorf("outputs %v, want logits and %s (the peers return both)", m.Graph.Outputs, HiddenOutput)
	}
	if h := m.Graph.Meta; h["hidden_size"] != "128" {
		t.Errorf("bert-tiny hidden size %q", h["hidden_size"])
	}
	in, err := m.Inputs(3, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	ids, mask, types := in[InputIDs], in[AttentionMask], in[TokenTypeIDs]
	if ids == nil || mask == nil || types == nil || !slices.Equal(ids.Shape, []int64{3, 10}) {
		t.Fatalf("inputs %v", in)
	}
	for b := 0; b < 3; b++ {
		if ids.I64[b*10] != clsID {
			t.Errorf("sequence %d starts with %d, want [CLS]", b, ids.I64[b*10])
		}
	}
	for i, id := range ids.I64 {
		if i%10 != 0 && (id < firstRandomID || id >= 30522) {
			t.Errorf("token id %d out of [%d, 30522)", id, firstRandomID)
		}
		if mask.I64[i] != 1 || types.I64[i] != 0 {
			t.Errorf("mask %d, type %d at %d", mask.I64[i], types.I64[i], i)
		}
	}
	again, _ := m.Inputs(3, 10, 1)
	if !slices.Equal(again[InputIDs].I64, ids.I64) {
		t.Error("Inputs is not deterministic for one seed")
	}
	if _, err := m.Inputs(0, 10, 1); err == nil {
		t.Error("Inputs accepted batch 0")
	}
}

// TestQuantizedEnginesAgree runs the whole INT8 flow on a tiny shape:
// calibration on random ids, QuantPipeline, compile with compiler/exec,
// and checks that the INT8 logits follow the FP32 ones.
func TestQuantizedEnginesAgree(t *testing.T) {
	m, err := Load(Source{Config: "bert-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	in, err := m.CheckInputs()
	if err != nil {
		t.Fatal(err)
	}
	if mask := in[AttentionMask].I64; mask[128+63] != 1 || mask[128+64] != 0 || mask[127] != 1 {
		t.Error("check inputs: the second row must be padded from position 64")
	}
	fp32, err := NewFP32(m.Graph, EngineOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := fp32.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	compiler.ZeroMaskedTokens(ref, in["attention_mask"]) // zero in the engine's (packed) outputs
	info, err := m.Quantize(QuantOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Q, K, V, output, FFN in and out in each of 2 layers; the pooler and
	// classifier (rank-2 inputs) stay FP32.
	if info.QLinears != 6*2 || info.KeptFP32 != 2 || info.CalibSequences != DefaultCalibSequences {
		t.Errorf("quantisation %+v: want 12 QLinears, 2 kept FP32", info)
	}
	int8, err := NewINT8(m.Graph, EngineOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer int8.Close()
	got, err := int8.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := Agreement(ref, got, "fp32")
	if err != nil {
		t.Fatal(err)
	}
	if cos := acc["cos_logits"].(float64); cos < 0.99 {
		t.Errorf("INT8 vs FP32 logits cosine %.4f < 0.99 (%v)", cos, acc)
	}
	if cos, _ := acc["cos_hidden"].(float64); cos < 0.99 {
		t.Errorf("INT8 vs FP32 hidden-state cosine %.4f < 0.99 (%v)", cos, acc)
	}
	if hs := got[HiddenOutput].Shape; len(hs) != 3 || hs[0] != 2 || hs[1] != 128 || hs[2] != 128 {
		t.Errorf("hidden state shape %v, want [2 128 128]", hs)
	}
	if _, err := NewINT8(m.Graph, EngineOptions{ISA: "sse9"}); err == nil {
		t.Error("NewINT8 accepted ISA sse9")
	}
}

package hf

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestJinaMaskedLMCheckpoint: jina-embeddings-v2 publishes its config as
// JinaBertForMaskedLM; such a checkpoint (the encoder under "bert.", no
// pooler, the MLM head's tensors beside it) loads as the base model with
// last_hidden_state alone, the same bits as the JinaBertModel checkpoint
// of the same weights.
func TestJinaMaskedLMCheckpoint(t *testing.T) {
	dir := testmodels.TinyDir(t, testmodels.TinyJinaBertBase)
	ref, err := testmodels.LoadModelReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["architectures"] = []string{ArchJinaBertForMaskedLM}
	st, err := OpenSafetensors(filepath.Join(dir, SafetensorsFile))
	if err != nil {
		t.Fatal(err)
	}
	m := &tinyModel{config: cfg, tensors: map[string]*compiler.Tensor{}}
	for _, name := range st.Names() {
		if strings.HasPrefix(name, "pooler.") {
			continue
		}
		w, err := st.Weight(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		m.tensors["bert."+name] = w
	}
	m.tensors["cls.predictions.bias"] = compiler.NewTensor(compiler.Float32, int64(cfg["vocab_size"].(float64)))

	base, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	mlm, err := Load(m.write(t))
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, o := range mlm.Outputs {
		outs = append(outs, o.Name)
	}
	if !slices.Equal(outs, []string{outLastHidden}) {
		t.Fatalf("outputs %v, want [%s]", outs, outLastHidden)
	}
	want, err := interp.Run(base, ref.Inputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := interp.Run(mlm, ref.Inputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range want[outLastHidden].F32 {
		if math.Float32bits(v) != math.Float32bits(got[outLastHidden].F32[i]) {
			t.Fatalf("last_hidden_state[%d] = %g, want %g", i, got[outLastHidden].F32[i], v)
		}
	}
}

// TestALiBiSlopes: _get_alibi_head_slopes for a power of two heads and
// for the interleaved counts jina-embeddings-v2's models have (small: 4,
// base: 12, large: 16 heads), as Python computes them.
func TestALiBiSlopes(t *testing.T) {
	for _, c := range []struct {
		heads int
		want  []float64
	}{
		{4, []float64{0.25, 0.0625, 0.015625, 0.00390625}},
		{6, []float64{0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125}},
		{12, []float64{0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
			0.7071067811865476, 0.35355339059327384, 0.17677669529663692, 0.08838834764831849}},
	} {
		got := alibiSlopes(c.heads)
		if len(got) != len(c.want) {
			t.Fatalf("%d heads: %d slopes", c.heads, len(got))
		}
		for i := range got {
			if float32(got[i]) != float32(c.want[i]) {
				t.Errorf("%d heads: slope %d = %v, want %v", c.heads, i, got[i], c.want[i])
			}
		}
	}
}

// TestJinaQKPostNormFromAutoMap: jina-embeddings-v2-base-code's config
// names jina-bert-v2-qk-post-norm's code in auto_map, the others
// jina-bert-implementation's; the builder follows (the layer's extra
// norms are in the checkpoint it reads).
func TestJinaQKPostNormFromAutoMap(t *testing.T) {
	for name, want := range map[string]bool{testmodels.TinyJinaBertBase: false, testmodels.TinyJinaBertCls: false, testmodels.TinyJinaBertCode: true} {
		cfg, err := LoadConfig(filepath.Join(testmodels.TinyDir(t, name), ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.JinaQKPostNorm != want {
			t.Errorf("%s: JinaQKPostNorm = %v, want %v", name, cfg.JinaQKPostNorm, want)
		}
	}
}

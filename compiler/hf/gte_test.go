package hf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestGTEConfigRefusals: the NewConfig settings sqc does not compute are
// refused naming their key, and the published forms parse.
func TestGTEConfigRefusals(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testmodels.TinyDir(t, testmodels.TinyGTEBase), ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, key string
		value     any
		want      []string // empty: parses
	}{
		{"published", "", nil, nil},
		{"no scaling", "rope_scaling", nil, nil},
		{"linear scaling", "rope_scaling", map[string]any{"type": "linear", "factor": 2.0}, []string{"rope_scaling", "ntk"}},
		{"mixed_b", "rope_scaling", map[string]any{"type": "ntk", "factor": 2.0, "mixed_b": 1.0}, []string{"rope_scaling"}},
		{"rms norm", "layer_norm_type", "rms_norm", []string{"layer_norm_type", "rms_norm"}},
		{"log-n scale", "logn_attention_scale", true, []string{"logn_attention_scale"}},
		{"unpacked qkv", "pack_qkv", false, []string{"pack_qkv"}},
		{"absolute positions", "position_embedding_type", "absolute", []string{"position_embedding_type", "rope"}},
		{"scaling below 1", "rope_scaling", map[string]any{"type": "ntk", "factor": 0.5}, []string{"rope_scaling", "factor 0.5"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseConfigWith(t, data, c.key, c.value)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if want := map[bool]float64{true: 2, false: 0}[c.key == ""]; cfg.GTE.NTKFactor != want {
					t.Errorf("NTK factor %v, want %v", cfg.GTE.NTKFactor, want)
				}
				return
			}
			wantRefusal(t, c.key, err, c.want...)
		})
	}
}

// TestGTEClassifierWithoutPooler: a NewForSequenceClassification
// checkpoint without pooler weights classifies the first token itself
// (NewModel without a pooling layer) instead of failing on the missing
// tensor; with them, the pooler's dense + tanh comes first.
func TestGTEClassifierWithoutPooler(t *testing.T) {
	dir := testmodels.TinyDir(t, testmodels.TinyGTECls)
	cfg, err := LoadConfig(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	st, err := OpenSafetensors(filepath.Join(dir, SafetensorsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, pooler := range []bool{true, false} {
		m := &tinyModel{config: configMap(cfg), tensors: map[string]*compiler.Tensor{}}
		for _, name := range st.Names() {
			if !pooler && strings.Contains(name, "pooler.") {
				continue
			}
			w, err := st.Weight(name, nil)
			if err != nil {
				t.Fatal(err)
			}
			m.tensors[name] = w
		}
		var raw map[string]any
		data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &raw); err != nil {
			t.Fatal(err)
		}
		m.config = raw
		g, err := Load(m.write(t))
		if err != nil {
			t.Fatalf("pooler %v: %v", pooler, err)
		}
		tanh := 0
		for _, n := range g.Nodes {
			if n.Op == "Tanh" {
				tanh++
			}
		}
		if (tanh == 1) != pooler {
			t.Errorf("pooler weights %v: %d Tanh nodes", pooler, tanh)
		}
	}
}

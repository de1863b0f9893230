package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestNomicConfig: NomicBertConfig's GPT-2 key names land in Config's
// fields with the hub code's rules (vocab_size padded to
// pad_vocab_size_multiple, the gated n_inner rounded up to 256, every
// GELU name computed as the erf GELU); the settings sqc does not compute
// are refused naming their key.
func TestNomicConfig(t *testing.T) {
	parse := tinyConfigParser(t, testmodels.TinyNomicBase)
	cfg, err := parse("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HiddenSize != 32 || cfg.NumLayers != 3 || cfg.NumHeads != 4 || cfg.IntermediateSize != 256 || cfg.VocabSize != 192 ||
		cfg.HiddenAct != ActSILU || cfg.Nomic.QKVBias || cfg.Nomic.RotaryBase != 1000 || !cfg.HasTokenTypeIDs() {
		t.Errorf("parsed %+v", cfg)
	}
	for _, c := range []struct {
		key   string
		value any
		check func(Config) bool
	}{
		{"vocab_size", 140, func(c Config) bool { return c.VocabSize == 192 }}, // padded to 64's multiple
		{"n_inner", 200, func(c Config) bool { return c.IntermediateSize == 256 }},
		{"activation_function", "gelu_new", func(c Config) bool { return c.HiddenAct == ActGELU && !c.Nomic.Gated() }},
		{"activation_function", "geglu", func(c Config) bool { return c.HiddenAct == ActGELU && c.Nomic.Gated() }},
		{"type_vocab_size", 0, func(c Config) bool { return !c.HasTokenTypeIDs() }},
	} {
		cfg, err := parse(c.key, c.value)
		if err != nil || !c.check(cfg) {
			t.Errorf("%s = %v: %+v, %v", c.key, c.value, cfg, err)
		}
	}
	for _, c := range []struct {
		key   string
		value any
		want  []string
	}{
		{"prenorm", true, []string{"prenorm"}},
		{"causal", true, []string{"causal"}},
		{"use_rms_norm", true, []string{"use_rms_norm"}},
		{"rotary_emb_fraction", 0.5, []string{"rotary_emb_fraction", "0.5"}},
		{"rotary_emb_fraction", nil, []string{"rotary_emb_fraction"}}, // learned positions (the class default 0)
		{"rotary_emb_interleaved", true, []string{"rotary_emb_interleaved"}},
		{"rotary_scaling_factor", 2.0, []string{"rotary_scaling_factor", "dynamic NTK"}},
		{"rotary_emb_scale_base", 512.0, []string{"rotary_emb_scale_base"}},
		{"activation_function", "glu", []string{"activation_function", "glu"}},
		{"num_experts", 8, []string{"num_experts"}},
		{"num_heads_kv", 2, []string{"num_heads_kv"}},
		{"n_head", 3, []string{"n_head"}}, // 32 is no multiple of 3
		{"rotary_emb_base", 1.0, []string{"rotary_emb_base"}},
		{"n_embd", 36, []string{"n_head"}}, // head size 9: odd
	} {
		_, err := parse(c.key, c.value)
		wantRefusal(t, fmt.Sprintf("%s = %v", c.key, c.value), err, c.want...)
	}
}

// tinyConfigParser returns parseConfigWith on the tiny model name's
// config.json.
func tinyConfigParser(t *testing.T, name string) func(key string, value any) (Config, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testmodels.TinyDir(t, name), ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	return func(key string, value any) (Config, error) { return parseConfigWith(t, data, key, value) }
}

// parseConfigWith parses config.json data with key set to value (data as
// it is for key ""; a nil value writes null).
func parseConfigWith(t *testing.T, data []byte, key string, value any) (Config, error) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if key != "" {
		m[key] = value
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return ParseConfig(b, "config.json")
}

// wantRefusal fails the test unless err refuses the config
// (ErrUnknownModel or ErrMalformed) saying every one of want; what names
// the case.
func wantRefusal(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil || !(errors.Is(err, compiler.ErrUnknownModel) || errors.Is(err, compiler.ErrMalformed)) {
		t.Errorf("%s: err = %v, want a refusal", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not say %q", what, err, w)
		}
	}
}

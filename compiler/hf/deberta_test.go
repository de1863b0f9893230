package hf

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"

	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestDeBERTaConfig: DebertaV2Config's keys land in Config with its class
// defaults and pos_att_type in both of its forms; what sqc does not
// compute is refused naming the key.
func TestDeBERTaConfig(t *testing.T) {
	parse := tinyConfigParser(t, testmodels.TinyDeBERTaBase)
	cfg, err := parse("", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.DeBERTa
	if cfg.HiddenSize != 32 || cfg.NumLayers != 2 || cfg.NumHeads != 4 || cfg.LayerNormEps != 1e-7 || cfg.HasTokenTypeIDs() ||
		!d.RelativeAttention || d.AttSpan() != 8 || d.MaxRelativePositions != 64 || !d.NormRelEmbeddings || !d.ShareAttKey ||
		d.PositionBiasedInput || len(d.PosAttTypes) != 2 || d.PoolerAct != ActGELU {
		t.Errorf("parsed %+v", cfg)
	}
	for _, c := range []struct {
		key   string
		value any
		check func(Config) bool
	}{
		{"pos_att_type", "c2p|P2C", func(c Config) bool { return c.DeBERTa.has(debertaC2P) && c.DeBERTa.has(debertaP2C) }},
		{"pos_att_type", []string{"c2p"}, func(c Config) bool { return c.DeBERTa.has(debertaC2P) && !c.DeBERTa.has(debertaP2C) }},
		{"pos_att_type", nil, func(c Config) bool { return len(c.DeBERTa.PosAttTypes) == 0 }},
		{"position_buckets", -1, func(c Config) bool { return c.DeBERTa.AttSpan() == 64 }}, // max_relative_positions -1: the positions
		{"max_relative_positions", 32, func(c Config) bool { return c.DeBERTa.MaxRelativePositions == 32 }},
		{"relative_attention", nil, func(c Config) bool { return !c.DeBERTa.RelativeAttention }}, // the class default
		{"position_biased_input", nil, func(c Config) bool { return c.DeBERTa.PositionBiasedInput }},
		{"type_vocab_size", 2, func(c Config) bool { return c.HasTokenTypeIDs() }},
		{"embedding_size", 16, func(c Config) bool { return c.EmbeddingWidth() == 16 }},
		{"embedding_size", 32, func(c Config) bool { return c.EmbeddingSize == 0 }},
	} {
		cfg, err := parse(c.key, c.value)
		if err != nil || !c.check(cfg) {
			t.Errorf("%s = %v: %+v, %v", c.key, c.value, cfg.DeBERTa, err)
		}
	}
	for _, c := range []struct {
		key   string
		value any
		want  []string
	}{
		{"conv_kernel_size", 3, []string{"conv_kernel_size", "convolution"}},
		{"attention_head_size", 16, []string{"attention_head_size"}},
		{"pooler_hidden_size", 64, []string{"pooler_hidden_size"}},
		{"pos_att_type", "c2p|p2p", []string{"pos_att_type", "p2p"}},
		{"pos_att_type", 3, []string{"pos_att_type"}},
		{"pooler_hidden_act", "tanhh", []string{"pooler_hidden_act", "tanhh"}},
		{"max_relative_positions", 4, []string{"max_relative_positions"}}, // no room for log buckets beyond 4
		{"position_buckets", 1, []string{"position_buckets"}},
	} {
		_, err := parse(c.key, c.value)
		wantRefusal(t, fmt.Sprintf("%s = %v", c.key, c.value), err, c.want...)
	}
}

// TestDeBERTaV1Config: DebertaConfig (model_type "deberta") reads as v2's
// unbucketed, unshared, unnormed form whatever v2-only keys say (v1's code
// reads none), with its own class defaults; talking_head is refused.
func TestDeBERTaV1Config(t *testing.T) {
	parse := tinyConfigParser(t, testmodels.TinyDeBERTaV1Cls)
	cfg, err := parse("", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.DeBERTa
	if cfg.ModelType != ModelDeBERTa || !cfg.IsDeBERTa() || d.AttSpan() != 6 || d.PositionBuckets > 0 || d.NormRelEmbeddings || d.ShareAttKey ||
		!d.PositionBiasedInput || !d.has(debertaP2C) || d.has(debertaC2P) || cfg.ParamPrefix() != "deberta." {
		t.Errorf("parsed %+v", cfg)
	}
	for _, c := range []struct {
		key   string
		value any
		check func(Config) bool
	}{
		{"position_buckets", 256, func(c Config) bool { return c.DeBERTa.PositionBuckets <= 0 && c.DeBERTa.AttSpan() == 6 }},
		{"share_att_key", true, func(c Config) bool { return !c.DeBERTa.ShareAttKey }},
		{"norm_rel_ebd", "layer_norm", func(c Config) bool { return !c.DeBERTa.NormRelEmbeddings }},
		{"vocab_size", nil, func(c Config) bool { return c.VocabSize == 50265 }}, // DebertaConfig's default
		{"talking_head", false, func(c Config) bool { return true }},
	} {
		cfg, err := parse(c.key, c.value)
		if err != nil || !c.check(cfg) {
			t.Errorf("%s = %v: %+v, %v", c.key, c.value, cfg.DeBERTa, err)
		}
	}
	_, err = parse("talking_head", true)
	wantRefusal(t, "talking_head = true", err, "talking_head")
}

// TestTinyDeBERTaMatchesTorch: the FP32 interpreter on the graph built
// from config.json + model.safetensors, and on the torch.onnx export's
// graph, reproduces PyTorch's outputs on the reference batch's real tokens
// (transformers masks DeBERTa's padded queries too: see buildDeBERTa).
func TestTinyDeBERTaMatchesTorch(t *testing.T) {
	for _, name := range testmodels.TinyDeBERTaModels {
		t.Run(name, func(t *testing.T) {
			dir, ref := loadTiny(t, name)
			hg, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			checkRealTokens(t, "safetensors", hg, ref)
			og, err := onnx.Load(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			sameInterface(t, hg, og)
			checkRealTokens(t, "onnx", og, ref)
		})
	}
}

// TestTinyDeBERTaINT8: the INT8 path, on the HF folders and on the v2
// models' torch.onnx exports (bmm on [batch·heads, seq, d], Tile of the
// tables, the masked_fill softmax over query and key masks, the embeddings
// times the mask: UnmergeBatchHeads, CanonicalizeAttentionMask and
// DropPaddedRowMask make it the folder's form), fuses each layer's relative
// terms (where the model has them) into one sqc.DisentangledBias and
// agrees roughly with FP32 (int8MinCosine) on real tokens; the canonical
// FP32 graph still matches PyTorch there. v1's export is refused.
func TestTinyDeBERTaINT8(t *testing.T) {
	for _, name := range testmodels.TinyDeBERTaModels {
		t.Run(name, func(t *testing.T) {
			dir, ref := loadTiny(t, name)
			cfg, err := LoadConfig(filepath.Join(dir, ConfigFile))
			if err != nil {
				t.Fatal(err)
			}
			hg, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			og, err := onnx.Load(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if cfg.DeBERTa.RelativeAttention && len(cfg.DeBERTa.PosAttTypes) > 0 {
				want = cfg.NumLayers // one per layer
			}
			sources := []struct {
				what string
				g    *compiler.Graph
			}{{"folder", hg}, {"onnx", og}}
			if cfg.ModelType == ModelDeBERTa {
				// v1's export (in_proj chunked per head, the relative
				// table sliced to the traced sequence length, XSoftmax's
				// zeroing after the softmax) does not fuse: refused.
				if _, _, _, err := int8Outputs(t, og, ref); !errors.Is(err, compiler.ErrUnsupportedOp) || !strings.Contains(err.Error(), "model.onnx") {
					t.Errorf("v1's ONNX export: %v; want an unsupported op naming the file", err)
				}
				sources = sources[:1]
			}
			for _, src := range sources {
				q, f, listing, err := int8Outputs(t, src.g, ref)
				if err != nil {
					t.Fatalf("%s: %v", src.what, err)
				}
				if n := strings.Count(listing, "= nn.DisentangledBias("); n != want {
					t.Errorf("%s: %d nn.DisentangledBias steps, want %d:\n%s", src.what, n, want, listing)
				}
				for _, out := range ref.OutputNames() {
					cos := testmodels.Cosine(q[out], f[out])
					d := testmodels.TensorMaxAbsDiff(f[out], ref.Outputs[out])
					t.Logf("%s %s: INT8 cosine %.5f vs FP32, %.5f vs PyTorch; canonical FP32 max |sqc - torch| %.3g",
						src.what, out, cos, testmodels.Cosine(q[out], ref.Outputs[out]), d)
					if !(d <= referenceTolerance) {
						t.Errorf("%s %s: canonical FP32 differs from PyTorch by %.3g > %g", src.what, out, d, referenceTolerance)
					}
					if !(cos >= int8MinCosine) {
						t.Errorf("%s %s: INT8 cosine vs FP32 %.5f < %g", src.what, out, cos, int8MinCosine)
					}
				}
			}
		})
	}
}

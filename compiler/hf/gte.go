package hf

import (
	"math"
	"strconv"
)

// GTEConfig holds the NewConfig keys (Alibaba-NLP/new-impl, model_type
// "new": gte-base-en-v1.5, gte-large-en-v1.5, gte-multilingual-base) no
// other family has.
type GTEConfig struct {
	// RopeTheta is rope_theta, the rotary base.
	RopeTheta float64
	// NTKFactor is rope_scaling's factor for {"type": "ntk"}; 0 without
	// scaling. The rotary base is then RopeTheta * NTKFactor and the
	// inverse frequencies are divided by NTKFactor^(2/head size), as
	// NTKScalingRotaryEmbedding's cache for max_position_embeddings *
	// NTKFactor positions has them.
	NTKFactor float64
}

// NewConfig's class defaults for the keys published configs may omit.
const (
	gteRopeTheta = 10000.0
	gteVocab     = 30528
)

// parseGTE fills cfg from NewConfig's keys with its class defaults. What
// sqc does not compute is refused, naming the key: another
// position_embedding_type than "rope", RMS norms, log-n attention scaling,
// unpacked Q, K and V, rotary scaling other than NTK's.
func parseGTE(cfg *Config, raw rawConfig, path string) error {
	cfg.VocabSize = intOr(raw.VocabSize, gteVocab)
	cfg.HiddenSize = intOr(raw.HiddenSize, 768)
	cfg.NumLayers = intOr(raw.NumHiddenLayers, 12)
	cfg.NumHeads = intOr(raw.NumAttnHeads, 12)
	cfg.IntermediateSize = intOr(raw.IntermediateSize, 3072)
	cfg.HiddenAct = strOr(raw.HiddenAct, ActGELU)
	cfg.TypeVocabSize = intOr(raw.TypeVocabSize, 0)
	cfg.LayerNormEps = 1e-12
	if raw.LayerNormEps != nil {
		cfg.LayerNormEps = *raw.LayerNormEps
	}
	refuse := func(key, format string, args ...any) error { return refuseKey(path, key, format, args...) }
	if pe := strOr(raw.PositionEmbType, "rope"); pe != "rope" {
		return refuse("position_embedding_type", "%q; sqc builds GTE with \"rope\" only", pe)
	}
	if t := strOr(raw.LayerNormType, "layer_norm"); t != "layer_norm" {
		return refuse("layer_norm_type", "%q; sqc builds GTE with \"layer_norm\" only", t)
	}
	if raw.LognAttentionScale || raw.LognAttentionClip1 {
		return refuse("logn_attention_scale", "log-n attention scaling is not supported")
	}
	if !boolOr(raw.PackQKV, true) {
		return refuse("pack_qkv", "false (separate q_proj, k_proj, v_proj) is not supported")
	}
	cfg.GTE.RopeTheta = gteRopeTheta
	if raw.RopeTheta != nil {
		cfg.GTE.RopeTheta = *raw.RopeTheta
	}
	if s := raw.RopeScaling; len(s) > 0 {
		typ, _ := s["type"].(string)
		factor, ok := s["factor"].(float64)
		_, mixed := s["mixed_b"]
		if typ != "ntk" || !ok || mixed || len(s) != 2 {
			return refuse("rope_scaling", "%v; sqc computes {\"type\": \"ntk\", \"factor\": F} only", s)
		}
		cfg.GTE.NTKFactor = factor
	}
	return nil
}

// validateGTE checks GTE's own settings.
func (c *Config) validateGTE(fail func(object, format string, args ...any) error) error {
	g := &c.GTE
	if c.HeadSize()%2 != 0 {
		return fail("num_attention_heads", "head size %d is odd; the rotary embedding rotates halves", c.HeadSize())
	}
	if !(g.RopeTheta > 1) || math.IsInf(g.RopeTheta, 0) {
		return fail("rope_theta", "%v is not a finite number above 1", g.RopeTheta)
	}
	if g.NTKFactor != 0 && (!(g.NTKFactor >= 1) || math.IsInf(g.NTKFactor, 0)) {
		return fail("rope_scaling", "factor %v is not a finite number of at least 1", g.NTKFactor)
	}
	if c.TypeVocabSize < 0 {
		return fail("type_vocab_size", "%d is negative", c.TypeVocabSize)
	}
	return nil
}

// gteParameters counts NewModel's weights: the word (and type) embeddings
// and their norm; per layer qkv_proj and o_proj with biases, two norms,
// up_gate_proj (no bias) and down_proj with one; a classifier's pooler
// and classifier.
func (c *Config) gteParameters() int64 {
	h, i := int64(c.HiddenSize), int64(c.IntermediateSize)
	layer := 3*h*h + 3*h + h*h + h + 4*h + 2*i*h + i*h + h
	n := (int64(c.VocabSize)+int64(c.TypeVocabSize))*h + 2*h + int64(c.NumLayers)*layer
	if c.IsClassifier() {
		n += h*h + h + int64(len(c.Labels))*(h+1)
	}
	return n
}

// buildGTE emits NewModel (last_hidden_state) or
// NewForSequenceClassification after its checkpoints' parameter names:
// word (+ token type) embeddings and LayerNorm; post-norm layers of
// qkv_proj, the rotary embedding on Q and K, softmax(Q·Kᵀ · d^-0.5 +
// mask)·V, o_proj, attn_ln(x + attention), then up_gate_proj's halves as
// up · act(gate), down_proj, mlp_ln(x + mlp); for the classifier, the
// pooler (dense + tanh on the first token; the first token itself where
// the checkpoint has no pooler) and the classifier. The rotary tables are
// ModernBERT's form (the export's Gather of a cached table at positions
// 0..seq-1 has the same values), so both frontends fuse alike. prefix is
// "new." for the classifier, "" for the base model.
func buildGTE(b *builder, prefix string) {
	c := b.cfg
	h, inter := c.HiddenSize, c.IntermediateSize
	scope := prefix + "embeddings"
	x := b.layerNorm(b.wordAndTypeEmbeddings(scope, int64(h)), scope+".LayerNorm")
	mask := b.bertMaskBias()
	tables := b.rotaryTables(scope+".rotary_emb", c.gteInvFreq())
	for l := range c.NumLayers {
		scope := prefix + "encoder.layer." + strconv.Itoa(l)
		attn := scope + ".attention"
		ctx := b.rotaryAttention(attn, b.linear(x, attn+".qkv_proj", h, 3*h), mask, tables)
		out := b.linear(ctx, attn+".o_proj", h, h)
		x = b.layerNorm(b.Op("Add", scope+"/attention_residual", x, out), scope+".attn_ln")

		u := b.modernBertLinear(x, scope+".mlp.up_gate_proj", h, 2*inter, false)
		act := b.activationNamed(b.columns(u, scope+".mlp/gate", inter, 2*inter), scope+".mlp.act", c.HiddenAct)
		glu := b.Op("Mul", scope+".mlp/glu", b.columns(u, scope+".mlp/up", 0, inter), act)
		y := b.linear(glu, scope+".mlp.down_proj", inter, h)
		x = b.layerNorm(b.Op("Add", scope+"/mlp_residual", x, y), scope+".mlp_ln")
	}
	if !c.IsClassifier() {
		b.Rename(x, outLastHidden)
		return
	}
	var pooled string
	if hasWeight(b.weights, prefix+"pooler.dense.weight", int64(h), int64(h)) {
		pooled = b.bertPooler(prefix+"pooler", x, h)
	} else {
		pooled = b.firstToken(x, prefix+"pooler")
	}
	b.Rename(b.gemm(pooled, "classifier", h, len(c.Labels)), outLogits)
}

// gteInvFreq is NewModel's rotary inverse frequencies: 1 / base^(2i/d)
// in float32, with NTK scaling base = rope_theta * factor and each
// divided by float32(factor^(2/d)).
func (c *Config) gteInvFreq() []float32 {
	d, g := c.HeadSize(), &c.GTE
	if g.NTKFactor == 0 {
		return ropeInvFreq(d, g.RopeTheta)
	}
	inv := ropeInvFreq(d, g.RopeTheta*g.NTKFactor)
	div := float32(math.Pow(g.NTKFactor, 2/float64(d)))
	for i := range inv {
		inv[i] /= div
	}
	return inv
}

package hf

import (
	"math"
	"strconv"
)

// NomicConfig holds the NomicBertConfig keys (nomic-ai/nomic-bert-2048's
// hub code, model_type "nomic_bert": nomic-embed-text-v1 and v1.5) no
// other family has. Its sizes use GPT2Config's names (n_embd, n_layer,
// n_head, n_inner, n_positions, layer_norm_epsilon), read into Config's
// fields.
type NomicConfig struct {
	// ActivationFunction is activation_function: "swiglu" (fc11(x) ·
	// silu(fc12(x))), "geglu" (the same with the erf GELU), or a GELU name
	// for the plain fc1, GELU, fc2 (the hub code applies the erf GELU for
	// every one of them).
	ActivationFunction string
	// RotaryBase is rotary_emb_base, the rotary embedding's theta.
	RotaryBase float64
	// QKVBias is qkv_proj_bias: Wqkv and out_proj have biases.
	QKVBias bool
	// FC1Bias and FC2Bias are mlp_fc1_bias (fc11 and fc12, or fc1) and
	// mlp_fc2_bias.
	FC1Bias, FC2Bias bool
}

// Gated reports whether the feed-forward is the gated one, fc11(x) ·
// act(fc12(x)).
func (n *NomicConfig) Gated() bool {
	return n.ActivationFunction == nomicSwiGLU || n.ActivationFunction == nomicGeGLU
}

// NomicBertConfig's activation_function values for the gated
// feed-forward.
const (
	nomicSwiGLU = "swiglu"
	nomicGeGLU  = "geglu"
)

// nomicGatedMultiple is what NomciBertGatedMLP rounds n_inner up to a
// multiple of (its multiple_of).
const nomicGatedMultiple = 256

// nomicRaw holds NomicBertConfig's and GPT2Config's keys (embedded in
// rawConfig; vocab_size and type_vocab_size are rawConfig's own).
type nomicRaw struct {
	NEmbd                *int     `json:"n_embd"`
	NLayer               *int     `json:"n_layer"`
	NHead                *int     `json:"n_head"`
	NInner               *int     `json:"n_inner"`
	NPositions           *int     `json:"n_positions"`
	LayerNormEpsilon     *float64 `json:"layer_norm_epsilon"`
	ActivationFunction   *string  `json:"activation_function"`
	PadVocabSizeMultiple *int     `json:"pad_vocab_size_multiple"`
	Prenorm              bool     `json:"prenorm"`
	ParallelBlock        bool     `json:"parallel_block"`
	Causal               bool     `json:"causal"`
	UseRMSNorm           bool     `json:"use_rms_norm"`
	NormMLP              bool     `json:"norm_mlp"`
	RotaryHeadDim        bool     `json:"rotary_head_dim"`
	RotaryEmbFraction    *float64 `json:"rotary_emb_fraction"`
	RotaryEmbBase        *float64 `json:"rotary_emb_base"`
	RotaryEmbInterleaved bool     `json:"rotary_emb_interleaved"`
	RotaryEmbScaleBase   *float64 `json:"rotary_emb_scale_base"`
	RotaryScalingFactor  *float64 `json:"rotary_scaling_factor"`
	QKVProjBias          *bool    `json:"qkv_proj_bias"`
	MLPFc1Bias           *bool    `json:"mlp_fc1_bias"`
	MLPFc2Bias           *bool    `json:"mlp_fc2_bias"`
	NumExperts           *int     `json:"num_experts"`
	MoeEveryNLayers      *int     `json:"moe_every_n_layers"`
	NumHeadsKV           *int     `json:"num_heads_kv"`
}

// parseNomic fills cfg from NomicBertConfig's keys with its (and
// GPT2Config's) class defaults. What sqc does not compute is refused,
// naming the key: pre-norm and parallel blocks, causal attention, RMS
// norms, a norm inside the feed-forward, mixture-of-experts layers,
// grouped K/V heads, partial, interleaved, scaled (xPos) or dynamic-NTK
// rotary embeddings, learned positions (rotary_emb_fraction 0), and the
// sigmoid GLU.
func parseNomic(cfg *Config, raw rawConfig, path string) error {
	refuse := func(key, format string, args ...any) error { return refuseKey(path, key, format, args...) }
	switch {
	case raw.Prenorm:
		return refuse("prenorm", "true; sqc builds NomicBERT's post-norm blocks only")
	case raw.ParallelBlock:
		return refuse("parallel_block", "true is not supported")
	case raw.Causal:
		return refuse("causal", "true: a decoder; sqc builds encoders only")
	case raw.UseRMSNorm:
		return refuse("use_rms_norm", "true; sqc builds NomicBERT with LayerNorm only")
	case raw.NormMLP:
		return refuse("norm_mlp", "true (a LayerNorm inside the feed-forward) is not supported")
	case raw.RotaryHeadDim:
		return refuse("rotary_head_dim", "true (the rotary embedding along the head axis) is not supported")
	case raw.NumExperts != nil && *raw.NumExperts > 0 || raw.MoeEveryNLayers != nil && *raw.MoeEveryNLayers > 0:
		return refuse("num_experts", "mixture-of-experts layers (nomic-embed-text-v2-moe) are not supported")
	case raw.RotaryEmbInterleaved:
		return refuse("rotary_emb_interleaved", "true (GPT-J's pairs) is not supported; sqc rotates halves")
	case raw.RotaryEmbScaleBase != nil:
		return refuse("rotary_emb_scale_base", "%v (xPos scaling) is not supported", *raw.RotaryEmbScaleBase)
	case raw.RotaryScalingFactor != nil:
		return refuse("rotary_scaling_factor", "%v: dynamic NTK scaling changes the rotary base with the sequence length past max_trained_positions; "+
			"sqc builds NomicBERT without it (null, as nomic-embed-text-v1.5's config.json has it)", *raw.RotaryScalingFactor)
	}
	if f := floatOr(raw.RotaryEmbFraction, 0); f != 1 {
		return refuse("rotary_emb_fraction", "%v; sqc builds NomicBERT with the rotary embedding on whole heads (1.0) only", f)
	}
	n := &cfg.Nomic
	n.ActivationFunction = strOr(raw.ActivationFunction, ActGELUNew)
	switch n.ActivationFunction {
	case nomicSwiGLU:
		cfg.HiddenAct = ActSILU
	case nomicGeGLU, ActGELU, ActGELUNew, ActGELUTanh, "gelu_fast":
		cfg.HiddenAct = ActGELU // the hub code's F.gelu, whatever the GELU's name
	default:
		return refuse("activation_function", "%q; supported for NomicBERT: swiglu, geglu, gelu, gelu_new, gelu_fast, gelu_pytorch_tanh", n.ActivationFunction)
	}
	n.RotaryBase = floatOr(raw.RotaryEmbBase, 10000)
	n.QKVBias = boolOr(raw.QKVProjBias, true)
	n.FC1Bias = boolOr(raw.MLPFc1Bias, true)
	n.FC2Bias = boolOr(raw.MLPFc2Bias, true)

	cfg.HiddenSize = intOr(raw.NEmbd, 768)
	cfg.NumLayers = intOr(raw.NLayer, 12)
	cfg.NumHeads = intOr(raw.NHead, 12)
	if raw.NumHeadsKV != nil && *raw.NumHeadsKV != cfg.NumHeads {
		return refuse("num_heads_kv", "%d K/V heads for %d query heads is not supported", *raw.NumHeadsKV, cfg.NumHeads)
	}
	cfg.MaxPositions = intOr(raw.NPositions, 1024)
	cfg.LayerNormEps = floatOr(raw.LayerNormEpsilon, 1e-5)
	cfg.TypeVocabSize = intOr(raw.TypeVocabSize, 2)
	// NomicBertModel pads vocab_size up to pad_vocab_size_multiple.
	cfg.VocabSize = intOr(raw.VocabSize, 50257)
	if m := intOr(raw.PadVocabSizeMultiple, 1); m > 1 && cfg.VocabSize%m != 0 {
		cfg.VocabSize += m - cfg.VocabSize%m
	}
	if n.Gated() {
		// NomciBertGatedMLP: int(8·n_embd/3) without n_inner, rounded up to
		// a multiple of 256 either way.
		inner := intOr(raw.NInner, 8*cfg.HiddenSize/3)
		cfg.IntermediateSize = (inner + nomicGatedMultiple - 1) / nomicGatedMultiple * nomicGatedMultiple
	} else {
		cfg.IntermediateSize = intOr(raw.NInner, 4*cfg.HiddenSize)
	}
	return nil
}

func floatOr(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

// validateNomic checks NomicBERT's own settings.
func (c *Config) validateNomic(fail func(object, format string, args ...any) error) error {
	if c.HeadSize()%2 != 0 {
		return fail("n_head", "head size %d is odd; the rotary embedding rotates halves", c.HeadSize())
	}
	if b := c.Nomic.RotaryBase; !(b > 1) || math.IsInf(b, 0) {
		return fail("rotary_emb_base", "%v is not a finite number above 1", b)
	}
	if c.TypeVocabSize < 0 {
		return fail("type_vocab_size", "%d is negative", c.TypeVocabSize)
	}
	return nil
}

// nomicParameters counts NomicBertModel's weights: the word (and type)
// embeddings and emb_ln; per layer Wqkv and out_proj (with biases if
// qkv_proj_bias), norm1 and norm2, fc11 and fc12 (or fc1) and fc2 (with
// biases as configured); a classifier's pooler and classifier.
func (c *Config) nomicParameters() int64 {
	h, i, n := int64(c.HiddenSize), int64(c.IntermediateSize), &c.Nomic
	bias := func(on bool, width int64) int64 {
		if on {
			return width
		}
		return 0
	}
	ins := int64(1)
	if n.Gated() {
		ins = 2
	}
	layer := 4*h*h + bias(n.QKVBias, 4*h) + 4*h + ins*(i*h+bias(n.FC1Bias, i)) + i*h + bias(n.FC2Bias, h)
	total := (int64(c.VocabSize)+int64(c.TypeVocabSize))*h + 2*h + int64(c.NumLayers)*layer
	if c.IsClassifier() {
		total += h*h + h + int64(len(c.Labels))*(h+1)
	}
	return total
}

// buildNomicBERT emits NomicBertModel (last_hidden_state) or
// NomicBertForSequenceClassification after the hub code
// (modeling_hf_nomic_bert.py) and its checkpoints' parameter names: word
// (+ token type) embeddings and emb_ln; post-norm layers of attn.Wqkv,
// the rotary embedding on Q and K, softmax(Q·Kᵀ / √d + mask)·V,
// attn.out_proj, norm1(x + attention), then mlp.fc11(x) ·
// act(mlp.fc12(x)) (or act(mlp.fc1(x))), mlp.fc2, norm2(x + mlp); for the
// classifier, the pooler (dense + tanh on the first token) and the
// classifier. The rotary tables are GTE's and ModernBERT's form (cos and
// sin of positions ⊗ inv_freq, the halves rotated), so the frontends fuse
// alike. prefix is "bert." for the classifier, "" for the base model.
func buildNomicBERT(b *builder, prefix string) {
	c, n := b.cfg, &b.cfg.Nomic
	h, inter := c.HiddenSize, c.IntermediateSize
	scope := prefix + "embeddings"
	x := b.layerNorm(b.wordAndTypeEmbeddings(scope, int64(h)), prefix+"emb_ln")
	mask := b.bertMaskBias()
	tables := b.rotaryTables(prefix+"rotary_emb", ropeInvFreq(c.HeadSize(), n.RotaryBase))
	for l := range c.NumLayers {
		scope := prefix + "encoder.layers." + strconv.Itoa(l)
		attn := scope + ".attn"
		qkv := b.modernBertLinear(x, attn+".Wqkv", h, 3*h, n.QKVBias)
		out := b.modernBertLinear(b.rotaryAttention(attn, qkv, mask, tables), attn+".out_proj", h, h, n.QKVBias)
		x = b.layerNorm(b.Op("Add", scope+"/attention_residual", x, out), scope+".norm1")

		mlp := scope + ".mlp"
		var y string
		if n.Gated() {
			up := b.modernBertLinear(x, mlp+".fc11", h, inter, n.FC1Bias)
			gate := b.activationNamed(b.modernBertLinear(x, mlp+".fc12", h, inter, n.FC1Bias), mlp+".act", c.HiddenAct)
			y = b.Op("Mul", mlp+"/glu", up, gate)
		} else {
			y = b.activationNamed(b.modernBertLinear(x, mlp+".fc1", h, inter, n.FC1Bias), mlp+".act", c.HiddenAct)
		}
		y = b.modernBertLinear(y, mlp+".fc2", inter, h, n.FC2Bias)
		x = b.layerNorm(b.Op("Add", scope+"/mlp_residual", x, y), scope+".norm2")
	}
	if !c.IsClassifier() {
		b.Rename(x, outLastHidden)
		return
	}
	b.Rename(b.gemm(b.bertPooler(prefix+"pooler", x, h), "classifier", h, len(c.Labels)), outLogits)
}

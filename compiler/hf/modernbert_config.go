package hf

import (
	"fmt"
	"math"

	"github.com/sqc-dev/sqc/compiler"
)

// ModernBertConfig's class defaults (transformers' configuration_modernbert.py),
// which answerdotai/ModernBERT-base's config.json matches.
const (
	modernBertGlobalTheta = 160000.0
	modernBertLocalTheta  = 10000.0
	modernBertEveryN      = 3
	modernBertWindow      = 128
	modernBertPadTokenID  = 50283
)

// ModernBERT's layer_types values.
const (
	layerFull    = "full_attention"
	layerSliding = "sliding_attention"
)

// parseModernBERT fills cfg from ModernBertConfig's keys with its class
// defaults: transformers 4.48's (global_attn_every_n_layers,
// global_rope_theta, local_rope_theta) and 5's (layer_types,
// rope_parameters) alike. Rotary scaling (rope_scaling, a rope_type other
// than "default") is refused: sqc computes the default rotary embedding
// only.
func parseModernBERT(cfg *Config, raw rawConfig, path string) error {
	cfg.VocabSize = intOr(raw.VocabSize, 50368)
	cfg.MaxPositions = intOr(raw.MaxPositions, 8192)
	cfg.HiddenSize = intOr(raw.HiddenSize, 768)
	cfg.NumLayers = intOr(raw.NumHiddenLayers, 22)
	cfg.NumHeads = intOr(raw.NumAttnHeads, 12)
	cfg.IntermediateSize = intOr(raw.IntermediateSize, 1152)
	cfg.HiddenAct = strOr(raw.HiddenActivation, ActGELU)
	cfg.LayerNormEps = 1e-5
	if raw.NormEps != nil {
		cfg.LayerNormEps = *raw.NormEps
	}
	cfg.PadTokenID = intOr(raw.PadTokenID, modernBertPadTokenID)
	m := &cfg.ModernBERT
	m.NormBias, m.AttentionBias, m.MLPBias, m.ClassifierBias = boolOr(raw.NormBias, false), boolOr(raw.AttentionBias, false),
		boolOr(raw.MLPBias, false), boolOr(raw.ClassifierBias, false)
	m.DecoderBias = boolOr(raw.DecoderBias, true)
	m.ClassifierActivation = strOr(raw.ClassifierActivation, ActGELU)
	m.ClassifierPooling = strOr(raw.ClassifierPooling, "cls")
	m.Window = intOr(raw.LocalAttention, modernBertWindow)
	m.GlobalTheta, m.LocalTheta = modernBertGlobalTheta, modernBertLocalTheta
	if raw.GlobalRopeTheta != nil {
		m.GlobalTheta = *raw.GlobalRopeTheta
	}
	if raw.LocalRopeTheta != nil {
		m.LocalTheta = *raw.LocalRopeTheta
	}
	if len(raw.RopeScaling) > 0 {
		return compiler.BadInput(path, "rope_scaling", fmt.Errorf("%w: rotary scaling; sqc computes the default rotary embedding only", compiler.ErrUnknownModel))
	}
	for kind, p := range raw.RopeParameters {
		if p == nil {
			continue
		}
		if t := strOr(p.RopeType, "default"); t != "default" {
			return compiler.BadInput(path, "rope_parameters."+kind+".rope_type",
				fmt.Errorf("%w: %q; sqc computes the default rotary embedding only", compiler.ErrUnknownModel, t))
		}
		if p.RopeTheta == nil {
			continue
		}
		switch kind {
		case layerFull:
			m.GlobalTheta = *p.RopeTheta
		case layerSliding:
			m.LocalTheta = *p.RopeTheta
		default:
			return compiler.BadInput(path, "rope_parameters", fmt.Errorf("%w: layer type %q (want %s or %s)", compiler.ErrMalformed, kind, layerFull, layerSliding))
		}
	}
	if raw.LayerTypes != nil {
		if len(raw.LayerTypes) != cfg.NumLayers {
			return compiler.BadInput(path, "layer_types", fmt.Errorf("%w: %d entries for %d layers", compiler.ErrMalformed, len(raw.LayerTypes), cfg.NumLayers))
		}
		for i, t := range raw.LayerTypes {
			switch t {
			case layerFull, layerSliding:
				m.Sliding = append(m.Sliding, t == layerSliding)
			default:
				return compiler.BadInput(path, fmt.Sprintf("layer_types[%d]", i), fmt.Errorf("%w: %q (want %s or %s)", compiler.ErrMalformed, t, layerFull, layerSliding))
			}
		}
		return nil
	}
	every := intOr(raw.GlobalAttnEveryN, modernBertEveryN)
	if every < 1 || every > maxLayers {
		return compiler.BadInput(path, "global_attn_every_n_layers", fmt.Errorf("%w: %d is out of range [1, %d]", compiler.ErrMalformed, every, maxLayers))
	}
	for i := range max(cfg.NumLayers, 0) {
		if i >= maxLayers {
			break // Validate refuses the count
		}
		m.Sliding = append(m.Sliding, i%every != 0)
	}
	return nil
}

// validateModernBERT checks ModernBERT's own settings: an even head size
// (the rotary embedding pairs its halves), a window of at least 0, finite
// positive rotary bases, a layer type per layer, and a head activation and
// pooling sqc computes.
func (c *Config) validateModernBERT(fail func(object, format string, args ...any) error) error {
	m := &c.ModernBERT
	if c.HiddenSize%c.NumHeads == 0 && c.HeadSize()%2 != 0 {
		return fail("num_attention_heads", "head size %d is odd; the rotary embedding needs an even one", c.HeadSize())
	}
	if m.Window < 0 || m.Window > maxDim {
		return fail("local_attention", "%d is out of range [0, %d]", m.Window, maxDim)
	}
	for key, theta := range map[string]float64{"global_rope_theta": m.GlobalTheta, "local_rope_theta": m.LocalTheta} {
		if !(theta > 1) || math.IsInf(theta, 0) {
			return fail(key, "%v is not a finite number above 1", theta)
		}
	}
	if len(m.Sliding) != c.NumLayers {
		return fail("layer_types", "%d layer types for %d layers", len(m.Sliding), c.NumLayers)
	}
	if err := c.checkActivation("classifier_activation", m.ClassifierActivation); err != nil {
		return err
	}
	if p := m.ClassifierPooling; p != "cls" && p != "mean" {
		return fail("classifier_pooling", "%q (want cls or mean)", p)
	}
	return nil
}

// modernBertParameters counts ModernBERT's weights: the word embeddings
// and their norm; per layer the attention norm (not layer 0's), Wqkv, Wo,
// the MLP norm, Wi (both GLU halves) and Wo, with the biases the config
// gives them; the final norm; a classifier's head (dense, norm) and
// classifier.
func (c *Config) modernBertParameters() int64 {
	m := &c.ModernBERT
	h, i := int64(c.HiddenSize), int64(c.IntermediateSize)
	b := func(on bool, n int64) int64 {
		if on {
			return n
		}
		return 0
	}
	norm := h + b(m.NormBias, h)
	layer := norm + 3*h*h + b(m.AttentionBias, 3*h) + h*h + b(m.AttentionBias, h) + norm + 2*i*h + b(m.MLPBias, 2*i) + i*h + b(m.MLPBias, h)
	// The embeddings' norm; layer 0 has no attention norm; the final norm.
	n := int64(c.VocabSize)*h + norm + int64(c.NumLayers)*layer - norm + norm
	if c.IsClassifier() {
		n += h*h + b(m.ClassifierBias, h) + norm + int64(len(c.Labels))*(h+1)
	}
	return n
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

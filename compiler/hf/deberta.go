package hf

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// DeBERTaConfig holds the DebertaV2Config keys (model_type "deberta-v2":
// DeBERTa-v2 and v3, and the classifiers and rerankers fine-tuned from
// them) no other family has.
type DeBERTaConfig struct {
	// RelativeAttention is relative_attention: the disentangled attention
	// terms (PosAttTypes) on every layer's scores.
	RelativeAttention bool
	// PosAttTypes is pos_att_type, a subset of "c2p" (content to
	// position: Q · the key projection of the relative embeddings) and
	// "p2c" (position to content: K · their query projection), in
	// config.json's order.
	PosAttTypes []string
	// PositionBuckets is position_buckets: with it positive, relative
	// distances are bucketed logarithmically beyond half of it, and the
	// relative embedding table has 2·PositionBuckets rows; otherwise
	// 2·MaxRelativePositions.
	PositionBuckets int
	// MaxRelativePositions is max_relative_positions, or
	// max_position_embeddings where config.json gives one below 1.
	MaxRelativePositions int
	// NormRelEmbeddings is norm_rel_ebd containing "layer_norm": the
	// encoder's LayerNorm applies to the relative embeddings.
	NormRelEmbeddings bool
	// ShareAttKey is share_att_key: the relative embeddings go through
	// the layer's own query_proj and key_proj rather than pos_query_proj
	// and pos_key_proj.
	ShareAttKey bool
	// PositionBiasedInput is position_biased_input: absolute position
	// embeddings added to the word embeddings (DeBERTa-v3: false).
	PositionBiasedInput bool
	// PoolerAct is pooler_hidden_act, the ContextPooler's activation.
	PoolerAct string
}

// AttSpan is the relative distance the embedding table covers either way:
// position_buckets, or max_relative_positions without buckets.
func (d *DeBERTaConfig) AttSpan() int {
	if d.PositionBuckets > 0 {
		return d.PositionBuckets
	}
	return d.MaxRelativePositions
}

// has reports whether pos_att_type lists term ("c2p" or "p2c").
func (d *DeBERTaConfig) has(term string) bool { return slices.Contains(d.PosAttTypes, term) }

// Disentangled attention terms (pos_att_type).
const (
	debertaC2P = "c2p"
	debertaP2C = "p2c"
)

// debertaRaw holds DebertaV2Config's own keys (embedded in rawConfig; the
// BertConfig names it shares are rawConfig's).
type debertaRaw struct {
	RelativeAttention    *bool           `json:"relative_attention"`
	MaxRelativePositions *int            `json:"max_relative_positions"`
	PositionBuckets      *int            `json:"position_buckets"`
	PosAttType           json.RawMessage `json:"pos_att_type"`
	NormRelEbd           *string         `json:"norm_rel_ebd"`
	ShareAttKey          *bool           `json:"share_att_key"`
	PositionBiasedInput  *bool           `json:"position_biased_input"`
	ConvKernelSize       *int            `json:"conv_kernel_size"`
	TalkingHead          *bool           `json:"talking_head"` // v1 only
	AttentionHeadSize    *int            `json:"attention_head_size"`
	PoolerHiddenSize     *int            `json:"pooler_hidden_size"`
	PoolerHiddenAct      *string         `json:"pooler_hidden_act"`
}

// parseDeBERTa fills cfg from DebertaV2Config's keys with its class
// defaults (the xlarge shape; published checkpoints set their own).
// Refused, naming the key: the convolution layer of DeBERTa-v2-xlarge and
// xxlarge (conv_kernel_size), a head size other than hidden/heads, a
// pooler of another width, and pos_att_type terms other than c2p and p2c.
func parseDeBERTa(cfg *Config, raw rawConfig, path string) error {
	refuse := func(key, format string, args ...any) error { return refuseKey(path, key, format, args...) }
	v1 := cfg.ModelType == ModelDeBERTa
	if v1 { // DebertaConfig's defaults: deberta-base's shape
		cfg.VocabSize = intOr(raw.VocabSize, 50265)
		cfg.HiddenSize = intOr(raw.HiddenSize, 768)
		cfg.NumLayers = intOr(raw.NumHiddenLayers, 12)
		cfg.NumHeads = intOr(raw.NumAttnHeads, 12)
		cfg.IntermediateSize = intOr(raw.IntermediateSize, 3072)
	} else {
		cfg.VocabSize = intOr(raw.VocabSize, 128000)
		cfg.HiddenSize = intOr(raw.HiddenSize, 1536)
		cfg.NumLayers = intOr(raw.NumHiddenLayers, 24)
		cfg.NumHeads = intOr(raw.NumAttnHeads, 24)
		cfg.IntermediateSize = intOr(raw.IntermediateSize, 6144)
	}
	cfg.HiddenAct = strOr(raw.HiddenAct, ActGELU)
	cfg.TypeVocabSize = intOr(raw.TypeVocabSize, 0)
	cfg.LayerNormEps = floatOr(raw.LayerNormEps, 1e-7)
	if raw.EmbeddingSize != nil && *raw.EmbeddingSize != cfg.HiddenSize {
		cfg.EmbeddingSize = *raw.EmbeddingSize // embed_proj
	}
	if k := intOr(raw.ConvKernelSize, 0); k > 0 {
		return refuse("conv_kernel_size", "%d: the convolution after the first layer (DeBERTa-v2-xlarge and xxlarge) is not supported", k)
	}
	if raw.AttentionHeadSize != nil && cfg.NumHeads > 0 && *raw.AttentionHeadSize != cfg.HiddenSize/cfg.NumHeads {
		return refuse("attention_head_size", "%d with %d heads of a %d-wide hidden state is not supported; sqc needs hidden_size / num_attention_heads",
			*raw.AttentionHeadSize, cfg.NumHeads, cfg.HiddenSize)
	}
	if p := intOr(raw.PoolerHiddenSize, cfg.HiddenSize); p != cfg.HiddenSize {
		return refuse("pooler_hidden_size", "%d differs from hidden_size %d; the classifier reads a hidden_size-wide pooler", p, cfg.HiddenSize)
	}
	d := &cfg.DeBERTa
	d.RelativeAttention = boolOr(raw.RelativeAttention, false)
	if v1 && boolOr(raw.TalkingHead, false) {
		return refuse("talking_head", "true: DeBERTa v1's head-mixing projections are not supported")
	}
	d.PositionBuckets = intOr(raw.PositionBuckets, -1)
	d.MaxRelativePositions = intOr(raw.MaxRelativePositions, -1)
	if d.MaxRelativePositions < 1 {
		d.MaxRelativePositions = cfg.MaxPositions
	}
	for _, part := range strings.Split(strings.ToLower(strOr(raw.NormRelEbd, "none")), "|") {
		d.NormRelEmbeddings = d.NormRelEmbeddings || strings.TrimSpace(part) == "layer_norm"
	}
	d.ShareAttKey = boolOr(raw.ShareAttKey, false)
	if v1 {
		// DebertaConfig has none of these (modeling_deberta.py reads none).
		d.PositionBuckets, d.NormRelEmbeddings, d.ShareAttKey = -1, false, false
	}
	d.PositionBiasedInput = boolOr(raw.PositionBiasedInput, true)
	d.PoolerAct = strOr(raw.PoolerHiddenAct, ActGELU)
	types, err := parsePosAttType(raw.PosAttType)
	if err != nil {
		return compiler.BadInput(path, "pos_att_type", err)
	}
	for _, t := range types {
		if t != debertaC2P && t != debertaP2C {
			return refuse("pos_att_type", "%q; sqc computes c2p and p2c", t)
		}
	}
	d.PosAttTypes = types
	return nil
}

// parsePosAttType reads pos_att_type as DebertaV2Config does: a list of
// names, or one string of them joined by "|"; absent or null is none.
func parsePosAttType(data json.RawMessage) ([]string, error) {
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(data, &list); err == nil {
		for i := range list {
			list[i] = strings.ToLower(strings.TrimSpace(list[i]))
		}
		return list, nil
	}
	var joined string
	if err := json.Unmarshal(data, &joined); err != nil {
		return nil, fmt.Errorf("%w: %s is neither a list of names nor a string of them joined by \"|\"", compiler.ErrMalformed, data)
	}
	var out []string
	for _, part := range strings.Split(joined, "|") {
		if part = strings.ToLower(strings.TrimSpace(part)); part != "" {
			out = append(out, part)
		}
	}
	return out, nil
}

// validateDeBERTa checks DeBERTa's own settings.
func (c *Config) validateDeBERTa(fail func(object, format string, args ...any) error) error {
	d := &c.DeBERTa
	if c.TypeVocabSize < 0 {
		return fail("type_vocab_size", "%d is negative", c.TypeVocabSize)
	}
	if err := c.checkActivation("pooler_hidden_act", d.PoolerAct); err != nil {
		return err
	}
	if !d.RelativeAttention {
		return nil
	}
	if d.PositionBuckets > 0 {
		// make_log_bucket_position divides by log((max_position-1)/mid),
		// mid = position_buckets/2: both must be positive.
		if d.PositionBuckets < 2 || d.PositionBuckets > maxDim {
			return fail("position_buckets", "%d is out of range [2, %d]", d.PositionBuckets, maxDim)
		}
		if mid := d.PositionBuckets / 2; d.MaxRelativePositions-1 <= mid {
			return fail("max_relative_positions", "%d leaves no distance for log buckets beyond position_buckets/2 = %d", d.MaxRelativePositions, mid)
		}
	}
	if d.MaxRelativePositions > maxDim {
		return fail("max_relative_positions", "%d is out of range [1, %d]", d.MaxRelativePositions, maxDim)
	}
	return nil
}

// debertaParameters counts DebertaV2Model's weights: the word (position,
// type) embeddings, embed_proj and their LayerNorm; the relative
// embeddings and their norm; per layer query_, key_ and value_proj (and
// pos_key_ and pos_query_proj without share_att_key), the output dense,
// the FFN and two norms; a classifier's pooler and classifier.
func (c *Config) debertaParameters() int64 {
	h, i, e, d := int64(c.HiddenSize), int64(c.IntermediateSize), int64(c.EmbeddingWidth()), &c.DeBERTa
	total := (int64(c.VocabSize) + int64(c.TypeVocabSize)) * e
	if d.PositionBiasedInput {
		total += int64(c.MaxPositions) * e
	}
	if e != h {
		total += e * h
	}
	total += 2 * h
	layer := 4*(h*h+h) + 2*h*i + i + h + 4*h
	if d.RelativeAttention {
		total += 2 * int64(d.AttSpan()) * h
		if d.NormRelEmbeddings {
			total += 2 * h
		}
		if !d.ShareAttKey {
			layer += int64(len(d.PosAttTypes)) * (h*h + h)
		}
		if c.ModelType == ModelDeBERTa && d.has(debertaC2P) {
			layer -= h // v1's pos_proj has no bias
		}
	}
	if c.ModelType == ModelDeBERTa {
		layer -= h // v1's in_proj: q_bias and v_bias, no key bias
	}
	total += int64(c.NumLayers) * layer
	if c.IsClassifier() {
		total += h*h + h + int64(len(c.Labels))*(h+1)
	}
	return total
}

// buildDeBERTa emits DebertaV2Model (last_hidden_state) or
// DebertaV2ForSequenceClassification, following transformers'
// modeling_deberta_v2.py (eval mode): word (+ absolute position, + token
// type) embeddings, embed_proj, LayerNorm; BERT's post-norm layers with
// disentangled self-attention; for the classifier, the ContextPooler
// (dense + pooler_hidden_act on the first token) and the classifier.
//
// The attention's relative terms are position-only index tables over
// per-layer products with constant relative-embedding projections:
// c2p[b,h,i,j] = Q[b,h,i]·posK[h, c2p_pos(i,j)], p2c[b,h,i,j] =
// K[b,h,j]·posQ[h, p2c_pos(j,i)], each divided by √(d·(1 + terms)) like
// Q·Kᵀ, their sum added to the scores before the mask (sqc.Attention's
// bias, [batch, heads, seq, seq]).
//
// Rows of padding differ from transformers': DeBERTa masks padded
// queries as well as keys (its softmax gives them all-zero weights) and
// multiplies the embeddings by the mask, where sqc masks keys only, as
// every other family does. No real token reads a padded row (their keys
// and values are masked), so the real tokens' outputs, the pooled first
// token and the logits are unaffected.
func buildDeBERTa(b *builder, prefix string) {
	c, d := b.cfg, &b.cfg.DeBERTa
	h, inter := c.HiddenSize, c.IntermediateSize
	x := b.debertaEmbeddings(prefix + "embeddings")
	mask := b.bertMaskBias()
	var rel *debertaRelative
	if d.RelativeAttention && len(d.PosAttTypes) > 0 {
		rel = b.debertaRelativeTables(prefix + "encoder")
	}
	for l := range c.NumLayers {
		scope := prefix + "encoder.layer." + strconv.Itoa(l)
		attn := scope + ".attention"
		ctx := b.debertaSelfAttention(attn+".self", x, mask, rel)
		out := b.linear(ctx, attn+".output.dense", h, h)
		x = b.layerNorm(b.Op("Add", attn+".output/residual", out, x), attn+".output.LayerNorm")
		ffn := b.activation(b.linear(x, scope+".intermediate.dense", h, inter), scope+".intermediate")
		y := b.linear(ffn, scope+".output.dense", inter, h)
		x = b.layerNorm(b.Op("Add", scope+".output/residual", y, x), scope+".output.LayerNorm")
	}
	if !c.IsClassifier() {
		b.Rename(x, outLastHidden)
		return
	}
	pooled := b.activationNamed(b.gemm(b.firstToken(x, "pooler"), "pooler.dense", h, h), "pooler", d.PoolerAct)
	b.Rename(b.gemm(pooled, "classifier", h, len(c.Labels)), outLogits)
}

// debertaEmbeddings is DebertaV2Embeddings without its multiplication by
// the mask (see buildDeBERTa): word (+ position, + token type)
// embeddings, embed_proj where the tables are narrower than the hidden
// state, LayerNorm.
func (b *builder) debertaEmbeddings(scope string) string {
	c := b.cfg
	e := int64(c.EmbeddingWidth())
	x := b.Gather(b.weight(scope+".word_embeddings.weight", int64(c.VocabSize), e), inInputIDs, scope+".word_embeddings")
	if c.DeBERTa.PositionBiasedInput {
		positions := b.PositionRows(b.weight(scope+".position_embeddings.weight", int64(c.MaxPositions), e), inInputIDs, scope+".position_embeddings")
		x = b.Op("Add", scope+"/add_positions", x, positions)
	}
	if c.TypeVocabSize > 0 {
		types := b.Gather(b.weight(scope+".token_type_embeddings.weight", int64(c.TypeVocabSize), e), inTokenTypeIDs, scope+".token_type_embeddings")
		x = b.Op("Add", scope+"/add_token_types", x, types)
	}
	if int(e) != c.HiddenSize {
		x = b.modernBertLinear(x, scope+".embed_proj", int(e), c.HiddenSize, false)
	}
	return b.layerNorm(x, scope+".LayerNorm")
}

// debertaRelative holds what every layer's relative terms share: the
// (normed) relative embeddings and the gather indices of c2p and p2c,
// expanded to [batch, heads, seq, seq].
type debertaRelative struct {
	embeddings string // [2·span, hidden]
	c2pIndex   string // c2p_pos: clamp(bucket(i - j) + span, 0, 2·span - 1)
	p2cIndex   string // p2c_pos: clamp(span - bucket(i - j), 0, 2·span - 1)
}

// debertaRelativeTables builds the encoder's relative embeddings
// (LayerNorm'd where norm_rel_ebd says so) and the gather indices of the
// relative terms: build_relative_position's bucketed i - j, shifted by
// the span and clamped to the table.
func (b *builder) debertaRelativeTables(scope string) *debertaRelative {
	c, d := b.cfg, &b.cfg.DeBERTa
	span := int64(d.AttSpan())
	emb := b.weight(scope+".rel_embeddings.weight", 2*span, int64(c.HiddenSize))
	if d.NormRelEmbeddings {
		emb = b.layerNorm(emb, scope+".LayerNorm")
	}
	rel := b.debertaRelativePositions(scope)
	// [batch, heads, seq, seq]: the batch from the input ids (a packed
	// batch's hidden state has none), the sequence from the table.
	batch := b.Op("Slice", scope+"/batch_dim", b.Op("Shape", scope+"/ids_shape", inInputIDs), b.Ints("const.i64.[0]", 0), b.Ints("const.i64.[1]", 1))
	batchHeads := b.OpAttrs("Concat", scope+"/index_shape", map[string]compiler.Attr{"axis": compiler.IntAttr(0)},
		batch, b.Ints("const.i64.["+strconv.Itoa(c.NumHeads)+"]", int64(c.NumHeads)), b.Op("Shape", scope+"/relative_shape", rel))
	index := func(shifted, name string) string {
		lo, hi := b.IntScalar("const.i64.0", 0), b.IntScalar("const.i64.last_relative."+strconv.FormatInt(2*span-1, 10), 2*span-1)
		clamped := b.Op("Min", scope+"/"+name+"_max", b.Op("Max", scope+"/"+name+"_min", shifted, lo), hi)
		return b.Op("Expand", scope+"/"+name+"_index", clamped, batchHeads)
	}
	spanConst := b.IntScalar("const.i64.att_span."+strconv.FormatInt(span, 10), span)
	return &debertaRelative{
		embeddings: emb,
		c2pIndex:   index(b.Op("Add", scope+"/c2p_shift", rel, spanConst), "c2p_pos"),
		p2cIndex:   index(b.Op("Sub", scope+"/p2c_shift", spanConst, rel), "p2c_pos"),
	}
}

// debertaRelativePositions is build_relative_position for the input ids'
// sequence length (as MPNet's bias, not the hidden state's, which a packed
// batch holds as [tokens, hidden]): i - j for query i and key j, [seq, seq], through
// make_log_bucket_position when position_buckets is positive, in the
// same float32 operations as PyTorch so every distance lands in the same
// bucket: distances below mid = buckets/2 stay themselves, longer ones
// become sign · (ceil(log(|n| / mid) / log((max_position - 1) / mid) ·
// (mid - 1)) + mid).
func (b *builder) debertaRelativePositions(scope string) string {
	d := &b.cfg.DeBERTa
	shape := b.Op("Shape", scope+"/seq_shape", inInputIDs)
	seqLen := b.OpAttrs("Gather", scope+"/seq_len", map[string]compiler.Attr{"axis": compiler.IntAttr(0)}, shape, b.IntScalar("const.i64.1", 1))
	ids := b.Op("Range", scope+"/positions", b.IntScalar("const.i64.0", 0), seqLen, b.IntScalar("const.i64.1", 1))
	rel := b.Op("Sub", scope+"/relative_position",
		b.Op("Unsqueeze", scope+"/query_positions", ids, b.Ints("const.i64.[1]", 1)),
		b.Op("Unsqueeze", scope+"/key_positions", ids, b.Ints("const.i64.[0]", 0)))
	if d.PositionBuckets <= 0 {
		return rel
	}
	mid := int64(d.PositionBuckets / 2)
	midName := strconv.FormatInt(mid, 10)
	sign := b.Op("Sign", scope+"/sign", rel)
	near := b.Op("And", scope+"/is_near",
		b.Op("Less", scope+"/below_mid", rel, b.IntScalar("const.i64.mid."+midName, mid)),
		b.Op("Greater", scope+"/above_minus_mid", rel, b.IntScalar("const.i64.minus_mid."+midName, -mid)))
	absPos := b.Op("Where", scope+"/abs_pos", near, b.IntScalar("const.i64.mid_minus_1."+midName, mid-1), b.Op("Abs", scope+"/abs", rel))
	ratio := b.Op("Div", scope+"/ratio", b.CastFloat(absPos, scope+"/abs_pos_f32"), b.Scalar("const.mid."+midName, float32(mid)))
	logDivisor := float32(math.Log(float64(float32(float64(d.MaxRelativePositions-1) / float64(mid)))))
	logPos := b.Op("Div", scope+"/log_ratio", b.Op("Log", scope+"/log", ratio), b.Scalar("const.log_max_position_ratio", logDivisor))
	logPos = b.Op("Ceil", scope+"/log_ceil", b.Op("Mul", scope+"/log_scaled", logPos, b.Scalar("const.mid_minus_1."+midName, float32(mid-1))))
	logPos = b.Op("Add", scope+"/log_pos", logPos, b.Scalar("const.mid."+midName, float32(mid)))
	bucket := b.Op("Where", scope+"/bucket_pos", b.Op("LessOrEqual", scope+"/is_exact", absPos, b.IntScalar("const.i64.mid."+midName, mid)),
		b.CastFloat(rel, scope+"/relative_f32"), b.Op("Mul", scope+"/signed_log_pos", logPos, b.CastFloat(sign, scope+"/sign_f32")))
	return b.OpAttrs("Cast", scope+"/bucket_i64", map[string]compiler.Attr{"to": compiler.IntAttr(compiler.Int64.ONNX())}, bucket)
}

// debertaSelfAttention is DisentangledSelfAttention: softmax(Q·Kᵀ / s +
// c2p / s + p2c / s + mask)·V per head, s = √(d · (1 + the number of
// relative terms)), as transformers computes it (score = c2p / s, then
// += p2c / s, then added to the scaled Q·Kᵀ).
func (b *builder) debertaSelfAttention(scope, x, mask string, rel *debertaRelative) string {
	c, d := b.cfg, &b.cfg.DeBERTa
	h, dh := c.HiddenSize, c.HeadSize()
	q := b.linear(x, scope+".query_proj", h, h)
	k := b.linear(x, scope+".key_proj", h, h)
	v := b.linear(x, scope+".value_proj", h, h)
	factor := 1
	if d.RelativeAttention {
		factor += len(d.PosAttTypes)
	}
	// torch.sqrt(torch.tensor(d, dtype=torch.float) * scale_factor), in
	// float32: the square root of an integer rounds the same either way.
	scale := b.Scalar(fmt.Sprintf("const.deberta_scale.%d.%d", dh, factor), float32(math.Sqrt(float64(dh*factor))))
	bias := ""
	if rel != nil {
		// Each term is [batch, heads, seq, 2·span] products of a head's
		// rows with the projected relative embeddings, gathered at the
		// relative distance; p2c's gather runs over keys and is transposed.
		term := func(name, proj, sharedProj, index, rows string, transpose bool) string {
			if !d.ShareAttKey {
				sharedProj = proj
			}
			// [2·span, hidden]: the projection's weights, under this
			// term's own node names (query_proj and key_proj also
			// project the hidden state).
			param := scope + "." + sharedProj
			pos := b.Op("Add", scope+"/"+name+"_pos_proj/Add",
				b.Op("MatMul", scope+"/"+name+"_pos_proj/MatMul", rel.embeddings, b.weightT(param+".weight", int64(h), int64(h))),
				b.weight(param+".bias", int64(h)))
			pos = b.OpAttrs("Transpose", scope+"/"+name+"_pos_by_head", map[string]compiler.Attr{"perm": compiler.IntsAttr(1, 2, 0)},
				b.Op("Reshape", scope+"/"+name+"_pos_heads", pos, b.Ints(fmt.Sprintf("const.rel_heads_shape.%d.%d", c.NumHeads, dh), 0, int64(c.NumHeads), int64(dh))))
			att := b.Op("MatMul", scope+"/"+name+"_att", b.splitHeads(rows, scope+"."+name+"_rows", 0, 2, 1, 3), pos)
			att = b.OpAttrs("GatherElements", scope+"/"+name+"_gather", map[string]compiler.Attr{"axis": compiler.IntAttr(3)}, att, index)
			if transpose {
				att = b.OpAttrs("Transpose", scope+"/"+name+"_transpose", map[string]compiler.Attr{"perm": compiler.IntsAttr(0, 1, 3, 2)}, att)
			}
			return b.Op("Div", scope+"/"+name+"_scaled", att, scale)
		}
		// c2p first, then p2c, whatever pos_att_type's order.
		if d.has(debertaC2P) {
			bias = term("c2p", "pos_key_proj", "key_proj", rel.c2pIndex, q, false)
		}
		if d.has(debertaP2C) {
			p2c := term("p2c", "pos_query_proj", "query_proj", rel.p2cIndex, k, true)
			if bias == "" {
				bias = p2c
			} else {
				bias = b.Op("Add", scope+"/relative_scores", bias, p2c)
			}
		}
	}
	return b.BiasedSelfAttention(scope, q, k, v, "Div", scale, bias, mask, c.NumHeads, dh)
}

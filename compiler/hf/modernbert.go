package hf

import (
	"fmt"
	"math"
	"strconv"

	"github.com/sqc-dev/sqc/compiler"
)

// buildModernBERT emits ModernBertModel or
// ModernBertForSequenceClassification after transformers'
// modeling_modernbert.py (eval mode, eager attention; SDPA computes the
// same): the word embeddings and their norm; pre-norm layers (layer 0
// without an attention norm) of a fused Wqkv projection, the rotary
// embedding on Q and K (the full layers' theta or the sliding layers'),
// attention within the padding mask (and, on sliding layers, within the
// window: the mask with float32's lowest where |i - j| > window/2), Wo,
// the residual, then the norm, the GLU feed-forward act(input) * gate of
// Wi's two halves, Wo and the residual; the final norm; and for the
// classifier, the [CLS] token or the mean over the tokens, the head's
// dense + activation + norm and the classifier. The ops are those
// torch.onnx.export writes for it, so the passes fuse both alike. prefix
// is "model." for the classifier (and a masked-LM checkpoint read as the
// base model, safetensors' prefix variants), "" for the base model.
func buildModernBERT(b *builder, prefix string) {
	c, m := b.cfg, b.cfg.ModernBERT
	h, inter := c.HiddenSize, c.IntermediateSize
	words := b.Gather(b.weight(prefix+"embeddings.tok_embeddings.weight", int64(c.VocabSize), int64(h)), inInputIDs, prefix+"embeddings.tok_embeddings")
	x := b.modernBertNorm(words, prefix+"embeddings.norm")
	mask := b.bertMaskBias()
	window := b.modernBertWindow(mask, "sliding_window_mask", m.Window/2)
	global := b.modernBertRotaryTables("rotary_emb.global", m.GlobalTheta)
	local := b.modernBertRotaryTables("rotary_emb.local", m.LocalTheta)
	for l := range c.NumLayers {
		scope := prefix + "layers." + strconv.Itoa(l)
		addend, tables := mask, global
		if m.Sliding[l] {
			addend, tables = window, local
		}
		in := x
		if l > 0 {
			in = b.modernBertNorm(x, scope+".attn_norm")
		}
		x = b.Op("Add", scope+"/attn_residual", x, b.modernBertAttention(scope+".attn", in, addend, tables))
		y := b.modernBertNorm(x, scope+".mlp_norm")
		wi := b.modernBertLinear(y, scope+".mlp.Wi", h, 2*inter, m.MLPBias)
		act := b.activationNamed(b.columns(wi, scope+".mlp/input", 0, inter), scope+".mlp.act", c.HiddenAct)
		glu := b.Op("Mul", scope+".mlp/glu", act, b.columns(wi, scope+".mlp/gate", inter, 2*inter))
		x = b.Op("Add", scope+"/mlp_residual", x, b.modernBertLinear(glu, scope+".mlp.Wo", inter, h, m.MLPBias))
	}
	x = b.modernBertNorm(x, prefix+"final_norm")
	if !c.IsClassifier() {
		b.Rename(x, outLastHidden)
		return
	}
	var pooled string
	if m.ClassifierPooling == "mean" {
		pooled = b.meanOverTokens(x, "pooling")
	} else {
		pooled = b.firstToken(x, "pooling")
	}
	b.Rename(b.modernBertLinear(b.modernBertHead(pooled), "classifier", h, len(c.Labels), true), outLogits)
}

// modernBertNorm is nn.LayerNorm(hidden, eps=norm_eps, bias=norm_bias).
func (b *builder) modernBertNorm(x, param string) string {
	hs := int64(b.cfg.HiddenSize)
	scale, bias := b.weight(param+".weight", hs), ""
	if b.cfg.ModernBERT.NormBias {
		bias = b.weight(param+".bias", hs)
	}
	return b.LayerNorm(x, scale, bias, param+"/LayerNormalization", float32(b.cfg.LayerNormEps))
}

// modernBertLinear is nn.Linear(in, out, bias=bias).
func (b *builder) modernBertLinear(x, param string, in, out int, bias bool) string {
	y := b.Op("MatMul", param+"/MatMul", x, b.weightT(param+".weight", int64(out), int64(in)))
	if !bias {
		return y
	}
	return b.Op("Add", param+"/Add", y, b.weight(param+".bias", int64(out)))
}

// columns is x[..., from:to].
func (b *builder) columns(x, scope string, from, to int) string {
	return b.Op("Slice", scope, x, b.Ints(fmt.Sprintf("const.i64.[%d]", from), int64(from)), b.Ints(fmt.Sprintf("const.i64.[%d]", to), int64(to)),
		b.Ints("const.i64.[-1]", -1))
}

// modernBertAttention is ModernBertAttention on x: Wqkv, Q, K and V split
// per head, the rotary embedding of Q and K by tables (cos and sin, [1,
// seq, head size]), softmax(Q·Kᵀ · head_size^-0.5 + addend)·V, the heads
// merged, Wo.
func (b *builder) modernBertAttention(scope, x, addend string, tables [2]string) string {
	c := b.cfg
	h := c.HiddenSize
	qkv := b.modernBertLinear(x, scope+".Wqkv", h, 3*h, c.ModernBERT.AttentionBias)
	return b.modernBertLinear(b.rotaryAttention(scope, qkv, addend, tables), scope+".Wo", h, h, c.ModernBERT.AttentionBias)
}

// rotaryAttention is attention on a fused QKV projection qkv ([batch,
// seq, 3·hidden]: Q, K, V in that order): the heads split, the rotary
// embedding of Q and K by tables, softmax(Q·Kᵀ · head_size^-0.5 +
// addend)·V, the heads merged (ModernBERT, GTE).
func (b *builder) rotaryAttention(scope, qkv, addend string, tables [2]string) string {
	h, d := b.cfg.HiddenSize, b.cfg.HeadSize()
	heads := [3]string{}
	for i, part := range []string{"query", "key", "value"} {
		heads[i] = b.splitHeads(b.columns(qkv, scope+"/"+part, i*h, (i+1)*h), scope+"."+part, 0, 2, 1, 3)
	}
	q, k := b.rotate(heads[0], scope+".query", tables), b.rotate(heads[1], scope+".key", tables)
	kT := b.OpAttrs("Transpose", scope+".key/transposed", map[string]compiler.Attr{"perm": compiler.IntsAttr(0, 1, 3, 2)}, k)
	scores := b.Op("Mul", scope+"/scaled_scores", b.Op("MatMul", scope+"/scores", q, kT),
		b.Scalar(fmt.Sprintf("const.inv_sqrt_head_size.%d", d), float32(math.Pow(float64(d), -0.5))))
	probs := b.Softmax(b.Op("Add", scope+"/masked_scores", scores, addend), scope+"/probs")
	return b.mergeHeads(b.Op("MatMul", scope+"/context", probs, heads[2]), scope+".context")
}

// rotate is apply_rotary_pos_emb on split heads x [batch, heads, seq, d]:
// x·cos + rotate_half(x)·sin, rotate_half(x) = cat(-x[..., d/2:],
// x[..., :d/2]), the tables unsqueezed at the head axis.
func (b *builder) rotate(x, scope string, tables [2]string) string {
	d := b.cfg.HeadSize()
	rot := b.OpAttrs("Concat", scope+"/rotate_half", map[string]compiler.Attr{"axis": compiler.IntAttr(-1)},
		b.Op("Neg", scope+"/neg_upper", b.columns(x, scope+"/upper", d/2, d)), b.columns(x, scope+"/lower", 0, d/2))
	cos := b.Op("Unsqueeze", scope+"/cos", tables[0], b.Ints("const.i64.[1]", 1))
	sin := b.Op("Unsqueeze", scope+"/sin", tables[1], b.Ints("const.i64.[1]", 1))
	return b.Op("Add", scope+"/rotary", b.Op("Mul", scope+"/x_cos", x, cos), b.Op("Mul", scope+"/rotated_sin", rot, sin))
}

// ropeInvFreq is the rotary embedding's inverse frequencies for head
// size d at base theta: 1 / theta^(2i/d) for i < d/2 in float32, as
// torch computes 1.0 / (base ** (torch.arange(0, d, 2).float() / d)).
func ropeInvFreq(d int, theta float64) []float32 {
	inv := make([]float32, d/2)
	for i := range inv {
		e := float32(2*i) / float32(d)
		inv[i] = 1 / float32(math.Pow(float64(float32(theta)), float64(e)))
	}
	return inv
}

// modernBertRotaryTables is ModernBertRotaryEmbedding at base theta.
func (b *builder) modernBertRotaryTables(scope string, theta float64) [2]string {
	return b.rotaryTables(scope, ropeInvFreq(b.cfg.HeadSize(), theta))
}

// rotaryTables is the rotary embedding of inverse frequencies invFreq for
// positions 0..seq-1: freqs = positions ⊗ inv_freq, emb = cat(freqs,
// freqs), and its cos and sin, [1, seq, d] each.
func (b *builder) rotaryTables(scope string, invFreq []float32) [2]string {
	inv := compiler.NewTensor(compiler.Float32, int64(len(invFreq)))
	copy(inv.F32, invFreq)
	name := scope + ".inv_freq"
	b.G.Initializers[name] = inv
	positions := b.CastFloat(b.positions(scope), scope+"/positions_f32")
	freqs := b.Op("Mul", scope+"/freqs", b.Op("Unsqueeze", scope+"/position_column", positions, b.Ints("const.i64.[1]", 1)), name)
	emb := b.OpAttrs("Concat", scope+"/emb", map[string]compiler.Attr{"axis": compiler.IntAttr(-1)}, freqs, freqs)
	table := func(op string) string {
		return b.Op("Unsqueeze", scope+"/"+op+"_table", b.Op(op, scope+"/"+op, emb), b.Ints("const.i64.[0]", 0))
	}
	return [2]string{table("Cos"), table("Sin")}
}

// modernBertWindow is _update_attention_mask's sliding_window_mask: the
// padding mask (mask, [batch, 1, 1, seq]) with float32's lowest wherever
// |i - j| > half, [batch, 1, seq, seq].
func (b *builder) modernBertWindow(mask, scope string, half int) string {
	rows := b.Op("Unsqueeze", scope+"/rows", b.positions(scope), b.Ints("const.i64.[0]", 0))
	cols := b.OpAttrs("Transpose", scope+"/columns", map[string]compiler.Attr{"perm": compiler.IntsAttr(1, 0)}, rows)
	distance := b.Op("Abs", scope+"/distance", b.Op("Sub", scope+"/offset", rows, cols))
	inside := b.Op("LessOrEqual", scope+"/inside", distance, b.IntScalar("const.i64.half_window."+strconv.Itoa(half), int64(half)))
	outside := b.Op("Not", scope+"/outside", b.Op("Unsqueeze", scope+"/inside_4d", inside, b.Ints("const.i64.[0,1]", 0, 1)))
	return b.Op("Where", scope+"/masked", outside, b.Scalar("const.f32_min", float32Min), mask)
}

// positions is Range(0, seq) of the input ids' sequence length, i64
// [seq]: the position ids transformers makes with torch.arange.
func (b *builder) positions(scope string) string {
	shape := b.Op("Shape", scope+"/ids_shape", inInputIDs)
	seqLen := b.OpAttrs("Gather", scope+"/seq_len", map[string]compiler.Attr{"axis": compiler.IntAttr(0)}, shape, b.IntScalar("const.i64.1", 1))
	return b.Op("Range", scope+"/positions", b.IntScalar("const.i64.0", 0), seqLen, b.IntScalar("const.i64.1", 1))
}

// meanOverTokens is ModernBertForSequenceClassification's mean pooling:
// (x · mask[..., None]).sum(1) / mask.sum(1, keepdim=True).
func (b *builder) meanOverTokens(x, scope string) string {
	m := b.CastFloat(inAttentionMask, scope+"/mask_f32")
	axis := b.Ints("const.i64.[1]", 1)
	sum := b.OpAttrs("ReduceSum", scope+"/sum", map[string]compiler.Attr{"keepdims": compiler.IntAttr(0)},
		b.Op("Mul", scope+"/masked", x, b.Op("Unsqueeze", scope+"/mask_column", m, b.Ints("const.i64.[-1]", -1))), axis)
	count := b.OpAttrs("ReduceSum", scope+"/count", map[string]compiler.Attr{"keepdims": compiler.IntAttr(1)}, m, axis)
	return b.Op("Div", scope+"/mean", sum, count)
}

// activationNamed applies the ACT2FN activation name (one Validate
// accepts).
func (b *builder) activationNamed(x, scope, name string) string {
	switch name {
	case ActRELU:
		return b.Op("Relu", scope+"/Relu", x)
	case ActGELUNew, ActGELUTanh:
		return b.GeluTanh(x, scope)
	case ActSILU, ActSwish:
		return b.Silu(x, scope)
	default:
		return b.GeluErf(x, scope)
	}
}

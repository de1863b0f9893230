"""Tiny random-weight DeBERTa models (config.json, model.safetensors
and the ONNX export) for sqc's tests: transformers' DebertaV2Model and
DebertaV2ForSequenceClassification (model_type "deberta-v2"), written after
modeling_deberta_v2.py of transformers 4.46 (eval mode):

  - word (+ absolute position where position_biased_input, + token type)
    embeddings, embed_proj where embedding_size differs, LayerNorm, times
    the mask;
  - the relative embeddings (LayerNorm'd where norm_rel_ebd says so) and
    build_relative_position's i - j, log-bucketed beyond position_buckets/2
    (make_log_bucket_position) where position_buckets > 0;
  - DisentangledSelfAttention: Q·Kᵀ / s plus c2p (Q · the key projection
    of the relative embeddings, gathered at clamp(r + span)) / s plus p2c
    (K · their query projection, gathered at clamp(span - r), transposed)
    / s, s = √(d · (1 + terms)); padded queries and keys masked with
    float32's lowest, softmax, ·V; BERT's output dense, residual and
    LayerNorm, its FFN;
  - DebertaV2ForSequenceClassification: the encoder under "deberta.", the
    ContextPooler (dense + pooler_hidden_act on the first token), the
    classifier.

DeBERTa v1 (model_type "deberta": DebertaModel, DebertaForSequenceClassification)
after modeling_deberta.py: in_proj without bias giving each head's q, k
and v, q_bias and v_bias, Q (and the position query projection) divided
by s before the products, pos_proj (no bias) and pos_q_proj, the relative
table sliced to min(seq, max_relative_positions) around its middle, XSoftmax
(exported as transformers' symbolic writes it), DebertaLayerNorm, position
ids from the position_ids buffer.

Rows of padding are what transformers computes (the mask applies to
queries too, and to the embeddings); sqc's tests compare real tokens.
Run with the same arguments as make_models.py:

    /usr/bin/python3 internal/testmodels/gen/make_deberta.py [--out DIR]
"""

import math

import torch
from torch import nn

import make_models
import tinyexport

ACT = {"gelu": nn.functional.gelu, "relu": torch.relu,
       "gelu_new": lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))}


def pos_att_types(c):
    t = c.get("pos_att_type") or []
    if isinstance(t, str):
        t = [x.strip() for x in t.lower().split("|")]
    return t


def span_of(c):
    max_rel = c.get("max_relative_positions", -1)
    if max_rel < 1:
        max_rel = c["max_position_embeddings"]
    buckets = c.get("position_buckets", -1)
    return (buckets if buckets > 0 else max_rel), buckets, max_rel


def make_log_bucket_position(relative_pos, bucket_size, max_position):
    sign = torch.sign(relative_pos)
    mid = bucket_size // 2
    abs_pos = torch.where((relative_pos < mid) & (relative_pos > -mid), torch.tensor(mid - 1).type_as(relative_pos),
                          torch.abs(relative_pos))
    log_pos = torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((max_position - 1) / mid)) * (mid - 1)) + mid
    return torch.where(abs_pos <= mid, relative_pos.type_as(log_pos), log_pos * sign)


def build_relative_position(query_layer, key_layer, bucket_size, max_position):
    q_ids = torch.arange(0, query_layer.size(-2))
    k_ids = torch.arange(0, key_layer.size(-2))
    rel = q_ids[:, None] - k_ids[None, :]
    if bucket_size > 0 and max_position > 0:
        rel = make_log_bucket_position(rel, bucket_size, max_position)
    return rel.to(torch.long)[: query_layer.size(-2), :].unsqueeze(0)


def build_relative_position_v1(size):
    """modeling_deberta.py's build_relative_position: i - j by a repeat
    (no buckets in v1), [1, size, size]."""
    q_ids = torch.arange(size, dtype=torch.long)
    k_ids = torch.arange(size, dtype=torch.long)
    rel = q_ids[:, None] - k_ids.view(1, -1).repeat(size, 1)
    return rel[:size, :].unsqueeze(0)


class V1LayerNorm(nn.Module):
    """DebertaLayerNorm (v1): mean and variance over the last axis in
    float32, eps inside the square root, then weight and bias."""

    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.bias = nn.Parameter(torch.zeros(size))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = (x - mean).pow(2).mean(-1, keepdim=True)
        return self.weight * ((x - mean) / torch.sqrt(var + self.eps)) + self.bias


def LayerNorm(c):
    if c["model_type"] == "deberta":
        return V1LayerNorm(c["hidden_size"], c["layer_norm_eps"])
    return nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        e = c.get("embedding_size", c["hidden_size"])
        self.word_embeddings = nn.Embedding(c["vocab_size"], e)
        self.biased = c["position_biased_input"]
        if self.biased:
            self.position_embeddings = nn.Embedding(c["max_position_embeddings"], e)
        if c["type_vocab_size"] > 0:
            self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], e)
        if e != c["hidden_size"]:
            self.embed_proj = nn.Linear(e, c["hidden_size"], bias=False)
        self.LayerNorm = LayerNorm(c)
        if c["model_type"] == "deberta":
            # v1's position ids: a buffer sliced to the sequence (v2 here
            # takes arange(seq), the other form exports take).
            self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"]).expand((1, -1)), persistent=False)

    def forward(self, ids, mask, types=None):
        x = self.word_embeddings(ids)
        if self.biased and hasattr(self, "position_ids"):
            x = x + self.position_embeddings(self.position_ids[:, :ids.shape[1]])
        elif self.biased:
            x = x + self.position_embeddings(torch.arange(ids.shape[1]).unsqueeze(0))
        if types is not None:
            x = x + self.token_type_embeddings(types)
        if hasattr(self, "embed_proj"):
            x = self.embed_proj(x)
        x = self.LayerNorm(x)
        return x * mask.unsqueeze(2).to(x.dtype)


class SelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.heads = c["num_attention_heads"]
        self.query_proj, self.key_proj, self.value_proj = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.share = c.get("share_att_key", False)
        self.types = pos_att_types(c)
        self.relative = c.get("relative_attention", False)
        self.span, _, _ = span_of(c)
        if self.relative and not self.share:
            if "c2p" in self.types:
                self.pos_key_proj = nn.Linear(h, h)
            if "p2c" in self.types:
                self.pos_query_proj = nn.Linear(h, h)

    def split(self, x):
        b, s, _ = x.shape
        x = x.view(b, s, self.heads, -1)
        return x.permute(0, 2, 1, 3).contiguous().view(-1, s, x.size(-1))

    def forward(self, x, mask, rel_pos, rel_emb):
        q, k, v = self.split(self.query_proj(x)), self.split(self.key_proj(x)), self.split(self.value_proj(x))
        factor = 1 + (len(self.types) if self.relative else 0)
        scale = torch.sqrt(torch.tensor(q.size(-1), dtype=torch.float) * factor)
        scores = torch.bmm(q, k.transpose(-1, -2) / scale.to(dtype=q.dtype))
        if self.relative and self.types:
            scores = scores + self.relative_terms(q, k, rel_pos, rel_emb, factor)
        scores = scores.view(-1, self.heads, scores.size(-2), scores.size(-1))
        scores = scores.masked_fill(~mask.bool(), torch.finfo(q.dtype).min)
        probs = nn.functional.softmax(scores, dim=-1)
        ctx = torch.bmm(probs.view(-1, probs.size(-2), probs.size(-1)), v)
        ctx = ctx.view(-1, self.heads, ctx.size(-2), ctx.size(-1)).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size(0), ctx.size(1), -1)

    def relative_terms(self, q, k, rel_pos, rel_emb, factor):
        span = self.span
        rel_pos = rel_pos.unsqueeze(1)  # [1, 1, q, k]
        rel_emb = rel_emb[0: span * 2, :].unsqueeze(0)
        reps = q.size(0) // self.heads
        if self.share:
            pos_q = self.split(self.query_proj(rel_emb)).repeat(reps, 1, 1)
            pos_k = self.split(self.key_proj(rel_emb)).repeat(reps, 1, 1)
        else:
            pos_k = self.split(self.pos_key_proj(rel_emb)).repeat(reps, 1, 1) if "c2p" in self.types else None
            pos_q = self.split(self.pos_query_proj(rel_emb)).repeat(reps, 1, 1) if "p2c" in self.types else None
        score = 0
        if "c2p" in self.types:
            scale = torch.sqrt(torch.tensor(pos_k.size(-1), dtype=torch.float) * factor)
            c2p = torch.bmm(q, pos_k.transpose(-1, -2))
            c2p_pos = torch.clamp(rel_pos + span, 0, span * 2 - 1)
            c2p = torch.gather(c2p, dim=-1, index=c2p_pos.squeeze(0).expand([q.size(0), q.size(1), rel_pos.size(-1)]))
            score += c2p / scale.to(dtype=c2p.dtype)
        if "p2c" in self.types:
            scale = torch.sqrt(torch.tensor(pos_q.size(-1), dtype=torch.float) * factor)
            p2c_pos = torch.clamp(-rel_pos + span, 0, span * 2 - 1)
            p2c = torch.bmm(k, pos_q.transpose(-1, -2))
            p2c = torch.gather(p2c, dim=-1, index=p2c_pos.squeeze(0).expand([q.size(0), k.size(-2), k.size(-2)])).transpose(-1, -2)
            score += p2c / scale.to(dtype=p2c.dtype)
        return score


class XSoftmax(torch.autograd.Function):
    """v1's masked softmax: masked pairs filled with float32's lowest, the
    softmax, masked pairs zeroed; exported as transformers' symbolic
    writes it (the mask as 1 - mask, cast to u8, masked_fill both times)."""

    @staticmethod
    def forward(ctx, x, mask, dim):
        rmask = ~(mask.to(torch.bool))
        out = torch.softmax(x.masked_fill(rmask, torch.finfo(x.dtype).min), dim)
        return out.masked_fill(rmask, 0)

    @staticmethod
    def symbolic(g, x, mask, dim):
        from torch.onnx.symbolic_opset9 import masked_fill, softmax
        r_mask = g.op("Cast", g.op("Sub", g.op("Constant", value_t=torch.tensor(1, dtype=torch.int64)), g.op("Cast", mask, to_i=7)), to_i=2)
        out = masked_fill(g, x, r_mask, g.op("Constant", value_t=torch.tensor(torch.finfo(torch.float32).min)))
        out = softmax(g, out, dim)
        return masked_fill(g, out, r_mask, g.op("Constant", value_t=torch.tensor(0, dtype=torch.uint8)))


class V1SelfAttention(nn.Module):
    """DeBERTa v1's DisentangledSelfAttention: in_proj (no bias) per head
    q, k, v; q_bias and v_bias; Q divided by s before Q·Kᵀ and c2p, the
    position query projection before p2c; pos_proj (no bias) and
    pos_q_proj; the table sliced to att_span = min(seq, max_rel) around its
    middle; XSoftmax."""

    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.heads = c["num_attention_heads"]
        self.in_proj = nn.Linear(h, 3 * h, bias=False)
        self.q_bias = nn.Parameter(torch.zeros(h))
        self.v_bias = nn.Parameter(torch.zeros(h))
        self.types = pos_att_types(c)
        self.relative = c.get("relative_attention", False)
        _, _, self.max_rel = span_of(c)
        if self.relative:
            if "c2p" in self.types:
                self.pos_proj = nn.Linear(h, h, bias=False)
            if "p2c" in self.types:
                self.pos_q_proj = nn.Linear(h, h)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, -1).permute(0, 2, 1, 3)

    def forward(self, x, mask, rel_pos, rel_emb):
        q, k, v = self.split(self.in_proj(x)).chunk(3, dim=-1)
        q = q + self.split(self.q_bias[None, None, :])
        v = v + self.split(self.v_bias[None, None, :])
        factor = 1 + (len(self.types) if self.relative else 0)
        scale = torch.sqrt(torch.tensor(q.size(-1), dtype=torch.float) * factor)
        q = q / scale
        scores = torch.matmul(q, k.transpose(-1, -2))
        if self.relative and self.types:
            scores = scores + self.relative_terms(q, k, rel_pos, rel_emb, factor)
        probs = XSoftmax.apply(scores, mask, -1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size(0), ctx.size(1), -1)

    def relative_terms(self, q, k, rel_pos, rel_emb, factor):
        rel_pos = rel_pos.unsqueeze(1)  # [1, 1, q, k]
        span = min(max(q.size(-2), k.size(-2)), self.max_rel)
        rel_emb = rel_emb[self.max_rel - span: self.max_rel + span, :].unsqueeze(0)
        score = 0
        if "c2p" in self.types:
            pos_k = self.split(self.pos_proj(rel_emb))
            c2p = torch.matmul(q, pos_k.transpose(-1, -2))
            c2p_pos = torch.clamp(rel_pos + span, 0, span * 2 - 1)
            score += torch.gather(c2p, dim=-1, index=c2p_pos.expand([q.size(0), q.size(1), q.size(2), rel_pos.size(-1)]))
        if "p2c" in self.types:
            pos_q = self.split(self.pos_q_proj(rel_emb))
            pos_q = pos_q / torch.sqrt(torch.tensor(pos_q.size(-1), dtype=torch.float) * factor)
            p2c_pos = torch.clamp(-rel_pos + span, 0, span * 2 - 1)
            p2c = torch.matmul(k, pos_q.transpose(-1, -2))
            score += torch.gather(p2c, dim=-1, index=p2c_pos.expand([q.size(0), q.size(1), k.size(-2), k.size(-2)])).transpose(-1, -2)
        return score


class Dense(nn.Module):
    """DebertaV2SelfOutput and DebertaV2Output: dense, residual, LayerNorm."""

    def __init__(self, c, width):
        super().__init__()
        self.dense = nn.Linear(width, c["hidden_size"])
        self.LayerNorm = LayerNorm(c)

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = V1SelfAttention(c) if c["model_type"] == "deberta" else SelfAttention(c)
        self.output = Dense(c, c["hidden_size"])


class Intermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.act = ACT[c["hidden_act"]]


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.intermediate = Intermediate(c)
        self.output = Dense(c, c["intermediate_size"])

    def forward(self, x, mask, rel_pos, rel_emb):
        a = self.attention.output(self.attention.self(x, mask, rel_pos, rel_emb), x)
        return self.output(self.intermediate.act(self.intermediate.dense(a)), a)


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])
        self.relative = c.get("relative_attention", False)
        self.v1 = c["model_type"] == "deberta"
        self.span, self.buckets, self.max_rel = span_of(c)
        if self.relative:
            self.rel_embeddings = nn.Embedding(2 * self.span, c["hidden_size"])
        self.norm_rel = "layer_norm" in [x.strip() for x in c.get("norm_rel_ebd", "none").lower().split("|")]
        if self.norm_rel:
            self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"], elementwise_affine=True)

    def forward(self, x, attention_mask):
        ext = attention_mask.unsqueeze(1).unsqueeze(2)
        mask = (ext * ext.squeeze(-2).unsqueeze(-1)).byte()
        rel_pos = None
        if self.relative and self.v1:
            rel_pos = build_relative_position_v1(x.size(-2))
        elif self.relative:
            rel_pos = build_relative_position(x, x, self.buckets, self.max_rel)
        rel_emb = None
        if self.relative:
            rel_emb = self.rel_embeddings.weight
            if self.norm_rel:
                rel_emb = self.LayerNorm(rel_emb)
        for layer in self.layer:
            x = layer(x, mask, rel_pos, rel_emb)
        return x


class Model(nn.Module):
    """DebertaV2Model (last_hidden_state)."""

    def __init__(self, c):
        super().__init__()
        self.types = c["type_vocab_size"] > 0
        self.embeddings = Embeddings(c)
        self.encoder = Encoder(c)

    def forward(self, ids, am, types=None):
        return self.encoder(self.embeddings(ids, am, types), am)


class Pooler(nn.Module):
    """ContextPooler."""

    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["pooler_hidden_size"], c["pooler_hidden_size"])
        self.act = ACT[c["pooler_hidden_act"]]

    def forward(self, x):
        return self.act(self.dense(x[:, 0]))


class Cls(nn.Module):
    """DebertaV2ForSequenceClassification."""

    def __init__(self, c):
        super().__init__()
        self.types = c["type_vocab_size"] > 0
        self.deberta = Model(c)
        self.pooler = Pooler(c)
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, ids, am, types=None):
        return self.classifier(self.pooler(self.deberta(ids, am, types)))


def deberta_config(arch, vocab, hidden, layers, heads, inter, act, positions, types, **extra):
    """deberta-v3-base's config.json at another size, with extra keys
    overriding (num_labels: a classifier's label count)."""
    num_labels = extra.pop("num_labels", 3)
    c = {
        "architectures": [arch], "attention_probs_dropout_prob": 0.1, "hidden_act": act, "hidden_dropout_prob": 0.1,
        "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter, "layer_norm_eps": 1e-7,
        "max_position_embeddings": positions, "max_relative_positions": -1, "model_type": "deberta-v2",
        "norm_rel_ebd": "layer_norm", "num_attention_heads": heads, "num_hidden_layers": layers, "pad_token_id": 0,
        "pooler_dropout": 0, "pooler_hidden_act": "gelu", "pooler_hidden_size": hidden, "pos_att_type": ["p2c", "c2p"],
        "position_biased_input": False, "position_buckets": 256, "relative_attention": True, "share_att_key": True,
        "torch_dtype": "float32", "transformers_version": make_models.TRANSFORMERS_VERSION, "type_vocab_size": types,
        "vocab_size": vocab,
    }
    c.update(extra)
    if arch.endswith("ForSequenceClassification"):
        id2label, label2id = make_models.labels(num_labels)
        c.update({"id2label": id2label, "label2id": label2id})
    return c


def deberta_v1_config(arch, vocab, hidden, layers, heads, inter, act, positions, types, **extra):
    """microsoft/deberta-base's config.json (DebertaConfig: model_type
    "deberta") at another size, with extra keys overriding."""
    num_labels = extra.pop("num_labels", 3)
    c = {
        "architectures": [arch], "attention_probs_dropout_prob": 0.1, "hidden_act": act, "hidden_dropout_prob": 0.1,
        "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter, "layer_norm_eps": 1e-7,
        "max_position_embeddings": positions, "max_relative_positions": -1, "model_type": "deberta",
        "num_attention_heads": heads, "num_hidden_layers": layers, "pad_token_id": 0, "pooler_dropout": 0,
        "pooler_hidden_act": "gelu", "pooler_hidden_size": hidden, "pos_att_type": "c2p|p2c", "position_biased_input": False,
        "relative_attention": True, "torch_dtype": "float32", "transformers_version": make_models.TRANSFORMERS_VERSION,
        "type_vocab_size": types, "vocab_size": vocab,
    }
    c.update(extra)
    if arch.endswith("ForSequenceClassification"):
        id2label, label2id = make_models.labels(num_labels)
        c.update({"id2label": id2label, "label2id": label2id})
    return c


TINY = [
    # deberta-v3's form: log buckets (8: distances beyond 4 share buckets),
    # shared keys, normed relative embeddings, no absolute positions, no
    # token types; opset 14.
    ("deberta-v3-base", deberta_config("DebertaV2Model", 140, 32, 2, 4, 64, "gelu", 64, 0, position_buckets=8), 14),
    # The other settings: no buckets, a span of 6 (longer distances
    # clamp), pos_key_proj and pos_query_proj, pos_att_type as a "|"
    # string with p2c first, absolute positions, two token types,
    # embed_proj from 24-wide tables, gelu_new, 3 labels; opset 17.
    ("deberta-cls-v2", deberta_config("DebertaV2ForSequenceClassification", 140, 32, 2, 4, 48, "gelu_new", 64, 2,
                                      position_buckets=-1, max_relative_positions=6, share_att_key=False,
                                      pos_att_type="p2c|c2p", norm_rel_ebd="none", position_biased_input=True,
                                      embedding_size=24, pooler_hidden_act="gelu_new", num_labels=3), 17),
    # c2p alone (a lone term), its own pos_key_proj, 16 buckets; a
    # one-label classifier (a reranker's head); opset 12, the default of
    # transformers' and optimum's DeBERTa-v2 ONNX configs (axes as
    # attributes).
    ("deberta-rerank-c2p", deberta_config("DebertaV2ForSequenceClassification", 140, 32, 2, 2, 64, "gelu", 64, 0,
                                          position_buckets=16, pos_att_type=["c2p"], share_att_key=False, num_labels=1), 12),
    # No relative attention: BERT's attention scaled by 1/sqrt(d), absolute
    # positions, relu; opset 14.
    ("deberta-abs", deberta_config("DebertaV2Model", 140, 32, 2, 4, 64, "relu", 64, 0, relative_attention=False,
                                   position_biased_input=True, pos_att_type=None), 14),
    # DeBERTa v1 (model_type "deberta"), deberta-base's form: in_proj, c2p
    # and p2c over the whole span (max_relative_positions -1: 64, beyond
    # any test sequence), no absolute positions; opset 14.
    ("deberta-v1-base", deberta_v1_config("DebertaModel", 140, 32, 2, 4, 64, "gelu", 64, 0), 14),
    # A v1 classifier (deberta-large-mnli's head): p2c alone, distances
    # clamped at 6, absolute positions from the position_ids buffer, two
    # token types, 3 labels; opset 12.
    ("deberta-v1-cls", deberta_v1_config("DebertaForSequenceClassification", 140, 32, 2, 4, 48, "gelu", 64, 2,
                                         max_relative_positions=6, pos_att_type="p2c", position_biased_input=True), 12),
]


def published():
    """deberta-v3-base's and deberta-base's (v1) shapes (random weights,
    ONNX only): for benchmarks against ONNX Runtime."""
    c = deberta_config("DebertaV2Model", 128100, 768, 12, 12, 3072, "gelu", 512, 0)
    v1 = deberta_v1_config("DebertaModel", 50265, 768, 12, 12, 3072, "gelu", 512, 0)
    return [("deberta-v3-base-random", c, 14), ("deberta-base-random", v1, 14)]


def build(name, c, opset, out_dir, seed, lengths, published=False):
    torch.manual_seed(seed)
    model = (Cls if c["architectures"][0].endswith("ForSequenceClassification") else Model)(c)
    make_models.randomize(model, seed)
    model.eval()
    batch = make_models.make_batch(c, seed + 1, lengths)
    names = tinyexport.input_names(batch, lengths, model.types)
    oname = "logits" if isinstance(model, Cls) else "last_hidden_state"
    tinyexport.write(out_dir, name, c, model, batch, names, [oname], opset, published)


def main():
    tinyexport.main(__doc__, TINY, published, build, 9500, "deberta-v3-base's shapes")


if __name__ == "__main__":
    main()

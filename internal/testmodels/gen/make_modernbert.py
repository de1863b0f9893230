"""Tiny random-weight ModernBERT models (config.json, model.safetensors and
the ONNX export), after
transformers' modeling_modernbert.py (eager attention), for sqc's tests:
pre-norm layers without biases, a fused Wqkv split per head, rotary
position embeddings (global and local theta) on Q and K, sliding-window
attention on every layer but each third's, a GLU feed-forward (GELU of one
half of Wi times the other), a final norm and, for the classifier, mean
pooling, a dense + GELU + LayerNorm head and the classifier.

torch here is 1.13: nn.LayerNorm has no bias=False, so LN uses
F.layer_norm with its weight only, as transformers' LayerNorm(bias=False)
does; F.scaled_dot_product_attention does not exist, so attention is the
eager form; the window mask's logical_not is written ~ (both export as
Not). Run with the same arguments as make_models.py:

    /usr/bin/python3 internal/testmodels/gen/make_modernbert.py [--out DIR]
"""

import os

import torch
import torch.nn.functional as F
from torch import nn

import make_models
import tinyexport


class LN(nn.Module):
    def __init__(s, n, eps, bias):
        super().__init__(); s.eps=eps; s.n=n
        s.weight = nn.Parameter(torch.ones(n))
        s.bias = nn.Parameter(torch.zeros(n)) if bias else None
    def forward(s, x): return F.layer_norm(x, (s.n,), s.weight, s.bias, s.eps)

def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

class Rotary(nn.Module):
    def __init__(s, dim, base):
        super().__init__()
        s.register_buffer("inv_freq", 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)), persistent=False)
    def forward(s, x, position_ids):
        inv = s.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        pos = position_ids[:, None, :].float()
        freqs = (inv @ pos).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

class Attn(nn.Module):
    def __init__(s, c, i):
        super().__init__()
        s.h = c["num_attention_heads"]; s.d = c["hidden_size"] // s.h; s.dim = c["hidden_size"]
        s.Wqkv = nn.Linear(s.dim, 3 * s.dim, bias=c["attention_bias"])
        s.Wo = nn.Linear(s.dim, s.dim, bias=c["attention_bias"])
        s.local = i % c["global_attn_every_n_layers"] != 0
    def forward(s, x, mask, swmask, cos, sin):
        bs = x.shape[0]
        qkv = s.Wqkv(x).view(bs, -1, 3, s.h, s.d)
        q, k, v = qkv.transpose(3, 1).unbind(dim=2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        w = torch.matmul(q, k.transpose(2, 3)) * (s.d ** -0.5)
        w = w + (swmask if s.local else mask)
        w = F.softmax(w, dim=-1, dtype=torch.float32)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().view(bs, -1, s.dim)
        return s.Wo(o)

class MLP(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.Wi = nn.Linear(c["hidden_size"], 2 * c["intermediate_size"], bias=c["mlp_bias"])
        s.act = make_models.ACT2FN[c["hidden_activation"]]()
        s.Wo = nn.Linear(c["intermediate_size"], c["hidden_size"], bias=c["mlp_bias"])
    def forward(s, x):
        a, g = s.Wi(x).chunk(2, dim=-1)
        return s.Wo(s.act(a) * g)

class Layer(nn.Module):
    def __init__(s, c, i):
        super().__init__()
        s.attn_norm = nn.Identity() if i == 0 else LN(c["hidden_size"], c["norm_eps"], c["norm_bias"])
        s.attn = Attn(c, i)
        s.mlp_norm = LN(c["hidden_size"], c["norm_eps"], c["norm_bias"])
        s.mlp = MLP(c)
    def forward(s, x, mask, sw, cos, sin):
        x = x + s.attn(s.attn_norm(x), mask, sw, cos, sin)
        return x + s.mlp(s.mlp_norm(x))

class Emb(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.tok_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c["pad_token_id"])
        s.norm = LN(c["hidden_size"], c["norm_eps"], c["norm_bias"])
    def forward(s, ids): return s.norm(s.tok_embeddings(ids))

class Model(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.c = c
        s.embeddings = Emb(c)
        s.layers = nn.ModuleList([Layer(c, i) for i in range(c["num_hidden_layers"])])
        s.final_norm = LN(c["hidden_size"], c["norm_eps"], c["norm_bias"])
        d = c["hidden_size"] // c["num_attention_heads"]
        s.rot_g = Rotary(d, c["global_rope_theta"]); s.rot_l = Rotary(d, c["local_rope_theta"])
    def forward(s, ids, am):
        seq = ids.shape[1]
        pos = torch.arange(seq).unsqueeze(0)
        m = (1.0 - am[:, None, None, :].float()) * torch.finfo(torch.float32).min
        m = m.expand(ids.shape[0], 1, seq, seq)
        rows = torch.arange(seq).unsqueeze(0)
        dist = torch.abs(rows - rows.T)
        win = (dist <= s.c["local_attention"] // 2).unsqueeze(0).unsqueeze(0)
        sw = m.masked_fill(~win, torch.finfo(torch.float32).min)
        x = s.embeddings(ids)
        cg, sg = s.rot_g(x, pos); cl, sl = s.rot_l(x, pos)
        for i, l in enumerate(s.layers):
            loc = l.attn.local
            x = l(x, m, sw, cl if loc else cg, sl if loc else sg)
        return s.final_norm(x)

class Head(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.dense = nn.Linear(c["hidden_size"], c["hidden_size"], bias=c["classifier_bias"])
        s.act = make_models.ACT2FN[c["classifier_activation"]]()
        s.norm = LN(c["hidden_size"], c["norm_eps"], c["norm_bias"])
    def forward(s, x): return s.norm(s.act(s.dense(x)))

class Cls(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.c = c; s.model = Model(c); s.head = Head(c); s.classifier = nn.Linear(c["hidden_size"], c["num_labels"])
    def forward(s, ids, am):
        h = s.model(ids, am)
        if s.c["classifier_pooling"] == "cls": h = h[:, 0]
        else:
            amf = am.unsqueeze(-1).to(h.dtype)
            h = (h * amf).sum(dim=1) / am.sum(dim=1, keepdim=True)
        return s.classifier(s.head(h))



def modernbert_config(arch, vocab, hidden, layers, heads, inter, act, pooling, local, num_labels=2):
    # ModernBertConfig's keys and defaults (norm_bias, attention_bias and
    # mlp_bias False; global_attn_every_n_layers 3; rope thetas 160000 and
    # 10000), small sizes; pad_token_id 0 as make_models' batches pad.
    return dict(architectures=[arch], model_type="modernbert", vocab_size=vocab, hidden_size=hidden,
                num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=inter, hidden_activation=act,
                max_position_embeddings=64, norm_eps=1e-5, norm_bias=False, attention_bias=False, mlp_bias=False,
                classifier_bias=False, classifier_activation=act, classifier_pooling=pooling,
                global_attn_every_n_layers=3, local_attention=local, global_rope_theta=160000.0, local_rope_theta=10000.0,
                pad_token_id=0, num_labels=num_labels, id2label=make_models.labels(num_labels)[0],
                label2id=make_models.labels(num_labels)[1],
                transformers_version=make_models.TRANSFORMERS_VERSION)


# ModernBertModel is Model: its state dict has no "model." prefix, as a
# base checkpoint's; the classifier keeps the encoder under "model.".
CLASSES = {"ModernBertForSequenceClassification": Cls, "ModernBertModel": Model}

# name, config, opset: 4 layers (0 and 3 global, 1 and 2 local), a window
# of 8 (4 each side) so the 16-token row meets it; opset 14 writes the
# LayerNorms out, opset 17 as LayerNormalization.
TINY = [
    ("modernbert-cls-gelu", modernbert_config("ModernBertForSequenceClassification", 140, 64, 4, 4, 96, "gelu", "mean", 8), 17),
    ("modernbert-base-gelutanh", modernbert_config("ModernBertModel", 140, 32, 4, 2, 48, "gelu_pytorch_tanh", "cls", 8), 14),
]


def published():
    # answerdotai/ModernBERT-base's config.json shapes (22 layers, hidden
    # 768, 12 heads, GLU intermediate 1152, window 128), random weights,
    # at opset 14 (ONNX Runtime optimises it at every level; see
    # testmodels.RunORTAt), for benchmarks.
    c = modernbert_config("ModernBertModel", 50368, 768, 22, 12, 1152, "gelu", "mean", 128)
    c["max_position_embeddings"] = 8192
    return [("modernbert-base-random", c, 14)]


def build(name, c, opset, out_dir, seed, lengths, published=False):
    torch.manual_seed(seed)
    model = CLASSES[c["architectures"][0]](c)
    make_models.randomize(model, seed)
    model.eval()
    batch = make_models.make_batch(c, seed + 1, lengths)
    oname = "logits" if c["architectures"][0].endswith("ForSequenceClassification") else "last_hidden_state"
    tinyexport.write(out_dir, name, c, model, batch, ["input_ids", "attention_mask"], [oname], opset, published)


def main():
    tinyexport.main(__doc__, TINY, published, build, 3000, "ModernBERT-base's shapes")


if __name__ == "__main__":
    main()

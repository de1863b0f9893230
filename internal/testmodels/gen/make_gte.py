"""Tiny random-weight GTE models (config.json, model.safetensors and the
ONNX export) for sqc's tests: Alibaba-NLP's "NewModel" (model_type "new",
trust_remote_code Alibaba-NLP/new-impl), the encoder of gte-base-en-v1.5,
gte-large-en-v1.5 and gte-multilingual-base. Written after the hub code's
structure as text-embeddings-inference's gte.rs reads its checkpoints:

  - word (+ token type, when type_vocab_size > 0) embeddings, LayerNorm;
  - rotary position embeddings (rope_theta; with rope_scaling
    {"type": "ntk", "factor": f} the base is theta * f and the inverse
    frequencies are divided by f^(2/d)), cos and sin tables cached for
    max_position_embeddings * f positions and gathered at the positions;
  - post-norm layers: a fused qkv_proj with bias, rotary on Q and K,
    softmax(Q·Kᵀ · d^-0.5 + mask)·V, o_proj, attn_ln(x + attention);
    up_gate_proj (no bias), act(gate) · up of its halves (up first),
    down_proj, mlp_ln(x + mlp).

Eager attention (torch here is 1.13). Run with the same arguments as
make_models.py:

    /usr/bin/python3 internal/testmodels/gen/make_gte.py [--out DIR]
"""


import torch
from torch import nn

import make_models
import make_modernbert
import tinyexport


class Rotary(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"] // c["num_attention_heads"]
        base, size = c["rope_theta"], c["max_position_embeddings"]
        scaling = c.get("rope_scaling")
        if scaling:
            factor = scaling["factor"]
            inv = 1.0 / ((base * factor) ** (torch.arange(0, d, 2).float() / d))
            inv = inv / factor ** (2 / d)
            size = int(size * factor)
        else:
            inv = 1.0 / (base ** (torch.arange(0, d, 2).float() / d))
        t = torch.arange(size, dtype=torch.float32)
        freqs = torch.einsum("i,j->ij", t, inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, position_ids):
        return self.cos_cached[position_ids], self.sin_cached[position_ids]


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.h = c["num_attention_heads"]
        self.d = c["hidden_size"] // self.h
        self.qkv_proj = nn.Linear(c["hidden_size"], 3 * c["hidden_size"])
        self.o_proj = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, x, mask, cos, sin):
        b, s, _ = x.shape
        q, k, v = self.qkv_proj(x).chunk(3, dim=-1)
        q, k, v = (t.view(b, s, self.h, self.d).transpose(1, 2) for t in (q, k, v))
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * cos + make_modernbert.rotate_half(q) * sin
        k = k * cos + make_modernbert.rotate_half(k) * sin
        w = torch.matmul(q, k.transpose(2, 3)) * (self.d ** -0.5)
        w = nn.functional.softmax(w + mask, dim=-1)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, s, -1)
        return self.o_proj(o)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.inter = c["intermediate_size"]
        self.up_gate_proj = nn.Linear(c["hidden_size"], 2 * self.inter, bias=False)
        self.down_proj = nn.Linear(self.inter, c["hidden_size"])
        self.act = make_models.ACT2FN[c["hidden_act"]]()

    def forward(self, x):
        up, gate = self.up_gate_proj(x).chunk(2, dim=-1)
        return self.down_proj(up * self.act(gate))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.mlp = MLP(c)
        self.attn_ln = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.mlp_ln = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x, mask, cos, sin):
        x = self.attn_ln(x + self.attention(x, mask, cos, sin))
        return self.mlp_ln(x + self.mlp(x))


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c["pad_token_id"])
        if c["type_vocab_size"] > 0:
            self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.rotary_emb = Rotary(c)

    def forward(self, ids, types=None):
        x = self.word_embeddings(ids)
        if types is not None:
            x = x + self.token_type_embeddings(types)
        return self.LayerNorm(x)


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.types = c["type_vocab_size"] > 0
        self.embeddings = Embeddings(c)
        self.encoder = Encoder(c)

    def forward(self, ids, am, types=None):
        x = self.embeddings(ids, types)
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        cos, sin = self.embeddings.rotary_emb(pos)
        mask = make_models.extended_attention_mask(am)
        for layer in self.encoder.layer:
            x = layer(x, mask, cos, sin)
        return x


class Pooler(nn.Module):
    """NewPooler: dense + tanh on the first token."""

    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, x):
        return torch.tanh(self.dense(x[:, 0]))


class Cls(nn.Module):
    """NewForSequenceClassification (gte-multilingual-reranker-base): the
    encoder under "new." with its pooler (NewModel(add_pooling_layer=True),
    as BertForSequenceClassification has it), the classifier."""

    def __init__(self, c):
        super().__init__()
        self.types = c["type_vocab_size"] > 0
        self.new = Model(c)
        self.new.pooler = Pooler(c)
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, ids, am, types=None):
        return self.classifier(self.new.pooler(self.new(ids, am, types)))


def gte_config(vocab, hidden, layers, heads, inter, act, max_pos, types, theta, scaling, arch="NewModel", num_labels=0):
    c = make_models.bert_config(arch, vocab, hidden, layers, heads, inter, act, max_pos, num_labels=max(num_labels, 1), model_type="new")
    if not num_labels:
        for k in ("id2label", "label2id"):
            del c[k]
    c.update({"type_vocab_size": types, "position_embedding_type": "rope", "rope_theta": theta, "rope_scaling": scaling,
              "layer_norm_type": "layer_norm", "logn_attention_scale": False, "logn_attention_clip1": False,
              "pack_qkv": True, "unpad_inputs": False, "use_memory_efficient_attention": False,
              "auto_map": {"AutoConfig": "Alibaba-NLP/new-impl--configuration.NewConfig",
                           "AutoModel": "Alibaba-NLP/new-impl--modeling.NewModel"}})
    return c


TINY = [
    # gte-base-en-v1.5's form: no token types, NTK scaling.
    ("gte-base-gelu", gte_config(140, 32, 3, 4, 48, "gelu", 32, 0, 500000.0, {"type": "ntk", "factor": 2.0}), 14),
    # gte-multilingual-base's form: one token type; here no scaling.
    ("gte-types-gelutanh", gte_config(140, 48, 2, 6, 64, "gelu_pytorch_tanh", 64, 1, 10000.0, None), 17),
    # gte-multilingual-reranker-base's form: a one-logit classifier.
    ("gte-cls-gelu", gte_config(140, 32, 2, 4, 48, "gelu", 64, 1, 10000.0, {"type": "ntk", "factor": 4.0},
                                arch="NewForSequenceClassification", num_labels=1), 14),
]


def published():
    """gte-base-en-v1.5's shapes (random weights, ONNX only): for
    benchmarks against ONNX Runtime. The cached rotary tables are cut to
    2048 positions (the model's are 16384, 4 MiB each), which changes no
    value of the first 2048."""
    c = gte_config(30528, 768, 12, 12, 3072, "gelu", 1024, 0, 500000.0, {"type": "ntk", "factor": 2.0})
    return [("gte-base-random", c, 14)]


def build(name, c, opset, out_dir, seed, lengths, published=False):
    torch.manual_seed(seed)
    model = (Cls if c["architectures"][0] == "NewForSequenceClassification" else Model)(c)
    make_models.randomize(model, seed)
    model.eval()
    batch = make_models.make_batch(c, seed + 1, lengths)
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if model.types else [])
    if model.types:
        batch["token_type_ids"] = batch["input_ids"] * 0  # one type
    oname = "logits" if isinstance(model, Cls) else "last_hidden_state"
    tinyexport.write(out_dir, name, c, model, batch, names, [oname], opset, published)


def main():
    tinyexport.main(__doc__, TINY, published, build, 7000, "gte-base-en-v1.5's shapes")


if __name__ == "__main__":
    main()

"""Tiny random-weight NomicBERT models (config.json, model.safetensors and
the ONNX export) for sqc's tests: nomic-ai/nomic-bert-2048's NomicBertModel
(model_type "nomic_bert", trust_remote_code), the encoder of
nomic-embed-text-v1 and v1.5. Written after the hub code
(modeling_hf_nomic_bert.py, as nomic-ai/contrastors publishes it):

  - word (+ token type) embeddings, emb_ln; NomicBertModel pads vocab_size
    up to pad_vocab_size_multiple;
  - post-norm blocks: attn.Wqkv (bias if qkv_proj_bias), the rotary
    embedding on Q and K (rotary_emb_base, halves rotated, cos and sin of
    positions x inv_freq), softmax(Q·Kᵀ / √d + mask)·V, attn.out_proj,
    norm1(attention + x);
  - the feed-forward: for "swiglu" and "geglu", NomciBertGatedMLP's
    fc11(x) * act(fc12(x)) (silu, or F.gelu: erf) with its hidden width
    n_inner rounded up to a multiple of 256; for a GELU name, fc1, F.gelu
    (erf, whatever the name), fc2; norm2(mlp + x);
  - NomicBertForSequenceClassification: the encoder under "bert." with its
    pooler (dense + tanh on the first token), the classifier.

The tensor operations are the hub code's, so the export has its form:
the [b, s, three, h, d] projection, the rotary cache computed in the
forward pass (arange, outer, cos, sin), einops' repeat (unsqueeze, expand,
reshape), the rotary embedding on Q and K before the heads are permuted.
Eager attention (torch here is 1.13; torch 2 runs SDPA, the same
formula). Run with the same arguments as make_models.py:

    /usr/bin/python3 internal/testmodels/gen/make_nomic.py [--out DIR]
"""

import torch
from torch import nn
import torch.nn.functional as F

import make_models
import tinyexport


def rotate_half(x):
    """The hub code's rotate_half (not interleaved): cat(-x2, x1)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def repeat_halves(t):
    """einops.repeat(t, "... d -> ... 1 (2 d)") as einops' torch backend
    computes it: two new axes (unsqueeze), expand, reshape."""
    s, d = t.shape
    return t.unsqueeze(1).unsqueeze(2).expand(-1, 1, 2, -1).reshape(s, 1, 2 * d)


def apply_rotary_emb(x, cos, sin, offset=0):
    """The hub code's apply_rotary_emb on x [b, s, h, d] with cos and sin
    [seq, d/2]."""
    ro_dim = cos.shape[-1] * 2
    cos, sin = cos[offset:offset + x.shape[1]], sin[offset:offset + x.shape[1]]
    cos, sin = repeat_halves(cos), repeat_halves(sin)
    return torch.cat([x[..., :ro_dim] * cos + rotate_half(x[..., :ro_dim]) * sin, x[..., ro_dim:]], dim=-1)


class Rotary(nn.Module):
    """NomicBertRotaryEmbedding: its cos and sin cache computed in the
    forward pass (the trace of the first call), applied to Q and K of the
    [b, s, three, h, d] projection."""

    def __init__(self, c):
        super().__init__()
        self.dim = c["n_embd"] // c["n_head"]
        self.base = float(c["rotary_emb_base"])

    def forward(self, qkv):
        seqlen = qkv.shape[1]
        inv = 1.0 / (self.base ** (torch.arange(0, self.dim, 2, dtype=torch.float32) / self.dim))
        freqs = torch.outer(torch.arange(seqlen, dtype=torch.float32), inv)
        cos, sin = torch.cos(freqs), torch.sin(freqs)
        q_rot = apply_rotary_emb(qkv[:, :, 0], cos, sin)
        k_rot = apply_rotary_emb(qkv[:, :, 1], cos, sin)
        return torch.stack((q_rot, k_rot, qkv[:, :, 2]), dim=2)


class Attention(nn.Module):
    """NomicBertAttention's eager path (torch without SDPA)."""

    def __init__(self, c):
        super().__init__()
        self.h = c["n_head"]
        self.d = c["n_embd"] // self.h
        self.Wqkv = nn.Linear(c["n_embd"], 3 * c["n_embd"], bias=c["qkv_proj_bias"])
        self.out_proj = nn.Linear(c["n_embd"], c["n_embd"], bias=c["qkv_proj_bias"])
        self.rotary_emb = Rotary(c)
        self.norm_factor = torch.sqrt(torch.tensor(self.d, dtype=torch.float32))

    def forward(self, x, mask):
        b, s, _ = x.shape
        qkv = self.Wqkv(x).reshape(b, s, 3, self.h, self.d)  # rearrange "... (three h d) -> ... three h d"
        qkv = self.rotary_emb(qkv)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        q, k, v = q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3)
        w = torch.matmul(q, k.transpose(-1, -2)) / self.norm_factor
        w = F.softmax(w + mask, dim=-1)
        o = torch.matmul(w, v).permute(0, 2, 1, 3)
        return self.out_proj(o.reshape(b, s, -1))  # rearrange "... h d -> ... (h d)"


class GatedMLP(nn.Module):
    """NomciBertGatedMLP: fc11(x) * act(fc12(x)), fc2."""

    def __init__(self, c, act):
        super().__init__()
        hidden = (c["n_inner"] + 255) // 256 * 256
        self.fc11 = nn.Linear(c["n_embd"], hidden, bias=c["mlp_fc1_bias"])
        self.fc12 = nn.Linear(c["n_embd"], hidden, bias=c["mlp_fc1_bias"])
        self.fc2 = nn.Linear(hidden, c["n_embd"], bias=c["mlp_fc2_bias"])
        self.act = act

    def forward(self, x):
        return self.fc2(self.fc11(x) * self.act(self.fc12(x)))


class MLP(nn.Module):
    """NomicBertMLP with the block's F.gelu."""

    def __init__(self, c):
        super().__init__()
        self.fc1 = nn.Linear(c["n_embd"], c["n_inner"], bias=c["mlp_fc1_bias"])
        self.fc2 = nn.Linear(c["n_inner"], c["n_embd"], bias=c["mlp_fc2_bias"])

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attn = Attention(c)
        fn = c["activation_function"]
        if fn in ("swiglu", "geglu"):
            self.mlp = GatedMLP(c, F.silu if fn == "swiglu" else F.gelu)
        else:
            self.mlp = MLP(c)
        self.norm1 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.norm2 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])

    def forward(self, x, mask):
        x = self.norm1(self.attn(x, mask) + x)
        return self.norm2(self.mlp(x) + x)


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layers = nn.ModuleList([Block(c) for _ in range(c["n_layer"])])


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["n_embd"])
        if c["type_vocab_size"] > 0:
            self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["n_embd"])

    def forward(self, ids, types=None):
        x = self.word_embeddings(ids)
        if types is not None:
            x = x + self.token_type_embeddings(types)
        return x


class Pooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["n_embd"], c["n_embd"])

    def forward(self, x):
        return torch.tanh(self.dense(x[:, 0]))


class Model(nn.Module):
    """NomicBertModel (last_hidden_state)."""

    def __init__(self, c, pooler=False):
        super().__init__()
        self.types = c["type_vocab_size"] > 0
        self.embeddings = Embeddings(c)
        self.emb_ln = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.encoder = Encoder(c)
        if pooler:
            self.pooler = Pooler(c)

    def forward(self, ids, am, types=None):
        x = self.emb_ln(self.embeddings(ids, types))
        mask = make_models.extended_attention_mask(am)
        for layer in self.encoder.layers:
            x = layer(x, mask)
        return x


class Cls(nn.Module):
    """NomicBertForSequenceClassification: bert (with its pooler), the
    classifier on the pooled output."""

    def __init__(self, c):
        super().__init__()
        self.types = c["type_vocab_size"] > 0
        self.bert = Model(c, pooler=True)
        self.classifier = nn.Linear(c["n_embd"], len(c["id2label"]))

    def forward(self, ids, am, types=None):
        return self.classifier(self.bert.pooler(self.bert(ids, am, types)))


def nomic_config(vocab, hidden, layers, heads, inner, fn, positions, types, base, qkv_bias, fc1_bias, fc2_bias,
                 pad_multiple=1, arch="NomicBertModel", num_labels=0):
    """nomic-embed-text-v1.5's config.json at another size. vocab_size is
    padded up to pad_vocab_size_multiple, as NomicBertModel does before
    save_pretrained writes it."""
    if vocab % pad_multiple:
        vocab += pad_multiple - vocab % pad_multiple
    c = {
        "activation_function": fn, "architectures": [arch], "attn_pdrop": 0.0,
        "auto_map": {"AutoConfig": "nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig",
                     "AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel",
                     "AutoModelForSequenceClassification": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertForSequenceClassification"},
        "bos_token_id": None, "causal": False, "dense_seq_output": True, "embd_pdrop": 0.0, "eos_token_id": None,
        "fused_bias_fc": True, "fused_dropout_add_ln": True, "initializer_range": 0.02, "layer_norm_epsilon": 1e-12,
        "max_trained_positions": 2048, "mlp_fc1_bias": fc1_bias, "mlp_fc2_bias": fc2_bias, "model_type": "nomic_bert",
        "n_embd": hidden, "n_head": heads, "n_inner": inner, "n_layer": layers, "n_positions": positions,
        "pad_vocab_size_multiple": pad_multiple, "parallel_block": False, "parallel_block_tied_norm": False,
        "prenorm": False, "qkv_proj_bias": qkv_bias, "reorder_and_upcast_attn": False, "resid_pdrop": 0.0,
        "rotary_emb_base": base, "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": False,
        "rotary_emb_scale_base": None, "rotary_scaling_factor": None, "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True, "summary_activation": None, "summary_first_dropout": 0.0,
        "summary_proj_to_labels": True, "summary_type": "cls_index", "summary_use_proj": True,
        "torch_dtype": "float32", "transformers_version": make_models.TRANSFORMERS_VERSION,
        "type_vocab_size": types, "use_cache": True, "use_flash_attn": True, "use_rms_norm": False,
        "use_xentropy": True, "vocab_size": vocab,
    }
    if num_labels:
        id2label, label2id = make_models.labels(num_labels)
        c.update({"id2label": id2label, "label2id": label2id})
    return c


TINY = [
    # nomic-embed-text-v1.5's form: SwiGLU, no biases, two token types,
    # rotary base 1000; vocab_size 140 padded to 192.
    ("nomic-base-swiglu", nomic_config(140, 32, 3, 4, 256, "swiglu", 64, 2, 1000, False, False, False, pad_multiple=64), 14),
    # A classifier with every bias, the erf GEGLU and n_inner 200 (the
    # gated MLP rounds it to 256), 3 labels.
    ("nomic-cls-geglu", nomic_config(140, 48, 2, 6, 200, "geglu", 64, 2, 10000, True, True, True,
                                     arch="NomicBertForSequenceClassification", num_labels=3), 17),
    # The ungated feed-forward with a tanh GELU's name (the hub code applies
    # F.gelu, erf, whatever the name) and no token types.
    ("nomic-base-gelunew", nomic_config(140, 32, 2, 4, 64, "gelu_new", 64, 0, 10000, True, False, True), 14),
]


def published():
    """nomic-embed-text-v1.5's shapes (random weights, ONNX only): for
    benchmarks against ONNX Runtime."""
    c = nomic_config(30528, 768, 12, 12, 3072, "swiglu", 8192, 2, 1000, False, False, False, pad_multiple=64)
    return [("nomic-v1.5-random", c, 14)]


def build(name, c, opset, out_dir, seed, lengths, published=False):
    torch.manual_seed(seed)
    model = (Cls if c["architectures"][0] == "NomicBertForSequenceClassification" else Model)(c)
    make_models.randomize(model, seed)
    with torch.no_grad():
        # randomize knows LayerNorms by "LayerNorm" in their names; these
        # are emb_ln, norm1 and norm2: scales around 1, not 0.
        for pname, p in model.named_parameters():
            if pname.endswith(("emb_ln.weight", "norm1.weight", "norm2.weight")):
                p.add_(1.0)
    model.eval()
    batch = make_models.make_batch(c, seed + 1, lengths)
    names = tinyexport.input_names(batch, lengths, model.types)
    oname = "logits" if isinstance(model, Cls) else "last_hidden_state"
    tinyexport.write(out_dir, name, c, model, batch, names, [oname], opset, published)


def main():
    tinyexport.main(__doc__, TINY, published, build, 9000, "nomic-embed-text-v1.5's shapes")


if __name__ == "__main__":
    main()

"""Tiny random-weight JinaBERT models (config.json, model.safetensors and
the ONNX export) for sqc's tests: the encoder of Jina AI's
jina-embeddings-v2 embedders and jina-reranker-v1 rerankers
(trust_remote_code, jinaai/jina-bert-implementation), a BERT with

  - no position embeddings: word + token type embeddings, then LayerNorm;
  - ALiBi: every layer adds -slope(head) * |i - j| to the scores, after
    the padding mask, softmax(scores / sqrt(d) + mask + alibi);
  - a gated feed-forward (mlp.gated_layers without bias, act of its first
    half times its second half, mlp.wo, the residual and mlp.layernorm),
    where act is GELU for feed_forward_type "geglu" and ReLU for "reglu".

The parameter names are those of the published checkpoints, which
text-embeddings-inference's jina.rs also reads. The encoder keeps the
ALiBi tensor as a buffer built once at max_position_embeddings and slices
its top-left corner per call, as the hub code does, so the ONNX export
holds it as a constant Slice'd to the sequence length. Run with the same
arguments as make_models.py:

    /usr/bin/python3 internal/testmodels/gen/make_jinabert.py [--out DIR]
"""

import math

import torch
from torch import nn

import make_models
import tinyexport


def alibi_slopes(n):
    """_get_alibi_head_slopes: a geometric sequence for a power of two
    heads, else the closest power's and every other one of twice that."""
    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: n - closest]


def alibi_tensor(heads, size):
    """rebuild_alibi_tensor: [1, heads, size, size] of -slope * |j - i|."""
    context = torch.arange(size)[:, None]
    memory = torch.arange(size)[None, :]
    relative = torch.abs(memory - context).unsqueeze(0).expand(heads, -1, -1)
    slopes = torch.Tensor(alibi_slopes(heads)) * -1
    return (slopes.unsqueeze(1).unsqueeze(1) * relative).unsqueeze(0)


ALIBI_STARTING_SIZE = 512


class SelfAttention(make_models.BertSelfAttention):
    def __init__(self, c):
        super().__init__(c)
        # nn.Identity has no parameters and exports no node.
        norm = (lambda: nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])) if qk_post_norm(c) else nn.Identity
        self.layer_norm_q, self.layer_norm_k = norm(), norm()

    def forward(self, x, mask, bias):
        q = self.transpose_for_scores(self.layer_norm_q(self.query(x)))
        k = self.transpose_for_scores(self.layer_norm_k(self.key(x)))
        v = self.transpose_for_scores(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        scores = scores + mask
        probs = nn.functional.softmax(scores + bias, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size()[:-2] + (self.all_head_size,))


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = SelfAttention(c)
        self.output = make_models.BertSelfOutput(c)

    def forward(self, x, mask, bias):
        return self.output(self.self(x, mask, bias), x)


class GLUMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.inter = c["intermediate_size"]
        self.gated_layers = nn.Linear(c["hidden_size"], 2 * self.inter, bias=False)
        self.act = {"geglu": nn.GELU, "reglu": nn.ReLU}[c["feed_forward_type"]]()
        self.wo = nn.Linear(self.inter, c["hidden_size"])
        self.layernorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x):
        residual = x
        h = self.gated_layers(x)
        gated, non_gated = h[:, :, : self.inter], h[:, :, self.inter :]
        return self.layernorm(self.wo(self.act(gated) * non_gated) + residual)


class CodeGLUMLP(nn.Module):
    """jina-bert-v2-qk-post-norm's JinaBertGLUMLP: the activation on the
    second half, no residual or norm of its own."""

    def __init__(self, c):
        super().__init__()
        self.inter = c["intermediate_size"]
        self.act = {"geglu": nn.GELU, "reglu": nn.ReLU}[c["feed_forward_type"]]()
        self.up_gated_layer = nn.Linear(c["hidden_size"], 2 * self.inter, bias=False)
        self.down_layer = nn.Linear(self.inter, c["hidden_size"])

    def forward(self, x):
        h = self.up_gated_layer(x)
        up, gated = h[:, :, : self.inter], h[:, :, self.inter :]
        return self.down_layer(up * self.act(gated))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.qk_norm = qk_post_norm(c)
        if self.qk_norm:
            self.layer_norm_1 = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
            self.layer_norm_2 = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
            self.mlp = CodeGLUMLP(c)
        else:
            self.mlp = GLUMLP(c)

    def forward(self, x, mask, bias):
        if not self.qk_norm:
            return self.mlp(self.attention(x, mask, bias))
        # The attention's output norm, then layer_norm_1 of the residual
        # sum again, as the hub code does.
        x = self.layer_norm_1(x + self.attention(x, mask, bias))
        return self.layer_norm_2(x + self.mlp(x))


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])
        # The hub code's alibi_starting_size: 512 positions, rebuilt
        # larger when a longer sequence comes.
        size = min(ALIBI_STARTING_SIZE, c["max_position_embeddings"])
        self.register_buffer("alibi", alibi_tensor(c["num_attention_heads"], size), persistent=False)

    def forward(self, x, mask):
        seqlen = x.size(1)
        bias = self.alibi[:, :, :seqlen, :seqlen]
        for layer in self.layer:
            x = layer(x, mask, bias)
        return x


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c["pad_token_id"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, ids, types):
        return self.LayerNorm(self.word_embeddings(ids) + self.token_type_embeddings(types))


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = Embeddings(c)
        self.encoder = Encoder(c)
        self.pooler = make_models.BertPooler(c)

    def forward(self, ids, am, types):
        hidden = self.encoder(self.embeddings(ids, types), make_models.extended_attention_mask(am))
        return hidden, self.pooler(hidden)


class Cls(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = Model(c)
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, ids, am, types):
        return self.classifier(self.bert(ids, am, types)[1])


CLASSES = {"JinaBertModel": Model, "JinaBertForSequenceClassification": Cls}

QK_POST_NORM = "jinaai/jina-bert-v2-qk-post-norm"


def qk_post_norm(c):
    """jina-embeddings-v2-base-code's code (auto_map names it)."""
    return any(v.startswith(QK_POST_NORM + "--") for v in c["auto_map"].values())


def jina_config(arch, vocab, hidden, layers, heads, inter, ff, max_pos, num_labels=2, code="jinaai/jina-bert-implementation"):
    c = make_models.bert_config(arch, vocab, hidden, layers, heads, inter, "gelu", max_pos, num_labels)
    c.update({"position_embedding_type": "alibi", "feed_forward_type": ff, "emb_pooler": "mean",
              "attn_implementation": None, "model_max_length": max_pos,
              "auto_map": {"AutoConfig": code + "--configuration_bert.JinaBertConfig",
                           "AutoModel": code + "--modeling_bert.JinaBertModel",
                           "AutoModelForSequenceClassification": code + "--modeling_bert.JinaBertForSequenceClassification"}})
    return c


# Four heads take the power-of-two slopes, six the interleaved ones.
TINY = [
    ("jinabert-base-geglu", jina_config("JinaBertModel", 140, 32, 3, 4, 48, "geglu", 64), 14),
    ("jinabert-cls-reglu", jina_config("JinaBertForSequenceClassification", 140, 48, 3, 6, 64, "reglu", 64, 3), 17),
    # jina-embeddings-v2-base-code's variant: LayerNorm on Q and K, a second
    # norm after the attention's, the GLU's activation on its second half.
    ("jinabert-code-geglu", jina_config("JinaBertModel", 140, 32, 3, 4, 48, "geglu", 64, code=QK_POST_NORM), 14),
]


def published():
    """jina-embeddings-v2-base-en's shapes (random weights, ONNX only):
    for benchmarks against ONNX Runtime."""
    c = jina_config("JinaBertModel", 30528, 768, 12, 12, 3072, "geglu", 8192)
    return [("jinabert-v2-base-random", c, 14)]


def build(name, c, opset, out_dir, seed, lengths, published=False):
    torch.manual_seed(seed)
    model = CLASSES[c["architectures"][0]](c)
    make_models.randomize(model, seed)
    model.eval()
    batch = make_models.make_batch(c, seed + 1, lengths)
    tinyexport.write(out_dir, name, c, model, batch, make_models.input_names(c), make_models.output_names(c), opset, published)


def main():
    tinyexport.main(__doc__, TINY, published, build, 5000, "jina-embeddings-v2-base-en's shapes")


if __name__ == "__main__":
    main()
